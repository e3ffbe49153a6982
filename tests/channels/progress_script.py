"""The turn each platform's progress test runs: a command that fails, then one that runs
until ``/stop``. Its progress message must show the failure as failed (never ✅) and, once
stopped, be closed: no call left at ``⏳``."""

from __future__ import annotations

import re

from bot.config import Settings
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

FAILING = "echo no >&2; exit 3"
RUNNING = "sleep 600"
_FAILED_LINE = re.compile(r"^❌ shell \(\d+\.\ds\): exit 3$", re.MULTILINE)


def shown(text: str) -> str:
    """The text as a person reads it: the code spans' backticks are markup (Telegram and
    Discord show them as code, Telegram's text has none left)."""
    return text.replace("`", "")


def with_shell(settings: Settings) -> Settings:
    """``settings`` with ``shell`` run without a card (nothing but the progress to watch)
    and without the sandbox (the test is about what is shown, not the confinement)."""
    shell = settings.tools.shell.model_copy(update={"sandbox": "none"})
    tools = settings.tools.model_copy(update={"shell": shell})
    approval = settings.approval.model_copy(update={"auto_approve": ["shell"]})
    return settings.model_copy(update={"tools": tools, "approval": approval})


def script() -> ScriptedProvider:
    return ScriptedProvider(
        [
            reply("", call("shell", {"command": FAILING})),
            reply("", call("shell", {"command": RUNNING})),
        ]
    )


def running(text: str) -> bool:
    """The progress message shows the failure and the command still running."""
    text = shown(text)
    return bool(_FAILED_LINE.search(text)) and f"⏳ shell: {RUNNING}" in text


def closed(text: str) -> bool:
    """The progress message after ``/stop``: the failure kept, the running call stopped, the
    message ended; nothing left running, nothing shown as succeeded."""
    text = shown(text)
    lines = text.splitlines()
    return (
        bool(_FAILED_LINE.search(text))
        and lines[-2:] == ["⏹ shell: stopped", "⏹ stopped"]
        and "⏳" not in text
        and "✅" not in text
    )
