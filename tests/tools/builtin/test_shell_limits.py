"""``shell``'s resource limits, each hit for real under bubblewrap, with the line the model
reads (the process limit only for a user other than root, as the kernel has it); without
the sandbox a command runs with the daemon's own limits, as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from tests.tools.builtin.conftest import make_context
from tests.tools.builtin.sandbox_rig import (
    PYTHON,
    DaemonLayout,
    needs_bwrap,
    run,
    scratch_folder,
    shell_in,
)

pytestmark = needs_bwrap
MODES = ["bwrap"]
REPO = Path(__file__).resolve().parents[3]
NOBODY = 65534
OWN_LIMITS = Path("/proc/self/limits").read_text()  # the test process's, read once


@pytest.fixture
def layout() -> Iterator[DaemonLayout]:
    with scratch_folder() as base:
        yield DaemonLayout.create(base)


@pytest.mark.parametrize("sandbox", MODES)
async def test_cpu_time_limit(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox, max_cpu_s=1)
    text = await run(spec, "while :; do :; done", make_context())
    lines = text.splitlines()
    assert lines[0] in ("exit code 152", "exit code -24")  # SIGXCPU, through sh or bwrap
    assert lines[1] == "stopped: CPU time limit of 1 s reached"


@pytest.mark.parametrize("sandbox", MODES)
async def test_memory_limit(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox, max_memory_mb=256)
    command = f"{PYTHON} -c 'block = bytearray(512 * 1024 * 1024)'"
    text = await run(spec, command, make_context())
    lines = text.splitlines()
    assert lines[:2] == ["exit code 1", "stopped: out of memory (limit 256 MiB of address space)"]
    assert "MemoryError" in text


@pytest.mark.parametrize("sandbox", MODES)
async def test_open_files_limit(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox, max_open_files=64)
    command = f"{PYTHON} -c 'files = [open(\"/dev/null\") for _ in range(100)]'"
    text = await run(spec, command, make_context())
    assert text.splitlines()[:2] == ["exit code 1", "stopped: too many open files (limit 64)"]


@pytest.mark.parametrize("sandbox", MODES)
async def test_file_size_limit(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox, max_file_mb=1)
    text = await run(spec, "head -c 3000000 /dev/zero > big.bin", make_context())
    lines = text.splitlines()
    assert lines[0] in ("exit code 153", "exit code -25")  # SIGXFSZ
    assert lines[1] == "stopped: file size limit of 1 MiB reached"
    (written,) = layout.workspace_root.rglob("big.bin")
    assert written.stat().st_size == 1024 * 1024


async def test_private_tmp_is_as_small_as_the_file_limit(layout: DaemonLayout) -> None:
    spec = shell_in(layout, sandbox="bwrap", max_file_mb=1)
    command = "for i in 1 2 3; do head -c 600000 /dev/zero > /tmp/part$i; done"
    text = await run(spec, command, make_context())
    assert "No space left on device" in text


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_an_ordinary_failure_names_no_limit(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox)
    text = await run(spec, "ls /no/such/folder", make_context())
    assert text.startswith("exit code 2\n")
    assert "stopped:" not in text


@pytest.mark.parametrize("sandbox", MODES)
async def test_limits_are_set_on_the_command(layout: DaemonLayout, sandbox: str) -> None:
    """What ``/proc/self/limits`` shows a command: the configured values, soft and hard;
    the process limit only in the sandbox (outside, it would count the daemon's threads)."""
    spec = shell_in(
        layout,
        sandbox=sandbox,
        max_cpu_s=20,
        max_memory_mb=1024,
        max_open_files=200,
        max_processes=50,
        max_file_mb=10,
    )
    text = await run(spec, "cat /proc/self/limits", make_context())
    limits = {
        line[:26].strip(): line[26:].split()[:2] for line in text.splitlines()[2:] if line.strip()
    }
    assert limits["Max cpu time"] == ["20", "21"]
    assert limits["Max address space"] == [str(1024 * 2**20)] * 2
    assert limits["Max open files"] == ["200", "200"]
    assert limits["Max file size"] == [str(10 * 2**20)] * 2
    assert limits["Max core file size"] == ["0", "0"]
    assert limits["Max processes"] == ["50", "50"]


async def test_without_the_sandbox_a_command_keeps_the_daemons_limits(
    layout: DaemonLayout,
) -> None:
    spec = shell_in(layout, sandbox="none", max_cpu_s=20, max_memory_mb=1024)
    text = await run(spec, "cat /proc/self/limits", make_context())
    limits = {
        line[:26].strip(): line[26:].split()[:2] for line in text.splitlines()[2:] if line.strip()
    }
    own = OWN_LIMITS.splitlines()[1:]
    mine = {line[:26].strip(): line[26:].split()[:2] for line in own if line.strip()}
    assert limits["Max cpu time"] == mine["Max cpu time"]
    assert limits["Max address space"] == mine["Max address space"]


def run_as_service_user(workspace: Path, config: dict[str, object], command: str) -> str:
    """``shell`` in a process of an unprivileged user (``nobody`` when the suite is root)."""
    request = json.dumps({"workspace": str(workspace), "config": config, "command": command})
    argv = [sys.executable, "-m", "tests.tools.builtin.shell_child", request]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "setpriv (util-linux) runs the child as nobody"
        argv = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = {"PATH": os.environ["PATH"], "HOME": str(workspace), "LANG": "C.UTF-8"}
    done = subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(text, str)
    return text


def test_process_limit_stops_a_fork_loop_of_the_service_user() -> None:
    with scratch_folder() as base:
        base.chmod(0o755)
        workspace = base / "workspace"
        workspace.mkdir(mode=0o777)
        workspace.chmod(0o777)  # past the umask: the unprivileged user writes here
        config = {"sandbox": "bwrap", "max_processes": 16}
        command = "for i in $(seq 40); do sleep 30 & done; wait"
        text = run_as_service_user(workspace, config, command)
    lines = text.splitlines()
    assert lines[0] != "exit code 0"
    assert lines[1] == "stopped: too many processes (limit 16)"
    assert "Cannot fork" in text


@pytest.mark.skipif(os.geteuid() != 0, reason="about the daemon running as root")
def test_root_is_told_the_process_limit_does_not_apply(layout: DaemonLayout) -> None:
    with structlog.testing.capture_logs() as logs:
        shell_in(layout, sandbox="bwrap")
    (warning,) = [entry for entry in logs if entry["event"] == "shell_process_limit_not_applied"]
    assert warning["log_level"] == "warning" and "root" in warning["reason"]
