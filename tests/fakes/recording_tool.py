"""A side-effecting ``deploy`` tool that records its calls, for approval tests end to end."""

from __future__ import annotations

from collections.abc import Mapping

from bot.tools.spec import ToolContext, ToolSpec


def deploy_tool(ran: list[Mapping[str, object]], *, retry_safe: bool = False) -> ToolSpec:
    """``deploy(version)``: appends its arguments to ``ran`` and answers "deployed v2"
    (``retry_safe``: declared safe to run again)."""

    async def deploy(arguments: Mapping[str, object], context: ToolContext) -> str:
        ran.append(dict(arguments))
        return "deployed v2"

    return ToolSpec(
        name="deploy",
        description="Deploy a version.",
        parameters={
            "type": "object",
            "properties": {"version": {"type": "string"}},
            "required": ["version"],
        },
        handler=deploy,
        retry_safe=retry_safe,
    )
