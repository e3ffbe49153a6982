"""An asked ``http_fetch`` (a POST) shows the request on its card one fact a line: headers
with secrets masked and marked, the body laid out, bounded and escaped; never the headers or
the body as one JSON value."""

from __future__ import annotations

import json

import pytest

from bot.approval.service import ApprovalService
from bot.approval.summary import MASKED_NOTE, MAX_DIFF_LINES, describe
from bot.channel import ApprovalChoice
from bot.config import HttpFetchToolConfig
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin.fetch_preview import body_lines, request_lines
from bot.tools.builtin.http_fetch import http_fetch_tool
from bot.tools.outcome import OutcomeReason
from tests.approval.conftest import APPROVER, make_envelope, make_settings, until_waiting
from tests.fakes.channel import FakeChannel, clicked
from tests.tools.harness import Harness, make_context


async def _card_of(arguments: dict[str, object]) -> tuple[tuple[str, ...], str, bool]:
    spec = http_fetch_tool(HttpFetchToolConfig())
    assert spec.approval_preview is not None
    shown = await spec.approval_preview(arguments, make_context())
    assert not shown.refusal
    view = describe(arguments, diff=shown.diff, covered=shown.covers)
    return view.lines, view.full, view.cut


async def test_a_post_card_shows_the_request_line_by_line() -> None:
    body = json.dumps({"name": "deploy", "password": "hunter22", "n": 1})
    lines, full, cut = await _card_of(
        {
            "url": "https://api.example.com/hooks",
            "method": "POST",
            "headers": {"Authorization": "Bearer abcdefghijklmnop", "X-Trace": "7"},
            "body": body,
        }
    )
    assert lines == (
        "url: https://api.example.com/hooks",
        "method: POST",
        "request headers (5):",
        "  User-Agent: hatchway-http-fetch/1",
        "  Accept: text/html, application/json, text/*;q=0.9",
        f"  Authorization: ***  {MASKED_NOTE}",
        "  X-Trace: 7",
        "  Content-Type: application/json",
        f"body: application/json, {len(body)} bytes as sent, laid out in 5 lines:  {MASKED_NOTE}",
        "| {",
        '|   "name": "deploy",',
        '|   "password": "***",',
        '|   "n": 1',
        "| }",
    )
    assert not cut
    assert "hunter22" not in full and "abcdefghijklmnop" not in full
    assert not any(line.startswith(("headers:", "body: {")) for line in lines)


async def test_a_json_body_is_shown_as_written_not_as_parsed() -> None:
    """A key written twice is shown twice (a server may read either); numbers as written."""
    shown = body_lines('{"a": 1.50, "a": 2e400, "b": [true, null, {}]}', "application/json")
    assert shown[1:] == [
        "| {",
        '|   "a": 1.50,',
        '|   "a": 2e400,',
        '|   "b": [',
        "|     true,",
        "|     null,",
        "|     {}",
        "|   ]",
        "| }",
    ]


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (None, "", ["body: none"]),
        ("a\r\nb", "text/plain", ["body: text/plain, 4 bytes, 2 lines:", "| a\r", "| b"]),
        ("not json {", "application/json", ["body: application/json, 10 bytes, 1 line:"]),
        ("[" * 100_000, "application/json", ["body: application/json, 100,000 bytes, 1 line:"]),
    ],
)
def test_bodies_that_are_not_json_are_shown_as_written(
    body: str | None, content_type: str, expected: list[str]
) -> None:
    shown = body_lines(body, content_type)
    assert shown[: len(expected)] == expected


async def test_a_long_body_is_cut_on_the_card_and_whole_in_the_full_view() -> None:
    body = "\n".join(f"row {i} \u202e" for i in range(200)) + "\nsee https://gіthub.com/x"
    lines, full, cut = await _card_of(
        {"url": "https://example.com/", "method": "POST", "body": body, "content_type": "text/csv"}
    )
    assert cut  # approvable only from the full view
    assert lines[-1].endswith("more line(s) below: the full view shows them all]")
    assert len(lines) == 2 + MAX_DIFF_LINES + 1
    assert "\u202e" not in full and full.count("\\u202e") == 200
    assert full.count("\n| row ") == 200
    assert "⚠ look-alike: gіthub.com is xn--gthub-n2e.com" in full  # marked in the body too


def test_a_get_shows_its_headers_and_no_body() -> None:
    assert request_lines("GET", {"Accept": "x"}, "ignored") == [
        "request headers (1):",
        "  Accept: x",
    ]


async def test_a_header_the_tool_refuses_gets_no_card(store: Store) -> None:
    channel = FakeChannel(make_envelope().channel)
    service = ApprovalService(make_settings(), store, {channel.ref: channel}.get)
    harness = Harness(
        store, [http_fetch_tool(HttpFetchToolConfig())], gate=service, envelope=make_envelope()
    )
    arguments = {"url": "https://example.com/", "method": "POST", "headers": {"Host": "x"}}
    call = ToolCallRequest(id="c1", name="http_fetch", arguments=json.dumps(arguments))
    (outcome,) = (await harness.run(call)).outcomes
    assert outcome.reason is OutcomeReason.BAD_ARGUMENTS
    assert "header 'Host' cannot be set" in outcome.observation
    assert channel.posted == []


async def test_the_card_posted_for_a_post_shows_no_json_blob(store: Store) -> None:
    channel = FakeChannel(make_envelope().channel)
    service = ApprovalService(make_settings(), store, {channel.ref: channel}.get)
    harness = Harness(
        store, [http_fetch_tool(HttpFetchToolConfig())], gate=service, envelope=make_envelope()
    )
    arguments = {
        "url": "https://example.com/",
        "method": "POST",
        "headers": {"Cookie": "sid=abcdef123456"},
        "body": '{"k": "v"}',
    }
    call = ToolCallRequest(id="c1", name="http_fetch", arguments=json.dumps(arguments))
    task = harness.run_task(call)
    posted = await channel.next_card()
    await until_waiting(store, posted.card.approval_id)
    assert f"  Cookie: ***  {MASKED_NOTE}" in posted.card.lines
    assert '|   "k": "v"' in posted.card.lines
    assert "abcdef123456" not in posted.card.full_text
    assert not any(line.startswith(("headers:", "body:  {")) for line in posted.card.lines)
    row = await store.approvals.get(posted.card.approval_id)
    assert row is not None and row.summary == posted.card.lines  # the audit keeps the same
    await clicked(service, channel.click(posted, APPROVER, ApprovalChoice.DENY))
    (outcome,) = (await task).outcomes
    assert outcome.reason is OutcomeReason.DENIED_BY_PERSON
