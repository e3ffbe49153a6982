"""The full view of an approval request on Discord: every character, then its own buttons.

"🔎 Show full and decide" is answered with ephemeral messages only the presser sees. They hold
:attr:`~bot.channel.ApprovalCard.full_text` whole — every argument, secret values masked,
invisible characters escaped, line breaks shown as ``⏎`` — in code blocks, where nothing is
markup (a run of three backticks is broken by zero-width spaces, the one thing a code block
cannot show as written). The text is split across up to :data:`MAX_PARTS` messages of at most
2,000 characters, at line ends where it can; a line longer than a message is cut, and the
message says that it goes on in the next one. Longer than that, the view is one message with
the whole request attached as a UTF-8 ``.txt`` file. The last message carries Approve / Deny
/ Always buttons that answer with ``full_view=True``
(:class:`~channels.discord.buttons.FullViewButton`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import discord

from bot.channel import ApprovalCard
from channels.discord.buttons import CHOICES, FullViewButton
from channels.discord.cards import shown
from channels.discord.client import ButtonPress
from channels.discord.markup import MESSAGE_LIMIT, code_text, escape_text, fenced

MAX_PARTS = 4
GOES_ON = "↪ The last line goes on in the next part."
DECIDE = "That is the whole request. Decide with the buttons below."
#: Below this many characters of room for code in a message, the text goes in a file.
_MIN_CODE_ROOM = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class FullViewPart:
    """One ephemeral message of a full view: its text and, when the request is too long to
    show in messages, the whole request as a file (``file_name``, ``file_text``)."""

    content: str
    file_name: str | None = None
    file_text: str = ""

    def file(self) -> discord.File | None:
        if self.file_name is None:
            return None
        return discord.File(io.BytesIO(self.file_text.encode()), filename=self.file_name)


@dataclass(frozen=True, slots=True)
class _Piece:
    code: str
    goes_on: bool  # its last line is cut and goes on in the next piece


def _split(code: str, room: int) -> list[_Piece]:
    """``code`` in pieces of at most ``room`` characters, at line ends where a line fits."""
    pieces: list[_Piece] = []
    block: list[str] = []
    size = 0
    for line in code.split("\n"):
        while len(line) > room:
            if block:
                pieces.append(_Piece("\n".join(block), goes_on=False))
                block, size = [], 0
            pieces.append(_Piece(line[:room], goes_on=True))
            line = line[room:]
        if block and size + 1 + len(line) > room:
            pieces.append(_Piece("\n".join(block), goes_on=False))
            block, size = [], 0
        size += len(line) + (1 if block else 0)
        block.append(line)
    pieces.append(_Piece("\n".join(block), goes_on=False))
    return pieces


def _head(card: ApprovalCard, part: int = 1, parts: int = 1) -> str:
    numbered = f" — part {part} of {parts}" if parts > 1 else ""
    return f"**{escape_text(f'🔎 Full request: {card.tool}')}**{escape_text(numbered)}"


def _tail(card: ApprovalCard) -> str:
    lines = (f"Why: {card.reason}", f"Asked by: {card.requested_by}", DECIDE)
    return "\n".join(escape_text(line) for line in lines)


def full_view_parts(card: ApprovalCard) -> tuple[FullViewPart, ...]:
    """The messages of ``card``'s full view, each within 2,000 characters."""
    card = shown(card)
    code = code_text(card.full_text or "\n".join(card.lines))
    tail = _tail(card)
    overhead = len(_head(card, MAX_PARTS, MAX_PARTS)) + len(fenced("")) + 2
    room = MESSAGE_LIMIT - overhead - max(len(tail), len(escape_text(GOES_ON)))
    pieces = _split(code, room) if room >= _MIN_CODE_ROOM else []
    if not pieces or len(pieces) > MAX_PARTS:
        return (_attached(card, tail),)
    parts: list[FullViewPart] = []
    for number, piece in enumerate(pieces, start=1):
        last = number == len(pieces)
        after = tail if last else escape_text(GOES_ON) if piece.goes_on else ""
        body = [_head(card, number, len(pieces)), fenced(piece.code), after]
        parts.append(FullViewPart(content="\n".join(line for line in body if line)))
    return tuple(parts)


def _attached(card: ApprovalCard, tail: str) -> FullViewPart:
    name = f"request-{card.approval_id}.txt"
    text = card.render_full_text()
    note = (
        f"This request is {len(card.full_text):,} characters long, too long to show here: "
        f"every character of it is in the attached file {name}."
    )
    content = "\n".join([_head(card), escape_text(note), tail])
    return FullViewPart(content=content, file_name=name, file_text=text + "\n")


def full_view_buttons(approval_id: str, card_message_id: int | None) -> discord.ui.View:
    """Approve / Deny / Always for the full view of the card ``card_message_id``. Stopped:
    discord.py keeps nothing in memory; the buttons are routed by their ids."""
    view = discord.ui.View(timeout=None)
    for choice in CHOICES:
        press = ButtonPress(
            approval_id=approval_id,
            choice=choice,
            full_view=True,
            card_message_id=card_message_id,
        )
        view.add_item(FullViewButton(press))
    view.stop()
    return view
