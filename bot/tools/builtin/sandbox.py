"""The ``shell`` tool's OS sandbox: the bubblewrap command line one call runs under.

What a sandboxed command sees (docs/tools.md, "The sandbox"):

* the whole filesystem read-only (``--ro-bind / /``), except the call's workspace folder,
  bound read-write at its own path, and a private ``/tmp`` (a tmpfs of at most
  ``max_file_mb``);
* none of the daemon's files: a hidden directory (the state directory with the database,
  the workspace base with every other conversation's folder, ``hidden_paths``) is covered by
  an empty read-only tmpfs, a hidden file (a database or config file outside those) by
  ``/dev/null``, which cannot even be opened there (bubblewrap's binds are ``nodev``);
  ``/run``, where system services keep their sockets, is empty too (the resolver's folder
  comes back when the network is allowed);
* new user, PID, IPC and UTS namespaces and, unless the network is ``host``, a network
  namespace of its own (only a loopback with nothing listening); no capabilities and no
  further user namespaces. The sandbox dies with the call (``--die-with-parent``), and with
  its PID namespace goes every process the command left, ``setsid`` or not.

There is no ``--new-session``: the call already runs in a session of its own with no
terminal (so ``TIOCSTI`` has nothing to type into), and bubblewrap's init staying in the
call's process group is what lets the clean-up wait until the namespace's last process is
gone (the init ends only after every other process in it; see
:mod:`bot.tools.builtin.process_group`).

bubblewrap applies its options in order, so the order below is the contract: hiding mounts,
then the workspace bind (which may lie inside a hidden directory), then the hidden paths
inside the workspace hidden again, and last the hiding tmpfs mounts made read-only (the
workspace bind on top of one stays writable: it is a mount of its own).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.config import Settings, resolve_config_path
from bot.config.tools import ShellNetwork

#: Mounted fresh by bubblewrap: nothing of the host below them needs hiding.
FRESH_MOUNTS = (Path("/tmp"), Path("/run"), Path("/proc"), Path("/dev"))
RESOLV_CONF = Path("/etc/resolv.conf")


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What the daemon around ``shell`` keeps from a sandboxed command: its own files
    (``hidden``: the state directory, the database, the config file), and the network mode
    of each channel (``kind.alias``) that sets ``shell_network``. Built by the app from the
    settings; the default hides nothing beyond what the tool's own config names."""

    hidden: tuple[Path, ...] = ()
    channel_network: Mapping[str, ShellNetwork] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings, *, config_file: Path | None = None) -> Confinement:
        """The daemon's files under ``settings`` (the state directory, the database with its
        journal files) and the config file: ``config_file``, else the one
        :func:`~bot.config.resolve_config_path` finds without ``--config``."""
        database = settings.database_path()
        hidden = [Path(settings.state_dir), database]
        hidden += [database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal")]
        config = config_file or resolve_config_path(None)
        if config is not None:
            hidden.append(config)
        networks = {
            f"{kind}.{alias}": cfg.shell_network
            for kind, alias, cfg in settings.channels.all()
            if cfg.shell_network is not None
        }
        return cls(hidden=tuple(hidden), channel_network=networks)

    def network_for(self, channel: str, default: ShellNetwork) -> ShellNetwork:
        """The network mode of a call in ``channel`` (``kind.alias``)."""
        return self.channel_network.get(channel, default)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _under(path: Path, top: Path) -> bool:
    return path == top or path.is_relative_to(top)


@dataclass(frozen=True, slots=True, kw_only=True)
class BwrapSandbox:
    """The bubblewrap command line of one call. ``hidden`` paths may not exist (they are
    looked at when a call starts); ``tmp_bytes`` caps the private ``/tmp`` (0: no cap)."""

    executable: str
    hidden: tuple[Path, ...] = ()
    tmp_bytes: int = 0

    def command(self, inner: Sequence[str], *, workspace: Path, network: ShellNetwork) -> list[str]:
        """``bwrap … -- inner…`` with ``workspace`` (resolved) writable and current."""
        hidden = sorted({_real(path) for path in self.hidden} - {Path("/")})
        args = [self.executable, *namespace_options(network=network)]
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if self.tmp_bytes:
            args += ["--size", str(self.tmp_bytes)]
        args += ["--perms", "1777", "--tmpfs", "/tmp", "--tmpfs", "/run"]
        if network == "host":
            args += _resolver_binds()
        outside = [p for p in hidden if not p.is_relative_to(workspace)]
        hide_outside, dirs_outside = _hiding(outside, covered=FRESH_MOUNTS)
        args += [*hide_outside, "--bind", str(workspace), str(workspace)]
        inside = [p for p in hidden if p != workspace and p.is_relative_to(workspace)]
        hide_inside, dirs_inside = _hiding(inside, covered=())
        args += hide_inside
        for folder in (Path("/run"), *dirs_outside, *dirs_inside):
            args += ["--remount-ro", str(folder)]
        return [*args, "--chdir", str(workspace), "--", *inner]

    def environment(self, env: Mapping[str, str], *, workspace: Path) -> dict[str, str]:
        """``env`` with ``HOME`` and ``TMPDIR`` moved to the private ``/tmp`` when they lie in
        a hidden folder (the unit's ``HOME`` is the state directory): there they would be
        empty and read-only, and every tool that keeps a cache or a config would fail."""
        hidden = {_real(path) for path in self.hidden} - {Path("/")}
        moved = dict(env)
        for name in ("HOME", "TMPDIR"):
            value = env.get(name)
            if not value:
                continue
            real = _real(Path(value))
            if not real.is_relative_to(workspace) and any(_under(real, p) for p in hidden):
                moved[name] = "/tmp"
        return moved


def namespace_options(*, network: ShellNetwork) -> list[str]:
    """Namespaces, capabilities and lifetime: the same for every call, and for the probe."""
    options = [
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
    ]
    if network == "none":
        options.append("--unshare-net")
    return options


def _hiding(paths: Iterable[Path], *, covered: Sequence[Path]) -> tuple[list[str], list[Path]]:
    """Options hiding ``paths`` (resolved, sorted: parents first), and the directories they
    cover with a tmpfs (to be made read-only once everything is mounted): a directory goes
    under an empty tmpfs, anything else under ``/dev/null``; a path is skipped when absent,
    or below ``covered`` or a directory hidden here."""
    args: list[str] = []
    folders: list[Path] = []
    for path in paths:
        if any(_under(path, top) for top in (*covered, *folders)):
            continue
        if path.is_dir():
            args += ["--tmpfs", str(path)]
            folders.append(path)
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args, folders


def _resolver_binds() -> list[str]:
    """With the host's network a command needs name resolution: when ``/etc/resolv.conf``
    leads into ``/run`` (systemd-resolved, resolvconf), its folder is bound back."""
    target = _real(RESOLV_CONF)
    if target == RESOLV_CONF or not target.is_relative_to("/run"):
        return []
    folder = str(target.parent)
    return ["--ro-bind-try", folder, folder]
