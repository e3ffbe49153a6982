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

Unless ``tools.shell.sandbox = "none"`` (or ``auto`` where bubblewrap cannot run), every
command runs in the OS sandbox of :mod:`bot.tools.builtin.sandbox`: the filesystem read-only
but for the call's workspace and a private ``/tmp``, the daemon's files hidden, no network
unless the call's channel allows it (``shell_network``, else ``tools.shell.network``; the
approval card then says so), and nothing left running after the call. Both ways, the
resource limits of :mod:`bot.tools.builtin.shell_limits` apply, and a limit that stopped a
command is named on the line after its exit code. A command that exits with a code other
than 0 is a failed call (:class:`~bot.tools.spec.ToolFailure` with the code); a timeout raises.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import structlog
from pydantic import Field

from bot.config import ShellToolConfig
from bot.config.tools import ShellNetwork
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, ToolRefused, bounded_text, short
from bot.tools.builtin.process_group import run_command
from bot.tools.builtin.sandbox import BwrapSandbox, Confinement
from bot.tools.builtin.sandbox_probe import choose_sandbox
from bot.tools.builtin.shell_limits import ShellLimits
from bot.tools.builtin.shell_policy import (
    UNPARSEABLE,
    ShellPolicy,
    child_environment,
    secret_passthrough,
)
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import (
    FailureKind,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolOutput,
    ToolResult,
    ToolSpec,
)

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
    confinement: Confinement | None = None,
    bwrap: str = "bwrap",
) -> ToolSpec:
    """Build ``shell``. Each command gets the allow-listed part of ``environ`` (default: the
    daemon's ``os.environ`` at call time); a bad ``deny_patterns`` regex raises ``ConfigError``
    here, and a secret-looking ``env_passthrough`` entry is logged once as a warning.

    ``confinement`` names the daemon's files and the channels' network modes (the app's; by
    default only ``hidden_paths`` and the workspace base are hidden). The sandbox is chosen
    here, with ``bwrap`` the program to probe (:func:`.sandbox_probe.choose_sandbox`:
    ``ConfigError`` when ``sandbox = "bwrap"`` cannot run)."""
    policy = ShellPolicy.from_patterns(cfg.deny_patterns)
    passthrough = tuple(cfg.env_passthrough)
    exposed = secret_passthrough(passthrough, os.environ if environ is None else environ)
    if exposed:
        # The administrator's explicit choice: honoured, but said once where it is visible.
        log.warning("shell_env_passthrough_secret", variables=exposed)
    around = confinement or Confinement()
    # The workspace base holds every other scope's folder; the call's own is bound back.
    hidden = (*around.hidden, workspace.root, *(Path(p) for p in cfg.hidden_paths))
    sandbox = choose_sandbox(cfg, hidden=hidden, bwrap=bwrap)
    limits = _limits(cfg, sandboxed=sandbox is not None)

    def network(context: ToolContext) -> ShellNetwork:
        return around.network_for(context.channel, cfg.network)

    def approval_notes(arguments: Mapping[str, object], context: ToolContext) -> tuple[str, ...]:
        if sandbox is None:
            return ("network: allowed (no sandbox)",)
        return ("network: allowed (host)",) if network(context) == "host" else ()

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
        if sandbox is not None:
            env = sandbox.environment(env, workspace=cwd)
        result = await run_command(
            args.command,
            cwd=cwd,
            env=env,
            timeout_s=cfg.timeout_s,
            max_output_bytes=cfg.max_output_chars,
            grace_s=grace_s,
            wrapper=_wrapper(sandbox, limits, workspace=cwd, network=network(context)),
        )
        output = result.output if result.output.strip() else "(no output)"
        if result.timed_out or result.exit_code is None:
            raise ToolFailed(
                f"timed out after {cfg.timeout_s:g}s; the command and its children were "
                f"killed. Output so far:\n{bounded_text(output, cfg.max_output_chars)}"
            )
        text = f"exit code {result.exit_code}\n"
        stopped = limits.outcome(result.exit_code, result.output) if limits else None
        if stopped:
            log.info("shell_limit_reached", outcome=stopped)
            text += f"{stopped}\n"
        failure = (
            None
            if result.exit_code == 0
            else ToolFailure(kind=FailureKind.EXIT_CODE, code=result.exit_code)
        )
        return ToolOutput(
            text=bounded_text(text + output, cfg.max_output_chars + 300), failure=failure
        )

    return ToolSpec(
        name="shell",
        description=(
            "Run a shell command (/bin/sh -c) in the workspace directory and return its exit "
            f"code and combined stdout/stderr. Times out after {cfg.timeout_s:g}s; output is "
            "capped; background processes are stopped when the command ends."
            + _sandbox_note(sandbox, cfg, around)
        ),
        parameters=schema_of(ShellArguments),
        handler=handler,
        requires_approval=True,
        kind=ToolKind.EXECUTE,
        concurrency_safe=False,
        retry_safe=False,
        timeout_s=cfg.timeout_s + PIPELINE_TIMEOUT_MARGIN_S,
        approval_notes=approval_notes,
    )


def _limits(cfg: ShellToolConfig, *, sandboxed: bool) -> ShellLimits | None:
    """The call's limits, which belong to the sandbox: None without it (``sandbox = "none"``
    runs a command exactly as before) and, with a warning, when ``prlimit`` is missing."""
    if not sandboxed:
        return None
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        log.warning(
            "shell_limits_unavailable",
            problem="prlimit is not installed: shell commands run without resource limits",
            fix="apt-get install util-linux",
        )
        return None
    return ShellLimits.of(cfg, prlimit=prlimit, sandboxed=sandboxed)


def _wrapper(
    sandbox: BwrapSandbox | None,
    limits: ShellLimits | None,
    *,
    workspace: Path,
    network: ShellNetwork,
) -> list[str]:
    inner = limits.command() if limits is not None else []
    if sandbox is None:
        return inner
    return sandbox.command(inner, workspace=workspace, network=network)


def _sandbox_note(sandbox: BwrapSandbox | None, cfg: ShellToolConfig, around: Confinement) -> str:
    """What the model should know of the sandbox before it tries something that cannot work."""
    if sandbox is None:
        return ""
    networks = {cfg.network, *around.channel_network.values()}
    reach = (
        "there is no network access"
        if networks == {"none"}
        else "network access depends on the conversation"
    )
    return (
        " It runs in a sandbox: only the workspace and /tmp are writable, the bot's own files "
        f"are hidden, {reach}, and CPU time, memory and processes are limited."
    )
