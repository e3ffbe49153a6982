"""``shell`` with real processes and no sandbox (``sandbox = "none"``, the behaviour before
it existed): output, caps, deny list, the allow-listed environment, and the process group
killed whole on timeout and on cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
import structlog
from pydantic import ValidationError

from bot.config import ShellToolConfig
from bot.errors import ConfigError
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolKind, ToolOutput, ToolSpec


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (zombies wait for init to reap them)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in ("Z", "X")


def has_content(path: Path) -> bool:
    return path.exists() and bool(path.read_text().strip())


async def wait_for_file(path: Path) -> None:
    for _ in range(500):
        if has_content(path):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def real_path(path: Path) -> str:
    return str(path.resolve())


def forked_children() -> list[int]:
    """Processes whose parent is this test process."""
    mine = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if stat.read_text().rsplit(")", 1)[1].split()[1] == mine:
                found.append(int(stat.parent.name))
    return found


def pids_in(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid"))]


async def run(spec: ToolSpec, command: str, context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler({"command": command}, context)
    return result.text if isinstance(result, ToolOutput) else result


def make_shell(
    workspace: Workspace,
    *,
    environ: Mapping[str, str] | None = None,
    **cfg: object,
) -> ToolSpec:
    """``shell`` without the sandbox unless ``sandbox`` is given: these tests follow the
    command's processes by pid, which a sandbox's own PID namespace renumbers
    (tests/tools/builtin/test_shell_sandbox.py runs the same checks under bubblewrap)."""
    settings = {"sandbox": "none", **cfg}
    return shell_tool(
        workspace, ShellToolConfig.model_validate(settings), environ=environ, grace_s=0.3
    )


def test_policy_fields(workspace: Workspace) -> None:
    spec = make_shell(workspace)
    assert spec.name == "shell"
    assert spec.requires_approval is True
    assert spec.kind is ToolKind.EXECUTE
    assert not spec.concurrency_safe and not spec.retry_safe
    assert spec.timeout_s is not None and spec.timeout_s > 60.0


async def test_runs_in_workspace_with_exit_code(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    text = await run(make_shell(workspace), "pwd; echo oops >&2; exit 3", context)
    assert text.splitlines() == ["exit code 3", real_path(workspace_dir), "oops"]


async def test_output_is_capped_head_and_tail(workspace: Workspace, context: ToolContext) -> None:
    command = "echo FIRST; yes filler | head -n 50000; echo LAST"
    text = await run(make_shell(workspace, max_output_chars=1000), command, context)
    assert "FIRST" in text and "LAST" in text
    assert "bytes of output omitted" in text
    assert len(text) < 1500


async def test_output_is_scrubbed(workspace: Workspace, context: ToolContext) -> None:
    text = await run(make_shell(workspace), "echo key sk-abcdefghijklmnopqrstuvwx", context)
    assert "sk-abcdefghijklmnopqrstuvwx" not in text
    assert "***" in text


async def test_timeout_kills_children_and_grandchildren(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    command = (
        "sleep 60 & echo $! > child.pid; "
        "sh -c 'sleep 60 & echo $! > grandchild.pid; wait' & "
        "echo started; wait"
    )
    with pytest.raises(ToolFailed, match="timed out after 1s") as caught:
        await run(make_shell(workspace, timeout_s=1.0), command, context)
    assert "started" in str(caught.value)
    pids = pids_in(workspace_dir)
    assert len(pids) == 2
    assert not any(process_alive(pid) for pid in pids)


async def test_cancelled_while_starting_leaves_no_process(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    """A cancel that lands while asyncio is still connecting the new process's pipes (the
    process and its background children already run) still ends the whole group."""
    command = "sleep 60 >/dev/null 2>&1 & echo $! > child.pid; echo $$ > shell.pid; wait"
    task = asyncio.create_task(run(make_shell(workspace), command, context))
    for _ in range(1000):  # step the loop until the shell is forked, no further
        await asyncio.sleep(0)
        if forked_children():
            break
    # Block the event loop, so the spawn cannot finish, until the children are running.
    for _ in range(1000):
        if has_content(workspace_dir / "child.pid") and has_content(workspace_dir / "shell.pid"):
            break
        time.sleep(0.01)  # noqa: ASYNC251 (blocking on purpose, see above)
    pids = pids_in(workspace_dir)
    assert len(pids) == 2 and all(process_alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(process_alive(pid) for pid in pids)


async def test_sigterm_ignoring_group_gets_sigkill(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    command = "trap '' TERM; sh -c \"trap '' TERM; echo \\$\\$ > stubborn.pid; sleep 60\"& wait"
    with pytest.raises(ToolFailed, match="timed out"):
        await run(make_shell(workspace, timeout_s=1.0), command, context)
    (pid,) = pids_in(workspace_dir)
    assert not process_alive(pid)


async def test_cancellation_leaves_no_process(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    command = "sleep 60 & echo $! > child.pid; sh -c 'echo $$ > inner.pid; sleep 60' & wait"
    task = asyncio.create_task(run(make_shell(workspace), command, context))
    await wait_for_file(workspace_dir / "child.pid")
    await wait_for_file(workspace_dir / "inner.pid")
    pids = pids_in(workspace_dir)
    assert all(process_alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(process_alive(pid) for pid in pids)


async def test_background_process_does_not_outlive_the_call(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    text = await run(make_shell(workspace), "sleep 60 > /dev/null & echo $! > bg.pid", context)
    assert text.startswith("exit code 0")
    (pid,) = pids_in(workspace_dir)
    assert not process_alive(pid)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -rf /*",
        "rm -fr ~",
        "sudo rm -r -f / ",
        "rm -rf --no-preserve-root /",
        'rm -rf "$HOME"',
        "rm -rf '/'",
        'rm -rf "${HOME}"/',
        "rm -r -f -- /",
        "rm -rf ~/",
        "\\rm -rf /",
        "/bin/rm -rf //",
        "rm -rf /.",
        "sudo rm -rf /*",
        'echo "$(rm -rf /)"',
        "sh -c 'rm -rf \"$HOME\"'",
        ":(){ :|:& };:",
        "mkfs.ext4 /dev/sda1",
        "dd if=/dev/zero of=/dev/sda bs=1M",
        "shutdown -h now",
        "echo bye; reboot",
        "systemctl poweroff",
        "chmod -R 777 /",
        'chmod -R 777 "/"',
    ],
)
async def test_deny_list_refuses_before_running(
    workspace: Workspace, workspace_dir: Path, context: ToolContext, command: str
) -> None:
    with pytest.raises(ToolRefused, match="refused by policy: the command matches"):
        await run(make_shell(workspace), f"touch ran.txt; {command}", context)
    assert not (workspace_dir / "ran.txt").exists()


async def test_unparseable_command_is_refused_before_running(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    """/bin/sh would run the first line before failing on the second: nothing runs."""
    with pytest.raises(ToolRefused, match="cannot parse the command"):
        await run(make_shell(workspace), 'touch ran.txt\necho "unbalanced', context)
    assert not (workspace_dir / "ran.txt").exists()


@pytest.mark.parametrize("command", ['echo "rm -rf /"', "ls / > listing.txt", "rm -rf ./build"])
async def test_data_that_looks_dangerous_runs(
    workspace: Workspace, context: ToolContext, command: str
) -> None:
    text = await run(make_shell(workspace), command, context)
    assert text.startswith("exit code 0")


async def test_configured_deny_pattern_refuses(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    spec = make_shell(workspace, deny_patterns=[r"\bcurl\b"])
    with pytest.raises(ToolRefused, match=r"deny_patterns\[0\]"):
        await run(spec, "touch ran.txt && curl http://example.com", context)
    assert not (workspace_dir / "ran.txt").exists()


def test_bad_deny_pattern_is_a_config_error(workspace: Workspace) -> None:
    with pytest.raises(ConfigError, match=r"deny_patterns\[0\]"):
        make_shell(workspace, deny_patterns=["(unclosed"])


DAEMON_SECRETS = {
    "MYSQL_PWD": "mysql-hunter2",
    "DATABASE_URL": "postgres://u:pw-database@h/db",
    "REDIS_URL": "redis://:pw-redis@cache:6379/0",
    "SENTRY_DSN": "https://pubkey-sentry@o1.ingest.example/42",
    "GH_PAT": "github_pat_11AAAAAAA0123456789abcdefghijklmnopqrstuvwxyz",
    "SOME_RANDOM": "value-random",
    "HATCHWAY_STATE_DIR": "/var/lib/hatchway",
    "EDITOR": "editor-value",
}


def env_names(text: str) -> dict[str, str]:
    """``env`` output (after the exit-code line) as a mapping."""
    lines = text.splitlines()[1:]
    return dict(line.split("=", 1) for line in lines if "=" in line)


async def test_child_environment_is_allow_listed(
    workspace: Workspace, workspace_dir: Path, context: ToolContext, tmp_path: Path
) -> None:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TZ": "Europe/Berlin",
        "PIP_INDEX_URL": "https://pypi.internal.example/simple",
        "NODE_OPTIONS": "--max-old-space-size=512",
        "NODE_ENV": "production",
        "NODEJS_HOME": "/opt/node",
        **DAEMON_SECRETS,
    }
    spec = make_shell(workspace, environ=environ, env_passthrough=["PIP_INDEX_URL", "NODE_*"])
    text = await run(spec, "env", context)
    seen = env_names(text)
    for name in ("PATH", "HOME", "LANG", "LC_TIME", "TZ", "PIP_INDEX_URL"):
        assert seen[name] == environ[name]
    assert seen["NODE_OPTIONS"] == "--max-old-space-size=512" and "NODE_ENV" in seen
    assert "PWD" in seen
    # `PWD=…` reads like a password assignment to the output scrubber: print the value alone.
    pwd = await run(spec, "env | sed -n 's/^PWD=//p'", context)
    assert pwd.splitlines()[1:] == [real_path(workspace_dir)]
    assert "NODEJS_HOME" not in seen
    for name, value in DAEMON_SECRETS.items():
        assert name not in seen
        assert value not in text


async def test_child_cannot_see_daemon_secrets(
    workspace: Workspace, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``environ`` the daemon's own ``os.environ`` is the source, read at call time."""
    monkeypatch.setenv("HATCHWAY_TEST_TOKEN", "hatchway-secret-value")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-secret-value")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:database-secret-value@h/db")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    spec = make_shell(workspace, env_passthrough=["PLAIN_SETTING"])
    monkeypatch.setenv("LATE_SETTING", "late")
    text = await run(spec, "env", context)
    names = env_names(text)
    assert {"PLAIN_SETTING", "PATH", "HOME", "PWD"} <= names.keys()
    assert "LATE_SETTING" not in names
    for hidden in ("HATCHWAY_TEST_TOKEN", "OPENAI_API_KEY", "DATABASE_URL"):
        assert hidden not in names
    assert "secret-value" not in text


