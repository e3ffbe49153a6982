"""The group context window on both engines: one trip keeps a line and trims the
conversation by count and by age; a redelivery changes nothing, an edit its text; a window
is read oldest first, up to the turn's message, never past a line's expiry; a deletion and
the retention prune drop lines."""

from __future__ import annotations

from bot.store import Store
from bot.store.context_lines import MAX_LINE_CHARS, ContextLine

CHANNEL = "slack.main"


def line(message: str, at: float, *, conversation: str = "C1", text: str = "") -> ContextLine:
    return ContextLine(
        channel=CHANNEL,
        conversation_id=conversation,
        message_id=message,
        sender_id="U1",
        sender_name="Ann",
        text=text or message,
        at=at,
    )


async def window(store: Store, *, now: float, before: float = 1e12, limit: int = 50) -> list[str]:
    query = store.context_lines.window(CHANNEL, "C1", now=now, before=before, limit=limit)
    return [kept.text for kept in await store.context_lines.read(query)]


async def test_the_window_is_bounded_by_count(store: Store) -> None:
    for n in range(5):
        await store.context_lines.keep(line(f"m{n}", 100.0 + n), window=3, keep_s=3600)
    await store.context_lines.keep(line("x", 100.0, conversation="C2"), window=3, keep_s=3600)
    assert await window(store, now=110.0) == ["m2", "m3", "m4"]
    assert await store.context_lines.count() == 4  # the other conversation's line stays
    assert await window(store, now=110.0, limit=2) == ["m3", "m4"]
    assert await window(store, now=110.0, before=103.0) == ["m2", "m3"]


async def test_the_window_is_bounded_by_age(store: Store) -> None:
    await store.context_lines.keep(line("old", 100.0), window=10, keep_s=60)
    await store.context_lines.keep(line("mid", 150.0), window=10, keep_s=60)
    assert await window(store, now=165.0) == ["mid"]  # read up to each line's expiry
    await store.context_lines.keep(line("new", 170.0), window=10, keep_s=60)
    assert await store.context_lines.count() == 2  # the keep trimmed the expired line
    assert await store.context_lines.prune(now=215.0) == 1
    assert await window(store, now=200.0) == ["new"]


async def test_redelivery_edit_and_deletion(store: Store) -> None:
    await store.context_lines.keep(line("m1", 100.0, text="first"), window=10, keep_s=3600)
    await store.context_lines.keep(line("m1", 200.0, text="again"), window=10, keep_s=3600)
    [kept] = await store.context_lines.read(
        store.context_lines.window(CHANNEL, "C1", now=300.0, before=1e12, limit=10)
    )
    assert (kept.text, kept.at) == ("again", 100.0)  # the same message: its text, once
    assert await store.context_lines.edit(CHANNEL, "m1", "edited " + "x" * MAX_LINE_CHARS)
    assert (await window(store, now=300.0))[0] == ("edited " + "x" * MAX_LINE_CHARS)[
        :MAX_LINE_CHARS
    ]
    assert not await store.context_lines.edit(CHANNEL, "nope", "text")
    assert await store.context_lines.drop(CHANNEL, "m1")
    assert not await store.context_lines.drop(CHANNEL, "m1")
    assert await window(store, now=300.0) == []
