"""Log masking reaches tracebacks: the real ``configure_logging`` writing to a StringIO, an
exception carrying secrets logged through structlog and through stdlib loggers (the SDKs'),
in both renderers."""

from __future__ import annotations

import io
import json
import logging
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
import structlog

from bot.ops import logs
from bot.ops.logs import configure_logging, open_log_file
from bot.scrub import register_secret

REGISTERED = "vault-9f3c1d7e2a-registered"
SLACK_TOKEN = "xoxb-1111-2222-leakedleakedleaked"

Format = Literal["json", "console"]


@pytest.fixture
def logged() -> Iterator[Callable[[Format], io.StringIO]]:
    """``configure_logging`` into a StringIO; root logging and structlog restored after."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_config = structlog.get_config()
    register_secret(REGISTERED)

    def configure(fmt: Format) -> io.StringIO:
        out = io.StringIO()
        configure_logging("info", fmt, out)
        return out

    yield configure
    root.handlers, root.level = saved_handlers, saved_level
    structlog.configure(**saved_config)


def _fail_with_secrets() -> None:
    try:
        raise KeyError(f"cause held {REGISTERED}")
    except KeyError as cause:
        # the token is literal so that the frame's source line carries it too
        raise RuntimeError(f"said {REGISTERED}, xoxb-1111-2222-leakedleakedleaked") from cause


def _log_structlog_exception() -> None:
    try:
        _fail_with_secrets()
    except RuntimeError:
        structlog.get_logger("bot.test").exception("turn_failed")


def _log_structlog_exc_info_instance() -> None:
    try:
        _fail_with_secrets()
    except RuntimeError as exc:
        error = exc
    structlog.get_logger("bot.test").error("turn_failed", exc_info=error)


def _log_telegram_exception() -> None:
    try:
        _fail_with_secrets()
    except RuntimeError:
        logging.getLogger("telegram.ext").exception("turn_failed")


def _log_discord_exc_info() -> None:
    try:
        _fail_with_secrets()
    except RuntimeError:
        logging.getLogger("discord").error("turn_failed", exc_info=True)


def _log_stdlib_exc_info_tuple() -> None:
    try:
        _fail_with_secrets()
    except RuntimeError:
        logging.getLogger("slack_bolt").warning("turn_failed", exc_info=sys.exc_info())


LOGGERS = [
    _log_structlog_exception,
    _log_structlog_exc_info_instance,
    _log_telegram_exception,
    _log_discord_exc_info,
    _log_stdlib_exc_info_tuple,
]


def _assert_masked_traceback(text: str) -> None:
    assert REGISTERED not in text
    assert SLACK_TOKEN not in text
    assert "***" in text
    assert "Traceback (most recent call last)" in text
    assert "in _fail_with_secrets" in text
    assert "RuntimeError: said ***" in text
    assert "KeyError" in text
    assert "The above exception was the direct cause" in text


@pytest.mark.parametrize("log_it", LOGGERS, ids=lambda f: f.__name__.removeprefix("_log_"))
def test_json_exception_field_is_masked(
    logged: Callable[[Format], io.StringIO], log_it: Callable[[], None]
) -> None:
    out = logged("json")
    log_it()
    (line,) = out.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "turn_failed"
    assert "exc_info" not in event
    _assert_masked_traceback(event["exception"])
    _assert_masked_traceback(line)


@pytest.mark.parametrize("log_it", LOGGERS, ids=lambda f: f.__name__.removeprefix("_log_"))
def test_console_traceback_is_masked(
    logged: Callable[[Format], io.StringIO], log_it: Callable[[], None]
) -> None:
    out = logged("console")
    log_it()
    text = out.getvalue()
    assert text.splitlines()[0].endswith("turn_failed")
    _assert_masked_traceback(text)


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_stacks_are_masked_too(logged: Callable[[Format], io.StringIO], fmt: Format) -> None:
    out = logged(fmt)
    logging.getLogger("discord").warning("stack_dump %s", REGISTERED, stack_info=True)
    structlog.get_logger("bot.test").warning("stack_dump", note=REGISTERED, stack_info=True)
    text = out.getvalue()
    assert REGISTERED not in text
    assert text.count("Stack (most recent call last)") == 2
    assert "in test_stacks_are_masked_too" in text
    if fmt == "json":
        events = [json.loads(line) for line in text.splitlines()]
        assert [e["event"] for e in events] == ["stack_dump ***", "stack_dump"]
        assert all("stack" in e and "stack_info" not in e for e in events)
        # the stack starts at the caller, not inside the logging machinery
        assert "bot/ops/logs.py" not in events[1]["stack"]


def test_other_fields_are_still_masked(logged: Callable[[Format], io.StringIO]) -> None:
    out = logged("json")
    structlog.get_logger("bot.test").info("called", detail=f"sent {SLACK_TOKEN}", api_key="k")
    event = json.loads(out.getvalue())
    assert event["detail"] == "sent ***"
    assert event["api_key"] == "***"


def test_a_logged_password_is_masked_past_metacharacters() -> None:
    """Logs mask greedily: a password holding ``$`` or ``;`` is masked whole there, while an
    approval card stops at the metacharacter (it must show what runs)."""
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    structlog.get_logger("t").info("connecting", dsn="host=db password=pa$$w;rd user=app")
    assert "w;rd" not in out.getvalue() and "pa$$" not in out.getvalue()


def test_a_log_file_is_the_owners_alone_and_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "state" / "hatchway-chat.log"
    with open_log_file(path) as first:
        first.write("one\n")
    path.chmod(0o644)  # as a hand-made or older file may be
    with open_log_file(path) as second:
        second.write("two\n")
    assert path.read_text() == "one\ntwo\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_log_file_past_its_limit_is_moved_aside_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "LOG_FILE_LIMIT_BYTES", 10)
    path = tmp_path / "chat.log"
    path.write_text("x" * 11)
    (tmp_path / "chat.log.1").write_text("oldest")
    with open_log_file(path) as log_file:
        log_file.write("new\n")
    assert path.read_text() == "new\n"
    assert (tmp_path / "chat.log.1").read_text() == "x" * 11


def test_events_written_to_a_log_file_are_json_lines(
    tmp_path: Path, logged: Callable[[Format], io.StringIO]
) -> None:
    logged("json")  # saves and restores the logging set-up around this test
    path = tmp_path / "chat.log"
    with open_log_file(path) as log_file:
        configure_logging("info", "auto", log_file)
        structlog.get_logger("bot.test").warning("provider_gave_up", provider="default")
    (event,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert event["event"] == "provider_gave_up" and event["level"] == "warning"
