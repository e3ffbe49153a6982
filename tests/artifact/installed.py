"""The installed artifact the smoke drives: the wheel in a venv of its own, or the image.

``scripts/artifact_smoke.py`` builds the wheel, installs it with the locked dependencies into
a fresh venv outside the source tree and names it in ``HATCHWAY_ARTIFACT_VENV``; with
``--image`` it also builds the container image and names it in ``HATCHWAY_ARTIFACT_IMAGE``.
:class:`Installed` turns a ``hatchway`` command line into what runs it there:

* **venv**: ``<venv>/bin/hatchway …`` in a temporary working folder, with an environment
  built from nothing (no ``PYTHONPATH``, no ``HATCHWAY_*`` of the caller): nothing of the
  checkout can be imported by the daemon, only the test driver imports the fakes;
* **image**: ``podman run --rm --read-only --network host`` with the state folder as the
  volume ``/var/lib/hatchway`` and the config at ``/etc/hatchway/hatchway.toml``, the way
  docs/operations.md ("Containers") runs it; the fakes and PostgreSQL listen on the host's
  loopback, which the host network shares.

Either way the config file is the same: the state folder comes from ``HATCHWAY_STATE_DIR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.ops.daemon_process import DaemonProcess, NotifyListener

VENV_ENV = "HATCHWAY_ARTIFACT_VENV"
IMAGE_ENV = "HATCHWAY_ARTIFACT_IMAGE"
CONTAINERS_CONF_ENV = "CONTAINERS_CONF"
#: where the image keeps its state and reads its config (Containerfile)
IMAGE_STATE = "/var/lib/hatchway"
IMAGE_CONFIG = "/etc/hatchway/hatchway.toml"
IMAGE_VENV = "/opt/hatchway"
#: the image's user and group (Containerfile): a state folder on the host must be theirs
IMAGE_UID = 10001


def podman(*args: str) -> list[str]:
    """A podman command line as this machine runs it (docs/operations.md, "Containers"):
    runc, and CONTAINERS_CONF from the environment for cgroupfs and no default ulimits."""
    return ["podman", "--runtime", "runc", *args]


def podman_run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(podman(*args), capture_output=True, text=True, check=check)


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """One installation's working folder: ``config`` (the file), ``state`` (the folder)."""

    config: Path
    state: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    """The wheel's venv (``image`` empty) or the image built from it."""

    venv: Path | None
    image: str = ""

    @property
    def in_image(self) -> bool:
        return bool(self.image)

    def environ(self, place: Place, extra: Mapping[str, str]) -> dict[str, str]:
        """The daemon's whole environment: nothing inherited but what a shell must have."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(place.state),
            "LANG": "C.UTF-8",
            "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
            "HATCHWAY_STATE_DIR": str(place.state),
            **extra,
        }
        if self.in_image:
            conf = os.environ.get(CONTAINERS_CONF_ENV)
            if conf:
                env[CONTAINERS_CONF_ENV] = conf
        return env

    def argv(
        self,
        place: Place,
        args: Sequence[str],
        *,
        extra: Mapping[str, str],
        name: str = "",
        interactive: bool = False,
        entrypoint: str = "",
        options: Sequence[str] = (),
    ) -> list[str]:
        """``hatchway args`` (or ``entrypoint args``) as run in this installation;
        ``options``: more of ``podman run``'s (the image only)."""
        if not self.in_image:
            assert self.venv is not None
            program = entrypoint or str(self.venv / "bin" / "hatchway")
            return [program, *args]
        flags = [
            "run",
            "--rm",
            "--read-only",
            "--network",
            "host",
            "--name",
            name or f"hatchway-smoke-{uuid.uuid4().hex[:8]}",
            # no timer for the HEALTHCHECK (podman's timers need systemd, which CI lacks);
            # `podman healthcheck run` still runs it
            "--health-interval",
            "disable",
            "--volume",
            f"{place.state}:{IMAGE_STATE}",
            "--volume",
            f"{place.config}:{IMAGE_CONFIG}:ro",
        ]
        if interactive:
            flags.append("--interactive")
        if entrypoint:
            flags += ["--entrypoint", entrypoint]
        for key in extra:  # the value travels in podman's environment, not on its command line
            flags += ["--env", key]
        return podman(*flags, *options, self.image, *args)

    def site_packages_root(self) -> str:
        """Where the installed ``bot`` package must come from."""
        if self.in_image:
            return IMAGE_VENV + "/lib/"
        assert self.venv is not None
        return str(self.venv / "lib") + "/"

    def python(self) -> str:
        if self.in_image:
            return IMAGE_VENV + "/bin/python"
        assert self.venv is not None
        return str(self.venv / "bin" / "python")

    def run(
        self,
        place: Place,
        args: Sequence[str],
        *,
        extra: Mapping[str, str] | None = None,
        stdin: str | None = None,
        entrypoint: str = "",
        options: Sequence[str] = (),
        timeout_s: float = 300.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command to its end from the working folder (the config's folder)."""
        extra = dict(extra or {})
        return subprocess.run(
            self.argv(
                place,
                args,
                extra=extra,
                interactive=stdin is not None,
                entrypoint=entrypoint,
                options=options,
            ),
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            env=self.environ(place, extra),
            cwd=place.config.parent,
            timeout=timeout_s,
        )

    async def arun(
        self,
        place: Place,
        args: Sequence[str],
        *,
        extra: Mapping[str, str] | None = None,
        options: Sequence[str] = (),
    ) -> subprocess.CompletedProcess[str]:
        """:meth:`run` in a thread, so the fakes on this event loop keep answering."""
        return await asyncio.to_thread(self.run, place, args, extra=extra, options=options)

    @contextlib.asynccontextmanager
    async def daemon(
        self,
        place: Place,
        *args: str,
        extra: Mapping[str, str] | None = None,
        options: Sequence[str] = (),
        name: str = "",
    ) -> AsyncIterator[DaemonProcess]:
        """``hatchway run --config …`` for the block; killed (and its container, ``name``,
        removed) at the end if it is still running."""
        extra = dict(extra or {})
        name = name or f"hatchway-smoke-{uuid.uuid4().hex[:8]}"
        config = IMAGE_CONFIG if self.in_image else str(place.config)
        notify = NotifyListener(None)  # never named to the daemon: readiness is its log event
        proc = await asyncio.create_subprocess_exec(
            *self.argv(
                place, ["run", "--config", config, *args], extra=extra, name=name, options=options
            ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.environ(place, extra),
            cwd=str(place.config.parent),
        )
        daemon = DaemonProcess(proc, notify)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(daemon._pump_stderr()),
                    group.create_task(daemon._pump_stdout()),
                ]
                try:
                    yield daemon
                finally:
                    if proc.returncode is None:
                        proc.kill()
                        await proc.wait()
                    if self.in_image:
                        await asyncio.to_thread(podman_run, "rm", "--force", name, check=False)
                    for task in tasks:
                        task.cancel()
        finally:
            notify.close()


def from_environment() -> Installed | None:
    """The installation the artifact stage named, or None when none was."""
    venv = os.environ.get(VENV_ENV, "")
    image = os.environ.get(IMAGE_ENV, "")
    if not venv and not image:
        return None
    return Installed(venv=Path(venv) if venv else None, image=image)
