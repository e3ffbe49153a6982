"""Fixtures for built-in tool tests: a workspace under tmp_path and a call context (the real
SQLite ``store`` fixture comes from ``tests/tools/conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext
from tests.tools import harness

ORIGIN = DeliveryTarget(
    channel=ChannelRef(kind="slack", alias="team"), conversation_id="C-ORIGIN", thread_id="T-1"
)


def make_context(
    *,
    channel: str = "slack.team",
    conversation: str = "C-ORIGIN",
    delivery: DeliveryTarget = ORIGIN,
    workspace: str | None = None,
    thread: str | None = None,
    background: bool = False,
) -> ToolContext:
    """A call's context in a turn answering U_ALICE in ``channel`` (``kind.alias``) and
    ``conversation`` (in ``thread`` when given; a scheduled run when ``background``), with
    replies going to ``delivery``."""
    kind, _, alias = channel.partition(".")
    envelope = IngressEnvelope(
        channel=ChannelRef(kind=kind, alias=alias),
        message_id="m1",
        conversation_id=conversation,
        thread_id=thread,
        sender=Sender(id="U_ALICE"),
        text="hello",
        reply_target=delivery,
        background=background,
    )
    return harness.make_context(envelope, workspace=workspace)


@pytest.fixture
def context() -> ToolContext:
    return make_context()


@pytest.fixture
def workspace_dir(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def outside_dir(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("outside secret\n")
    return other


@pytest.fixture
def workspace(workspace_dir: Path) -> Workspace:
    return Workspace(root=workspace_dir)