@pytest.mark.parametrize(
    ("passthrough", "environ", "warned"),
    [
        (["GH_TOKEN", "PIP_INDEX_URL"], {}, ["GH_TOKEN"]),
        (["DB_*"], {"DB_HOST": "h", "DB_PASSWORD": "pw"}, ["DB_PASSWORD"]),
        (["*_API_KEY", "LANG"], {}, ["*_API_KEY"]),
        (["PIP_INDEX_URL", "NODE_*"], {"NODE_ENV": "production"}, None),
    ],
)
def test_secret_looking_passthrough_is_honoured_with_one_warning(
    workspace: Workspace, passthrough: list[str], environ: dict[str, str], warned: list[str] | None
) -> None:
    with structlog.testing.capture_logs() as logs:
        make_shell(workspace, environ=environ, env_passthrough=passthrough)
    warnings = [entry for entry in logs if entry["event"] == "shell_env_passthrough_secret"]
    if warned is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0]["variables"] == warned
        assert warnings[0]["log_level"] == "warning"


@pytest.mark.parametrize("entry", ["BAD-NAME", "*", "**", "1ABC", "A B", "PIP_?", "É"])
def test_env_passthrough_entries_must_be_variable_names(entry: str) -> None:
    with pytest.raises(ValidationError, match=r"env_passthrough\[0\]"):
        ShellToolConfig.model_validate({"env_passthrough": [entry]})


@pytest.mark.parametrize("entry", ["PIP_INDEX_URL", "NODE_*", "*_PROXY", "_X", "lower_case"])
def test_env_passthrough_accepts_names_and_star_globs(entry: str) -> None:
    assert ShellToolConfig.model_validate({"env_passthrough": [entry]}).env_passthrough == [entry]


async def test_missing_workspace_is_an_environment_error(
    tmp_path: Path, context: ToolContext
) -> None:
    spec = make_shell(Workspace(root=tmp_path / "absent"))
    with pytest.raises(ToolEnvironmentError, match="does not exist"):
        await run(spec, "true", context)
