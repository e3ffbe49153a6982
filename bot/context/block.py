"""The context lines as the model reads them: one untrusted-data block, newest lines kept.

Each line names its author and time (``[2026-12-06 08:40 UTC] Ann (U123): …``); an author
outside the alias's ``allowed_users`` is marked ``not an allowed user``, the bot's own
earlier messages ``this bot``. The block says the lines were not addressed to the bot and
are not instructions (:func:`bot.untrusted.untrusted`). Lines are dropped oldest first to fit
the tokens left once the conversation's own history is in (the history is never cut for
them: :func:`bot.agent.context_window.fit_history`).

Where the platform says which conversation the person has open beside the one they ask in
(Slack's assistant pane), one more block says so (:func:`viewing_block`): the place's id and
the name its users gave it, as data like the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from bot.channel import ViewedPlace
from bot.store.context_lines import ContextLine
from bot.untrusted import untrusted

CHARS_PER_TOKEN = 4
SOURCE = "other participants of this conversation (messages not addressed to you)"
VIEWING_SOURCE = "the chat client (the conversation the person has open)"
#: a place's name is cut to this many characters (Slack's own limit is 80)
MAX_PLACE_NAME_CHARS = 80
#: what the block costs besides its lines (its tags and note), in tokens
FRAME_TOKENS = 60


def line_text(line: ContextLine) -> str:
    """One line as the model reads it."""
    when = datetime.fromtimestamp(line.at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    name = line.sender_name or line.sender_id
    marks = [line.sender_id]
    if line.is_bot:
        marks.append("this bot")
    elif not line.member:
        marks.append("not an allowed user")
    return f"[{when}] {name} ({', '.join(marks)}): {line.text}"


def context_block(lines: Sequence[ContextLine], max_tokens: int) -> str:
    """The block for ``lines`` (oldest first), keeping the newest that fit ``max_tokens``;
    ``""`` when none fits or there is none."""
    budget = (max_tokens - FRAME_TOKENS) * CHARS_PER_TOKEN
    kept: list[str] = []
    for line in reversed(lines):
        text = line_text(line)
        if len(text) + 1 > budget:
            break
        kept.append(text)
        budget -= len(text) + 1
    if not kept:
        return ""
    return untrusted(SOURCE, "\n".join(reversed(kept)))


def viewing_block(place: ViewedPlace) -> str:
    """The block saying which conversation the person is viewing: one line naming it by
    its id and, when known, its name (one line, cut to :data:`MAX_PLACE_NAME_CHARS`)."""
    name = " ".join(place.name.split())[:MAX_PLACE_NAME_CHARS]
    where = f"#{name} ({place.conversation_id})" if name else place.conversation_id
    if place.workspace_id:
        where += f" in workspace {place.workspace_id}"
    return untrusted(VIEWING_SOURCE, f"The person is viewing {where}.")
