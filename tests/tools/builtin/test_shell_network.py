"""``shell``'s network: none in the sandbox by default (a loopback listener started here is
never reached), the host's where ``tools.shell.network`` or a channel's ``shell_network``
says ``host``, and always without the sandbox; the approval card says when it is allowed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest

from bot.approval.service import ApprovalService
from bot.store import Store
from bot.tools.authorization import approval_request
from bot.tools.spec import ToolSpec
from tests.approval.conftest import APPROVER, asking, make_envelope
from tests.fakes.channel import FakeChannel, clicked
from tests.tools import harness
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
TEAM = {"allowed_users": ["*"], "approvers": [APPROVER]}
#: slack.team lets commands reach the network; slack.quiet keeps the default.
CHANNELS = {"slack": {"team": {**TEAM, "shell_network": "host"}, "quiet": dict(TEAM)}}


@dataclass
class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepted."""

    port: int
    accepted: int = 0


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    made = Listener(port=0)

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        made.accepted += 1
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    made.port = server.sockets[0].getsockname()[1]
    async with server:
        yield made


@pytest.fixture
def layout() -> Iterator[DaemonLayout]:
    with scratch_folder() as base:
        yield DaemonLayout.create(base)


def connect_command(port: int) -> str:
    code = (
        f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); "
        "print('CONNECTED')"
    )
    return f'{PYTHON} -c "{code}"'


async def settle() -> None:
    """Let the listener's accept callback run for a connection already made."""
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("sandbox", "network", "channel", "reached"),
    [
        ("bwrap", "none", "slack.quiet", False),
        ("bwrap", "host", "slack.quiet", True),
        ("bwrap", "none", "slack.team", True),  # the channel's shell_network = "host"
        ("none", "none", "slack.quiet", True),  # no sandbox: as before
    ],
)
async def test_loopback_listener(
    layout: DaemonLayout,
    listener: Listener,
    sandbox: str,
    network: str,
    channel: str,
    reached: bool,
) -> None:
    spec = shell_in(layout, sandbox=sandbox, network=network, channels=CHANNELS)
    text = await run(spec, connect_command(listener.port), make_context(channel=channel))
    await settle()
    assert ("CONNECTED" in text) is reached
    assert listener.accepted == (1 if reached else 0)
    if not reached:
        assert "Connection refused" in text or "unreachable" in text


def notes_of(spec: ToolSpec, channel: str) -> tuple[str, ...]:
    context = make_context(channel=channel)
    request = approval_request(context, spec, call_id="c1", arguments={"command": "curl x"})
    return request.notes


@pytest.mark.parametrize(
    ("sandbox", "channel", "notes"),
    [
        ("bwrap", "slack.quiet", ()),
        ("bwrap", "slack.team", ("network: allowed (host)",)),
        ("none", "slack.quiet", ("network: allowed (no sandbox)",)),
    ],
)
def test_approval_request_notes_the_network(
    layout: DaemonLayout, sandbox: str, channel: str, notes: tuple[str, ...]
) -> None:
    spec = shell_in(layout, sandbox=sandbox, channels=CHANNELS)
    assert notes_of(spec, channel) == notes


async def test_the_card_says_the_network_is_allowed(layout: DaemonLayout, store: Store) -> None:
    """Through the approval service to a posted card, as a person sees it."""
    settings = layout.settings(CHANNELS)
    spec = shell_in(layout, sandbox="bwrap", channels=CHANNELS)
    channel = FakeChannel(make_envelope().channel)
    service = ApprovalService(settings, store, {channel.ref: channel}.get, poll_interval_s=0.02)
    context = harness.make_context(make_envelope())
    assert context.channel == "slack.team"
    request = approval_request(context, spec, call_id="c1", arguments={"command": "curl -sI x"})
    async with asking(service, store, channel, request) as (posted, _task):
        assert posted.card.lines == ("command: curl -sI x", "network: allowed (host)")
        await clicked(service, channel.click(posted, APPROVER))
    rows = await store.audit.since()
    assert '"network: allowed (host)"' in rows[-1].summary
