"""MCP tool servers as tools of the agent.

Modules: :mod:`~bot.mcp.connection` (one supervised client per configured server, stdio or
streamable HTTP, restarted with backoff), :mod:`~bot.mcp.adapter` (remote tools as
``server__tool`` :class:`~bot.tools.spec.ToolSpec` values with policy from config),
:mod:`~bot.mcp.sanitise` (names, descriptions and schemas from a server made safe to show, or
the tool refused), :mod:`~bot.mcp.activation` (deferred activation: ``tool_search`` and
``tool_filter_groups``), :mod:`~bot.mcp.ranking` (how ``tool_search`` ranks) and
:mod:`~bot.mcp.catalog` (all of it behind :class:`bot.agent.turn.DynamicTools`). What a
server sends is read within ``max_result_bytes``: :mod:`~bot.mcp.stdio_transport` (with
:mod:`~bot.mcp.stdio_messages`, :mod:`~bot.mcp.line_framing` and, for stderr,
:mod:`~bot.mcp.server_stderr`), :mod:`~bot.mcp.http_limits` and :mod:`~bot.mcp.reply_limit`.
See ``docs/mcp.md``.

::

    HatchwayError
    ├── ToolEnvironmentError   (bot.tools.spec) the server is down or died mid-call → ENV_ERROR
    ├── McpCallFailed          the server answered with an error → failed execution
    └── UnmatchedReply         (bot.mcp.stdio_messages) a reply over the cap named no call: the
                               session ends and the server is restarted
"""
