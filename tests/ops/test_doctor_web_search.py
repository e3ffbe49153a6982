"""``hatchway doctor`` checks ``[tools.web_search]`` against loopback fakes of SearXNG and
Brave Search: JSON enabled, the limiter passed, the key accepted, and what to fix when not."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import build_parser
from tests.fakes.search_servers import FakeBrave, FakeSearxng

KEY = "BSAdoctor-brave-token-987654"


def config(tmp_path: Path, web_search: str) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n\n[tools.web_search]\n{web_search}\n',
        encoding="utf-8",
    )
    return path


async def doctor_line(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """The exit status and the web search line with its fix line, if any."""
    args = build_parser().parse_args(["doctor", "--config", str(path)])
    code = await args.handler(args)
    lines = capsys.readouterr().out.splitlines()
    at = next(n for n, line in enumerate(lines) if line[2:].startswith("web search:"))
    return code, lines[at : at + 2]


@pytest.mark.parametrize(
    ("formats", "limiter", "expected", "fix"),
    [
        (("html", "json"), False, "✓ web search: SearXNG at {url} answers JSON (1 result for", ""),
        (("html",), False, "✗ web search: the SearXNG instance does not answer in JSON", "json"),
        (("html", "json"), True, "✗ web search: the SearXNG instance's limiter refused", "pass_ip"),
    ],
)
async def test_searxng(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    formats: tuple[str, ...],
    limiter: bool,
    expected: str,
    fix: str,
) -> None:
    async with FakeSearxng(formats=formats, limiter=limiter) as fake:
        path = config(tmp_path, f'backend = "searxng"\nurl = "{fake.base_url}"')
        code, (line, after) = await doctor_line(path, capsys)
        assert fake.asked[0].params["format"] == "json"
    assert line.startswith(expected.format(url=fake.base_url)), line
    if fix:
        assert code == 1 and after.startswith("    fix: ") and fix in after


async def test_brave_key_accepted_refused_or_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeBrave(KEY) as fake:
        path = config(tmp_path, f'backend = "brave"\nurl = "{fake.base_url}"')
        monkeypatch.setenv("BRAVE_SEARCH_API_KEY", KEY)
        _, (line, _) = await doctor_line(path, capsys)
        assert line == (
            f"✓ web search: Brave Search at {fake.base_url} accepts the key in BRAVE_SEARCH_API_KEY"
        )
        monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "BSAwrong-0000000000")
        code, (line, after) = await doctor_line(path, capsys)
        assert code == 1
        assert line == (
            "✗ web search: Brave Search refused the API key (HTTP 422, SUBSCRIPTION_TOKEN_INVALID)"
        )
        assert after == (
            "    fix: put a valid Brave Search API key into BRAVE_SEARCH_API_KEY "
            "(tools.web_search.api_key_env)"
        )
        monkeypatch.delenv("BRAVE_SEARCH_API_KEY")
        asked = len(fake.asked)
        code, (line, after) = await doctor_line(path, capsys)
        assert code == 1 and "needs an API key" in line and "BRAVE_SEARCH_API_KEY" in after
        assert len(fake.asked) == asked  # nothing was asked without a key
