"""Memory notes on both engines (a real SQLite file: FTS5 and bm25; a real PostgreSQL database:
tsvector and ts_rank): ranking, scope isolation, search syntax made inert."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from bot.config import MemoryToolConfig
from bot.store import Store
from bot.store.postgres.memory_search import ts_query
from bot.store.sqlite.memory_search import fts_query
from bot.tools.builtin.memory import memory_recall_tool, memory_store_tool
from bot.tools.builtin.observation import ToolFailed
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolSpec
from tests.tools.builtin.conftest import make_context


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        opened = await Store.open(tmp_path / "hatchway.db")
    else:
        opened = await Store.open_postgres(str(request.getfixturevalue("pg_url")))
    async with opened:
        yield opened


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


def test_policy_fields(store: Store) -> None:
    stored = memory_store_tool(store.memory, MemoryToolConfig())
    recalled = memory_recall_tool(store.memory, MemoryToolConfig())
    assert stored.requires_approval is False and stored.kind is ToolKind.WRITE
    assert recalled.requires_approval is False and recalled.kind is ToolKind.READ_ONLY


async def test_recall_ranks_the_best_note_first(store: Store, context: ToolContext) -> None:
    cfg = MemoryToolConfig()
    save, recall = memory_store_tool(store.memory, cfg), memory_recall_tool(store.memory, cfg)
    notes = [
        ("The office wifi password is on the fridge", ["office"]),
        ("Deploys happen on Tuesday after standup", ["deploy"]),
        ("The deploy key for staging rotates monthly; staging deploy needs VPN", ["staging"]),
        ("Lunch order: pizza on Fridays", []),
    ]
    ids = []
    for content, tags in notes:
        text = await call(save, {"content": content, "tags": tags}, context)
        ids.append(int(text.removeprefix("stored note #")))
    found = (await call(recall, {"query": "staging deploy"}, context)).splitlines()
    assert found[0].startswith(f"[#{ids[2]}] The deploy key for staging")
    assert found[1].startswith(f"[#{ids[1]}] Deploys happen")
    assert len(found) == 2
    assert (await call(recall, {"query": "pizza"}, context)).startswith(f"[#{ids[3]}]")
    assert await call(recall, {"query": "kubernetes"}, context) == "no matching notes"


async def test_tags_are_searchable(store: Store, context: ToolContext) -> None:
    cfg = MemoryToolConfig()
    await call(memory_store_tool(store.memory, cfg), {"content": "x", "tags": ["billing"]}, context)
    text = await call(memory_recall_tool(store.memory, cfg), {"query": "billing"}, context)
    assert text.endswith("x (tags: billing)")


@pytest.mark.parametrize(
    ("scope", "visible_to"),
    [
        ("channel", [("slack.team", "C-OTHER", True), ("slack.other", "C-ORIGIN", False)]),
        ("conversation", [("slack.team", "C-OTHER", False), ("slack.team", "C-ORIGIN", True)]),
        ("conversation", [("slack.other", "C-ORIGIN", False)]),
        ("agent", [("slack.team", "C-OTHER", True), ("telegram.main", "42", True)]),
        ("shared", [("slack.team", "C-OTHER", True), ("discord.guild", "7", True)]),
    ],
)
async def test_scope_isolation(
    store: Store, scope: str, visible_to: list[tuple[str, str, bool]]
) -> None:
    cfg = MemoryToolConfig.model_validate({"scope": scope})
    writer = make_context(channel="slack.team", conversation="C-ORIGIN")
    await call(memory_store_tool(store.memory, cfg), {"content": "the build uses bazel"}, writer)
    recall = memory_recall_tool(store.memory, cfg)
    for channel, conversation, visible in visible_to:
        reader = make_context(channel=channel, conversation=conversation)
        for query in ("bazel", ""):
            text = await call(recall, {"query": query}, reader)
            assert ("bazel" in text) is visible, (channel, conversation, query)


async def test_default_scope_is_the_conversation_threads_and_schedules_included(
    store: Store,
) -> None:
    cfg = MemoryToolConfig()
    assert cfg.scope == "conversation"
    writer = make_context(conversation="C-ORIGIN", thread="T-9")
    await call(memory_store_tool(store.memory, cfg), {"content": "standup at nine"}, writer)
    recall = memory_recall_tool(store.memory, cfg)
    same_room = [
        make_context(conversation="C-ORIGIN"),
        make_context(conversation="C-ORIGIN", thread="T-other"),
        make_context(conversation="C-ORIGIN", background=True),
    ]
    for reader in same_room:
        assert "standup" in await call(recall, {"query": "standup"}, reader)
    other_room = make_context(conversation="C-OTHER")
    assert await call(recall, {"query": "standup"}, other_room) == "no matching notes"


async def test_agent_and_shared_notes_are_kept_apart(store: Store, context: ToolContext) -> None:
    agent = MemoryToolConfig(scope="agent")
    shared = MemoryToolConfig(scope="shared")
    await call(memory_store_tool(store.memory, agent), {"content": "agent fact"}, context)
    await call(memory_store_tool(store.memory, shared), {"content": "shared fact"}, context)
    assert "shared" not in await call(memory_recall_tool(store.memory, agent), {}, context)
    assert "agent" not in await call(memory_recall_tool(store.memory, shared), {}, context)


async def test_notes_of_an_older_scope_are_counted(store: Store) -> None:
    await store.memory.add(scope_key="channel:slack.team", content="from before scopes")
    await store.memory.add(scope_key="conversation:slack.team:C1", content="kept")
    await store.memory.add(scope_key="conversation:slack.team:C2", content="kept too")
    assert await store.memory.count_outside("conversation:") == 1
    assert await store.memory.count_outside("channel:") == 2
    # LIKE wildcards in the prefix match only themselves
    assert await store.memory.count_outside("c%") == 3
    assert await store.memory.count_outside("conversation_") == 3


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "deploy AND OR NOT",
        "content:deploy",
        "*",
        "NEAR(deploy key)",
        "-deploy",
        "deploy^2",
        "tags : x",
        "'; DROP TABLE memory; --",
        "(((",
        "deploy & key | !rotates",
        "deploy:* <-> key",
        "\\' deploy",
        "deploy:A",
    ],
)
async def test_fts_syntax_in_queries_is_inert(
    store: Store, context: ToolContext, query: str
) -> None:
    cfg = MemoryToolConfig()
    await call(memory_store_tool(store.memory, cfg), {"content": "deploy key rotates"}, context)
    text = await call(memory_recall_tool(store.memory, cfg), {"query": query}, context)
    assert text.startswith("[#") or text == "no matching notes"
    assert (await store.memory.recent(scope_key="conversation:slack.team:C-ORIGIN"))[0].content


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("staging deploy", '"staging" OR "deploy"'),
        ('say "hi" AND bye', '"say" OR "hi" OR "and" OR "bye"'),
        ("***", ""),
        ("Déjà vu", '"déjà" OR "vu"'),
    ],
)
def test_fts_query_table(text: str, expected: str) -> None:
    assert fts_query(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("staging deploy", "'staging' | 'deploy'"),
        ("it's deploy & !key", "'it' | 's' | 'deploy' | 'key'"),
        ("***", ""),
        ("Déjà vu", "'déjà' | 'vu'"),
    ],
)
def test_ts_query_table(text: str, expected: str) -> None:
    assert ts_query(text) == expected


async def test_words_are_found_inside_names_and_numbers(store: Store, context: ToolContext) -> None:
    """Both engines split words alike: a file name or a version holds its words."""
    cfg = MemoryToolConfig()
    save, recall = memory_store_tool(store.memory, cfg), memory_recall_tool(store.memory, cfg)
    await call(save, {"content": "run deploy.sh on build-server v2.1 (see ops_notes)"}, context)
    for query in ("deploy", "server", "v2", "1", "ops_notes", "DEPLOY.SH", "Build"):
        assert (await call(recall, {"query": query}, context)).startswith("[#"), query
    assert await call(recall, {"query": "dep"}, context) == "no matching notes"


async def test_secrets_are_scrubbed_before_storing(store: Store, context: ToolContext) -> None:
    cfg = MemoryToolConfig()
    await call(
        memory_store_tool(store.memory, cfg),
        {"content": "our key is sk-abcdefghijklmnopqrstuvwx"},
        context,
    )
    (note,) = await store.memory.recent(scope_key="conversation:slack.team:C-ORIGIN")
    assert "sk-abcdefghijklmnopqrstuvwx" not in note.content and "***" in note.content


async def test_note_size_limit(store: Store, context: ToolContext) -> None:
    spec = memory_store_tool(store.memory, MemoryToolConfig(max_note_chars=100))
    with pytest.raises(ToolFailed, match="limit is 100"):
        await call(spec, {"content": "x" * 101}, context)


async def test_delete_is_scoped(store: Store) -> None:
    note_id = await store.memory.add(scope_key="channel:a", content="alpha note")
    assert await store.memory.delete(scope_key="channel:b", note_id=note_id) is False
    assert await store.memory.delete(scope_key="channel:a", note_id=note_id) is True
    assert await store.memory.search(scope_key="channel:a", query="alpha") == []
