"""Lone UTF-16 surrogates in model output, replaced with U+FFFD at the provider boundary.

A model cut off mid-emoji, or a server that splits a surrogate pair across two stream events,
sends JSON escapes such as ``"\\ud83d"`` with no partner. Python decodes them into lone
surrogate code points, which UTF-8 cannot encode: the history write and the approval
fingerprint would raise ``UnicodeEncodeError`` and fail the whole turn. So every provider
passes its reply through :func:`clean_reply` and its streamed text through
:class:`DeltaRepair`; nothing behind the :class:`~bot.providers.base.Provider` protocol ever
sees a lone surrogate.

Repair keeps every valid pair (a pair split across two pieces is joined back into its
character) and replaces each surrogate without a partner with U+FFFD. Tool-call arguments are
repaired twice over: the raw JSON text, and the values it decodes to (an escape ``\\ud83d``
inside the arguments is plain ASCII until the tool pipeline parses it).

Cost: clean text pays one ``str.encode`` (and, for arguments, one substring test); only text
that fails it is rebuilt.
"""

from __future__ import annotations

import dataclasses
import json
import re

from bot.providers.base import ProviderReply, ToolCallRequest

REPLACEMENT = "\ufffd"

# a JSON escape of a UTF-16 surrogate (high D800–DBFF or low DC00–DFFF)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def clean_text(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 with surrogatepass keeps every code unit as it is; decoding joins the valid
        # pairs and replaces each unpaired unit.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_value(value: object) -> object:
    """A decoded JSON value with every string (keys included) passed through
    :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def clean_arguments(raw: str) -> str:
    """Raw tool-call arguments whose text and decoded values are free of lone surrogates.

    The text is kept as it is unless a surrogate escape inside it decodes to a lone
    surrogate; then the repaired value is serialised again. Text that is not JSON is left for
    the tool pipeline to refuse (its escapes are plain ASCII).
    """
    raw = clean_text(raw)
    if "\\u" not in raw or _SURROGATE_ESCAPE.search(raw) is None:
        return raw
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    repaired = clean_value(parsed)
    if repaired == parsed:  # only valid pairs were escaped
        return raw
    return json.dumps(repaired, ensure_ascii=False)


def clean_call(call: ToolCallRequest) -> ToolCallRequest:
    """``call`` with its id, name and arguments repaired; the same object when clean."""
    call_id, name = clean_text(call.id), clean_text(call.name)
    arguments = clean_arguments(call.arguments)
    if call_id is call.id and name is call.name and arguments is call.arguments:
        return call
    return ToolCallRequest(id=call_id, name=name, arguments=arguments)


def clean_reply(reply: ProviderReply) -> ProviderReply:
    """``reply`` with its text and tool calls repaired; the same object when clean."""
    text = clean_text(reply.text)
    calls = tuple(clean_call(call) for call in reply.tool_calls)
    model = clean_text(reply.model)
    finish_reason = clean_text(reply.finish_reason)
    if (
        text is reply.text
        and model is reply.model
        and finish_reason is reply.finish_reason
        and all(new is old for new, old in zip(calls, reply.tool_calls, strict=True))
    ):
        return reply
    return dataclasses.replace(
        reply, text=text, tool_calls=calls, model=model, finish_reason=finish_reason
    )


class DeltaRepair:
    """Repairs streamed text piece by piece, for one stream: :meth:`feed` each piece, then
    :meth:`flush` once the stream is over.

    A high surrogate that ends a piece may be the first half of a pair the next piece
    completes: it is held back and joined with that piece. What is forwarded, joined, equals
    :func:`clean_text` of the pieces joined.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The repaired text to forward for ``piece``; may be ``""``."""
        text = self._held + piece if self._held else piece
        self._held = ""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            if "\ud800" <= text[-1] <= "\udbff":
                self._held, text = text[-1], text[:-1]
            return clean_text(text)
        return text

    def flush(self) -> str:
        """What is still held back, repaired (U+FFFD or ``""``)."""
        held, self._held = self._held, ""
        return clean_text(held)
