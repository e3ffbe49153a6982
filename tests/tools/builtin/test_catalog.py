"""The catalog: which built-ins exist for a configuration, with which policy, and that they
register and run through the real pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.approval.gate import Assessment
from bot.config import ToolsConfig
from bot.envelope import DeliveryTarget
from bot.errors import ConfigError
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin import builtin_tools
from bot.tools.outcome import OutcomeStatus
from bot.tools.registry import ToolRegistry
from bot.tools.spec import ToolKind
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness


class TextOutbox:
    """An outbox that posts text only."""

    def allows(self, target: DeliveryTarget) -> bool:
        return False

    async def send(self, target: DeliveryTarget, text: str) -> None:
        raise AssertionError("nothing may be sent")


class NullOutbox(TextOutbox):
    """An outbox that posts text and files (and sends nothing)."""

    def upload_limit(self, target: DeliveryTarget) -> int | None:
        return None

    async def send_file(
        self, target: DeliveryTarget, path: Path, *, name: str, caption: str = ""
    ) -> None:
        raise AssertionError("nothing may be sent")


ALL = [
    "current_time",
    "calculator",
    "file_read",
    "file_list",
    "file_search",
    "file_write",
    "file_edit",
    "view_attachment",
    "shell",
    "http_fetch",
    "memory_store",
    "memory_recall",
    "send_message",
    "send_file",
]

# (requires_approval, kind) of every built-in; http_fetch and send_message refine per call.
POLICY = {
    "file_read": (False, ToolKind.READ_ONLY),
    "file_list": (False, ToolKind.READ_ONLY),
    "file_search": (False, ToolKind.READ_ONLY),
    "file_write": (True, ToolKind.WRITE),
    "file_edit": (True, ToolKind.WRITE),
    "shell": (True, ToolKind.EXECUTE),
    "http_fetch": (True, ToolKind.READ_ONLY),
    "memory_store": (False, ToolKind.WRITE),
    "memory_recall": (False, ToolKind.READ_ONLY),
    "send_message": (True, ToolKind.WRITE),
    "view_attachment": (False, ToolKind.READ_ONLY),
    "send_file": (True, ToolKind.WRITE),
}


def tools_config(**sections: object) -> ToolsConfig:
    return ToolsConfig.model_validate(sections)


def test_every_builtin_with_its_policy(store: Store, tmp_path: Path) -> None:
    specs = builtin_tools(
        tools_config(), store=store, outbox=NullOutbox(), workspace=tmp_path / "ws"
    )
    assert [s.name for s in specs] == ALL
    assert (tmp_path / "ws").is_dir()
    for spec in specs:
        if spec.name in POLICY:
            assert (spec.requires_approval, spec.kind) == POLICY[spec.name], spec.name
    registry = ToolRegistry(specs)
    registry.executor()  # every spec has a handler
    registry.check_schemas()  # and a valid schema (a turn compiles it at the tool's first call)


@pytest.mark.parametrize(
    ("sections", "outbox", "missing"),
    [
        ({"shell": {"enabled": False}}, True, {"shell"}),
        ({"http_fetch": {"enabled": False}}, True, {"http_fetch"}),
        ({"memory": {"enabled": False}}, True, {"memory_store", "memory_recall"}),
        (
            {"files": {"enabled": False}},
            True,
            {"file_read", "file_list", "file_search", "file_write", "file_edit", "send_file"},
        ),
        ({}, False, {"send_message", "send_file"}),
        ({}, "text", {"send_file"}),
    ],
)
def test_disabled_tools_are_left_out(
    store: Store,
    tmp_path: Path,
    sections: dict[str, object],
    outbox: bool | str,
    missing: set[str],
) -> None:
    given = TextOutbox() if outbox == "text" else NullOutbox() if outbox else None
    specs = builtin_tools(tools_config(**sections), store=store, outbox=given, workspace=tmp_path)
    assert {s.name for s in specs} == set(ALL) - missing


def test_bad_deny_pattern_fails_at_build(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tools\.shell\.deny_patterns"):
        builtin_tools(
            tools_config(shell={"deny_patterns": ["[oops"]}),
            store=store,
            outbox=None,
            workspace=tmp_path,
        )


def call(name: str, arguments: dict[str, object], call_id: str = "c1") -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name=name, arguments=json.dumps(arguments))


async def test_approved_shell_call_is_still_refused_by_the_deny_list(
    store: Store, tmp_path: Path
) -> None:
    gate = PolicyGate()
    specs = builtin_tools(tools_config(), store=store, outbox=None, workspace=tmp_path)
    report = await Harness(store, specs, gate=gate).run(call("shell", {"command": "reboot"}))
    (outcome,) = report.outcomes
    assert [r.tool for r in gate.asked] == ["shell"]  # a person said yes ...
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.failed  # ... policy said no
    assert outcome.observation.startswith("ToolRefused: refused by policy")


async def test_file_tools_through_the_pipeline(store: Store, tmp_path: Path) -> None:
    gate = PolicyGate(policy={"file_write": Assessment.ALLOW})
    specs = builtin_tools(tools_config(), store=store, outbox=None, workspace=tmp_path)
    harness = Harness(store, specs, gate=gate)
    written = await harness.run(call("file_write", {"path": "a/b.txt", "content": "hi\n"}))
    assert written.outcomes[0].observation == "created a/b.txt (3 bytes)"
    read = await harness.run(call("file_read", {"path": "a/b.txt"}, "c2"))
    assert read.outcomes[0].observation == "[a/b.txt: lines 1-1 of 1]\nhi\n"
    escaped = await harness.run(call("file_read", {"path": "../x"}, "c3"))
    assert escaped.outcomes[0].failed and "outside the workspace" in escaped.outcomes[0].observation
    assert [r.requires_approval for r in gate.assessed] == [True, False, False]
