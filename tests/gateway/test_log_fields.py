"""The fields a message's admission and its turn put on every log line (LogFields)."""

from __future__ import annotations

import asyncio

from structlog.contextvars import (
    bind_contextvars,
    clear_contextvars,
    get_contextvars,
    merge_contextvars,
    reset_contextvars,
)

from bot.gateway.log_fields import LogFields


def test_bound_fields_are_on_every_line_until_reset_and_the_outer_value_comes_back() -> None:
    fields = LogFields("session", "turn_id")
    outer = bind_contextvars(session="outer")
    try:
        bound = fields.bind("telegram.main:1", "t-1")
        event = merge_contextvars(None, "info", {"event": "turn_started"})
        assert event == {"event": "turn_started", "session": "telegram.main:1", "turn_id": "t-1"}
        fields.reset(bound)
        assert get_contextvars() == {"session": "outer"}
    finally:
        reset_contextvars(**outer)
    assert "session" not in get_contextvars()


def test_a_task_started_inside_clears_them_as_bind_contextvars_fields() -> None:
    fields = LogFields("envelope_id", "channel")

    async def worker() -> dict[str, object]:
        clear_contextvars()  # as a session's worker starts
        return get_contextvars()

    async def admission() -> tuple[dict[str, object], dict[str, object]]:
        bound = fields.bind("e-1", "slack.work")
        try:
            task = asyncio.create_task(worker())
            return get_contextvars(), await task
        finally:
            fields.reset(bound)

    seen, in_worker = asyncio.run(admission())
    assert seen == {"envelope_id": "e-1", "channel": "slack.work"}
    assert in_worker == {}
