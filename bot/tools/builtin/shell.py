"""The ``shell`` tool: one command through ``/bin/sh -c`` in the workspace.

Policy defaults: needs approval (``requires_approval=True``), kind ``execute``, never
concurrent, never retried. Before anything runs, the hard deny list
(:mod:`bot.tools.builtin.shell_policy`, reading the command with
:mod:`bot.tools.builtin.shell_syntax`) may refuse it; that refusal stands even when a person
approved the call. The whole process group is killed on timeout and on cancellation
(:mod:`bot.tools.builtin.process_group`).

The child's environment is an allow-list (:func:`.shell_policy.child_environment`): ``PATH``,
``HOME``, locale, ``TZ``, terminal and user variables, ``PWD`` set to the call's workspace, and
what ``tools.shell.env_passthrough`` names. Nothing else of the daemon's environment reaches a
command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import structlog
from pydantic import Field

from bot.config import ShellToolConfig
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, ToolRefused, bounded_text, short
from bot.tools.builtin.process_group import run_command
from bot.tools.builtin.shell_policy import (
    UNPARSEABLE,
    ShellPolicy,
    child_environment,
    secret_passthrough,
)
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

log = structlog.get_logger(__name__)

PIPELINE_TIMEOUT_MARGIN_S = 10.0
"""The pipeline's own timeout for ``shell`` exceeds the command timeout by this much, so the
tool can report partial output itself instead of being cut off."""


class ShellArguments(ToolArguments):
    command: str = Field(min_length=1, max_length=10_000, description="Shell command to run.")


def shell_tool(
    workspace: Workspace,
    cfg: ShellToolConfig,
    *,
    environ: Mapping[str, str] | None = None,
    grace_s: float = 2.0,
) -> ToolSpec:
    """Build ``shell``. Each command gets the allow-listed part of ``environ`` (default: the
    daemon's ``os.environ`` at call time); a bad ``deny_patterns`` regex raises ``ConfigError``
    here, and a secret-looking ``env_passthrough`` entry is logged once as a warning."""
    policy = ShellPolicy.from_patterns(cfg.deny_patterns)
    passthrough = tuple(cfg.env_passthrough)
    exposed = secret_passthrough(passthrough, os.environ if environ is None else environ)
    if exposed:
        # The administrator's explicit choice: honoured, but said once where it is visible.
        log.warning("shell_env_passthrough_secret", variables=exposed)

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(ShellArguments, arguments)
        rule = policy.refusal(args.command)
        if rule is not None:
            log.warning("shell_refused", rule=rule, command=short(bounded_text(args.command, 200)))
            if rule == UNPARSEABLE:
                raise ToolRefused(
                    "the shell deny list cannot parse the command (an unbalanced quote or "
                    "bracket?), so it was not run; fix its syntax and try again"
                )
            raise ToolRefused(f"the command matches the shell deny list ({rule}) and was not run")
        cwd = workspace.for_call(context).real_root()
        env = child_environment(
            os.environ if environ is None else environ, workspace=cwd, passthrough=passthrough
        )
        result = await run_command(
            args.command,
            cwd=cwd,
            env=env,
            timeout_s=cfg.timeout_s,
            max_output_bytes=cfg.max_output_chars,
            grace_s=grace_s,
        )
        output = result.output if result.output.strip() else "(no output)"
        if result.timed_out:
            raise ToolFailed(
                f"timed out after {cfg.timeout_s:g}s; the command and its children were "
                f"killed. Output so far:\n{bounded_text(output, cfg.max_output_chars)}"
            )
        text = f"exit code {result.exit_code}\n{output}"
        return bounded_text(text, cfg.max_output_chars + 200)

    return ToolSpec(
        name="shell",
        description=(
            "Run a shell command (/bin/sh -c) in the workspace directory and return its exit "
            f"code and combined stdout/stderr. Times out after {cfg.timeout_s:g}s; output is "
            "capped; background processes are stopped when the command ends."
        ),
        parameters=schema_of(ShellArguments),
        handler=handler,
        requires_approval=True,
        kind=ToolKind.EXECUTE,
        concurrency_safe=False,
        retry_safe=False,
        timeout_s=cfg.timeout_s + PIPELINE_TIMEOUT_MARGIN_S,
    )
