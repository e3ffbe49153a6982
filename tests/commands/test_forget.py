"""``hatchway forget`` against a real database file and workspace: through the real parser
and handler (:func:`bot.cli.main`, on a thread of its own with its own event loop, as a
separate process would run it), what it prints and what is left afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import load_settings
from bot.store import Store
from bot.tools.builtin.scopes import scope_folder
from tests.store.records import audit_row, count, envelope, turn

ANN, BOB, GROUP = "1001", "2002", "-100"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f'state_dir = "{tmp_path}"\n\n[channels.telegram.main]\nallowed_users = ["*"]\n'
        '\n[channels.slack.team]\nallowed_users = ["*"]\n',
        encoding="utf-8",
    )
    return path


async def hatchway(
    config: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*args, "--config", str(config)])
    out, err = capsys.readouterr()
    return code, out, err


async def records(config: Path) -> tuple[Store, Path]:
    """Ann and Bob in a group, Ann in her DM with a file in its workspace folder."""
    settings = load_settings(config, require_provider=False, environ={})
    store = await Store.open(settings.database_path())
    await turn(store, envelope(ANN, GROUP, "1", text="ann's"))
    await turn(store, envelope(BOB, GROUP, "2", text="bob's"))
    await turn(store, envelope(ANN, ANN, "3", text="private", direct=True))
    await audit_row(store, requester=ANN, decided_by=BOB, at=10.0)
    root = Path(settings.state_dir) / settings.tools.workspace.path
    folder = root / scope_folder("conversation", channel="telegram.main", conversation_id=ANN)
    await asyncio.to_thread(folder.mkdir, parents=True)
    await asyncio.to_thread((folder / "notes.txt").write_text, "ann's notes")
    return store, folder


@pytest.mark.usefixtures("kept_logging")
async def test_forget_a_user(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, folder = await records(config)
    async with store:
        code, out, _err = await hatchway(config, capsys, "forget", "--user", ANN, "--yes")
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == f"forgot user {ANN} on every channel"
        assert lines[1].startswith("tombstone: forgotten:")
        assert "  messages             8" in lines
        assert "  inbox                2" in lines
        assert "  workspace files      1" in lines
        assert "  audit                1" in lines
        assert await count(store, "SELECT COUNT(*) FROM inbox WHERE sender_id = ?", (ANN,)) == 0
        assert await count(store, "SELECT COUNT(*) FROM inbox WHERE sender_id = ?", (BOB,)) == 1
        assert await count(store, "SELECT COUNT(*) FROM audit WHERE requester = ?", (ANN,)) == 0
        assert await count(store, "SELECT COUNT(*) FROM audit") == 1
        assert not await asyncio.to_thread(folder.exists)


@pytest.mark.usefixtures("kept_logging")
async def test_forget_a_conversation_needs_its_channel(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _folder = await records(config)
    async with store:
        code, out, err = await hatchway(config, capsys, "forget", "--conversation", GROUP)
        assert (code, out) == (2, "")
        assert "--channel" in err and "slack.team, telegram.main" in err
        assert await count(store, "SELECT COUNT(*) FROM messages") == 12

        code, out, _err = await hatchway(
            config, capsys, "forget", "--conversation", GROUP, "--channel", "telegram.main", "-y"
        )
        assert code == 0
        assert out.startswith(f"forgot conversation {GROUP} on telegram.main")
        assert "  messages             8" in out.splitlines()
        assert await count(store, "SELECT COUNT(*) FROM messages") == 4  # Ann's DM is another
        assert await count(store, "SELECT COUNT(*) FROM audit") == 1


def test_user_or_conversation_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["forget"])
    assert "one of the arguments --user --conversation is required" in capsys.readouterr().err


def section_names(out: str) -> list[str]:
    """The report's shape: its lines without the counts and ids."""
    return [line.split()[0] if line.startswith("  ") else line for line in out.splitlines()]


@pytest.mark.usefixtures("kept_logging")
async def test_a_dry_run_shows_what_would_go_and_deletes_nothing(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, folder = await records(config)
    async with store:
        code, out, _err = await hatchway(config, capsys, "forget", "--user", ANN, "--dry-run")
        assert code == 0
        lines = out.splitlines()
        assert lines[:3] == [
            f"would forget user {ANN} on every channel",
            "tombstone: none yet (dry run)",
            "would remove:",
        ]
        assert "  messages             8" in lines and "  workspace files      1" in lines
        assert "  audit                1" in lines  # kept, the id replaced
        assert await count(store, "SELECT COUNT(*) FROM inbox WHERE sender_id = ?", (ANN,)) == 2
        assert await count(store, "SELECT COUNT(*) FROM audit WHERE requester = ?", (ANN,)) == 1
        assert await count(store, "SELECT COUNT(*) FROM messages") == 12
        assert await asyncio.to_thread(folder.exists)
        # what the dry run said is what the real run does
        code, done, _err = await hatchway(config, capsys, "forget", "--user", ANN, "--yes")
        assert code == 0
        assert done.splitlines()[2:] == ["removed:", *lines[3:]]


@pytest.mark.usefixtures("kept_logging")
async def test_without_a_terminal_or_yes_it_prints_the_dry_run_and_exits_1(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, folder = await records(config)
    async with store:
        code, out, err = await hatchway(config, capsys, "forget", "--user", ANN)
        assert code == 1
        assert out.startswith(f"would forget user {ANN}") and "--yes" in err
        assert await count(store, "SELECT COUNT(*) FROM inbox WHERE sender_id = ?", (ANN,)) == 2
        assert await asyncio.to_thread(folder.exists)


@pytest.mark.usefixtures("kept_logging")
async def test_the_report_has_one_shape(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, _folder = await records(config)
    async with store:
        _code, nobody, _err = await hatchway(config, capsys, "forget", "--user", "nobody", "--yes")
        _code, ann, _err = await hatchway(config, capsys, "forget", "--user", ANN, "--yes")
        _code, room, _err = await hatchway(
            config, capsys, "forget", "--conversation", GROUP, "--channel", "slack.team", "-y"
        )
    assert section_names(nobody)[2:] == section_names(ann)[2:]  # zeros are listed too
    assert nobody.splitlines()[-1] == "left: 0 messages still waiting for or in their turn"
    shape = section_names(room)
    assert shape[0].startswith("forgot conversation") and shape[2] == "removed:"
    assert "kept, the id replaced by the tombstone:" in shape
    tables = shape[3 : shape.index("kept, the id replaced by the tombstone:")]
    assert tables == sorted(tables)
