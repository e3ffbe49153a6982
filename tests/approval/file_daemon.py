"""One daemon at a time, configured by a real ``hatchway.toml`` and keeping its state in a
real SQLite file beside it, as ``hatchway run --config`` does: the tests of what an edit of
the file made while the daemon was stopped does at its next start (docs/approvals.md,
"Parking and resumption").

Each :meth:`Daemons.start` reads the file as it is then and starts an :class:`~bot.app.App`
on it with the in-process channel for every enabled alias, the model of the replica tests
(:class:`~tests.fakes.replica_apps.ReplicaModel`: ``m1 deploy please`` asks for ``deploy``)
and the recording ``deploy`` tool; every daemon started shares the model's log and the
tool's record, so a test reads what ran across restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.app import App
from bot.config import load_settings
from bot.envelope import ChannelRef, IngressEnvelope
from tests.fakes.channel import FakeChannel
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.replica_apps import APPROVER, SLACK, ReplicaModel

#: The alias beside ``slack.team`` that stays enabled whatever a test does to ``team``.
OTHER = ChannelRef(kind="slack", alias="other")

#: The file every test starts from: ``slack.team`` open to all, ``U_ADMIN`` its approver,
#: and a card that parks its turn after 0.2 s.
CONFIG = f"""\
[agent]
turn_timeout_s = 60.0
parallel_tools = false

[approval]
timeout_s = 60.0
wait_in_turn_s = 0.2

[channels.slack.team]
allowed_users = ["*"]
approvers = ["{APPROVER}"]

[channels.slack.other]
allowed_users = ["*"]
approvers = ["{APPROVER}"]
"""


@dataclass
class Daemon:
    app: App
    #: the in-process channel of each alias the file enables
    channels: Mapping[ChannelRef, FakeChannel]

    @property
    def channel(self) -> FakeChannel:
        """``slack.team``'s (the file must enable it)."""
        return self.channels[SLACK]

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """The message reaches the daemon's connection to its channel."""
        host = self.channels[envelope.channel].host
        assert host is not None
        await host.deliver(envelope)


class Daemons:
    """Starts daemons on one ``hatchway.toml`` (and so one SQLite file); each started one is
    stopped at the end."""

    def __init__(self, root: Path) -> None:
        self.config = root / "hatchway.toml"
        self.config.write_text(CONFIG, encoding="utf-8")
        #: (daemon, tag) of every model call that began a turn (a resumption adds none)
        self.log: list[tuple[str, str]] = []
        #: arguments of every deploy that ran, by the daemon it ran on
        self.deployed: list[tuple[str, Mapping[str, object]]] = []
        self._running: list[Daemon] = []

    def append(self, text: str) -> None:
        """Add ``text`` at the end of the file."""
        with self.config.open("a", encoding="utf-8") as file:
            file.write(text)

    def edit(self, old: str, new: str) -> None:
        """Replace ``old`` (which must be there, once) with ``new`` in the file."""
        text = self.config.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} is not in the file once"
        self.config.write_text(text.replace(old, new), encoding="utf-8")

    async def start(self, name: str) -> Daemon:
        settings = load_settings(self.config, environ={}, require_provider=False)
        channels = {
            ChannelRef(kind=kind, alias=alias): FakeChannel(ChannelRef(kind=kind, alias=alias))
            for kind, alias, cfg in settings.channels.all()
            if cfg.enabled
        }
        app = App(
            settings,
            provider=ReplicaModel(replica=name, log=self.log),
            channels={str(ref): channel for ref, channel in channels.items()},
            tools=[deploy_tool(_Ran(name, self.deployed))],
            config_file=self.config,
        )
        await app.start()
        async with asyncio.timeout(30):
            for channel in channels.values():
                await channel.running.wait()
        daemon = Daemon(app=app, channels=channels)
        self._running.append(daemon)
        return daemon

    async def stop(self, daemon: Daemon) -> None:
        self._running.remove(daemon)
        await daemon.app.stop(drain_timeout_s=5.0)

    async def aclose(self) -> None:
        for daemon in list(self._running):
            await self.stop(daemon)


class _Ran(list[Mapping[str, object]]):
    """The list the deploy tool appends to, which also notes the daemon it ran on."""

    def __init__(self, daemon: str, into: list[tuple[str, Mapping[str, object]]]) -> None:
        super().__init__()
        self._daemon = daemon
        self._into = into

    def append(self, item: Mapping[str, object]) -> None:
        super().append(item)
        self._into.append((self._daemon, item))
