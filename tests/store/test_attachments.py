"""The attachments repository, on both engines: rows, lookups, and deletions that take
the files with them."""

from __future__ import annotations

from pathlib import Path

from bot.store import AttachmentKind, AttachmentRecord, Store
from tests.store.conftest import StorePlace


def _record(
    tmp_path: Path,
    id: str,
    *,
    session: str = "telegram.main:1",
    user: str = "u1",
    conversation: str = "1",
    created_at: float = 1000.0,
    copy: bool = True,
) -> AttachmentRecord:
    saved = tmp_path / "state" / f"{id}.txt"
    saved.parent.mkdir(exist_ok=True)
    saved.write_text(id)
    workspace = tmp_path / "ws" / f"{id}.txt"
    if copy:
        workspace.parent.mkdir(exist_ok=True)
        workspace.write_text(id)
    return AttachmentRecord(
        id=id,
        session_key=session,
        turn_id=f"turn-{id}",
        channel="telegram.main",
        conversation_id=conversation,
        user_id=user,
        name=f"{id}.txt",
        kind=AttachmentKind.TEXT,
        mime_type="text/plain",
        size=len(id),
        path=str(saved),
        workspace_path=str(workspace) if copy else None,
        created_at=created_at,
    )


def _present(*paths: str | None) -> list[bool]:
    return [Path(p or "").is_file() for p in paths]


def _remove(path: str | None) -> None:
    Path(path or "").unlink()


async def test_recorded_rows_are_found_by_id_session_and_turn(
    place: StorePlace, tmp_path: Path
) -> None:
    a = _record(tmp_path, "a1", created_at=1.0)
    b = _record(tmp_path, "b2", created_at=2.0, copy=False)
    other = _record(tmp_path, "c3", session="telegram.main:2", conversation="2")
    async with await place.open() as store:
        for record in (b, a, other):
            await store.attachments.record(record)
    async with await place.open() as store:  # kept across a restart
        assert await store.attachments.get("a1") == a
        assert await store.attachments.get("nope") is None
        assert await store.attachments.of_session("telegram.main:1") == [a, b]
        assert await store.attachments.of_turn("turn-c3") == [other]


async def test_delete_older_than_takes_rows_and_both_files(store: Store, tmp_path: Path) -> None:
    old = _record(tmp_path, "old", created_at=100.0)
    new = _record(tmp_path, "new", created_at=200.0)
    await store.attachments.record(old)
    await store.attachments.record(new)
    _remove(old.workspace_path)  # the model deleted its copy: no error
    assert await store.attachments.delete_older_than(150.0) == 1
    assert await store.attachments.get("old") is None
    assert await store.attachments.get("new") == new
    assert _present(old.path, new.path, new.workspace_path) == [False, True, True]
    assert await store.attachments.delete_older_than(150.0) == 0


async def test_forgetting_a_user_a_conversation_or_a_session(store: Store, tmp_path: Path) -> None:
    mine = _record(tmp_path, "m", user="u1", conversation="1")
    theirs = _record(tmp_path, "t", user="u2", conversation="1")
    elsewhere = _record(tmp_path, "e", user="u2", conversation="9", session="telegram.main:9")
    thread = _record(tmp_path, "th", user="u3", conversation="9", session="telegram.main:9:7")
    for record in (mine, theirs, elsewhere, thread):
        await store.attachments.record(record)
    assert await store.attachments.delete_for_user("telegram.main", "u1") == 1
    assert _present(mine.path, mine.workspace_path) == [False, False]
    assert await store.attachments.delete_for_user("slack.main", "u2") == 0
    assert await store.attachments.delete_for_conversation("telegram.main", "1") == 1
    assert await store.attachments.get("t") is None
    assert await store.attachments.get("e") == elsewhere
    assert _present(elsewhere.path) == [True]
