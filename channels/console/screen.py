"""The console's output: every line the terminal shows goes through one :class:`Screen`.

Two prompts share the terminal with the bot's messages. The *input prompt* (``> ``, on an
interactive terminal only) sits at the bottom: a message erases it, is written, and the
prompt is drawn again below it. An *approval prompt* leaves the cursor on its own line until
it is answered: what arrives meanwhile (progress lines, a draft, another turn's answer) is
held and shown after the answer, so nothing ever lands inside the prompt's line.

At a terminal an answer is shown as the model writes it (:meth:`Screen.stream_text`, the
channel's ``live_text``): its deltas go on the line where "… thinking" was, and the answer,
sent whole once the turn ends, adds only what they did not show (all of it, on a line of
its own, if it reads otherwise). A message that comes between (a progress line,
``⏹ stopping…``) ends the streamed line.

What a message says is shown through :func:`~bot.visible_text.terminal_text`, never obeyed
by the terminal; the only control sequences written are the screen's own.
"""

from __future__ import annotations

from typing import IO

from bot.visible_text import terminal_text

INPUT_PROMPT = "> "
#: Back to the start of the line and clear it (erases a shown input prompt).
ERASE_LINE = "\r\x1b[K"


def _rest(streamed: str, text: str) -> str | None:
    """What ``text`` adds to ``streamed``, the part of it already shown (the answer may come
    without the blank space around what the model wrote); None when it reads otherwise."""
    shown = streamed.strip()
    whole = text.lstrip()
    if not shown or not whole.startswith(shown):
        return None
    rest = whole[len(shown) :]
    written = streamed[len(streamed.rstrip()) :]  # blank space after the text, shown too
    return rest[len(written) :] if rest.startswith(written) else rest


class Screen:
    """Writes the console's output in order. ``prompting`` shows the input prompt (only when
    a person types at a terminal and reads it); ``erasable``: ``out`` is a terminal, whose
    current line may be cleared."""

    def __init__(self, out: IO[str], *, prompting: bool, erasable: bool = False) -> None:
        self._out = out
        self._prompting = prompting
        self._erasable = erasable or prompting  # out is a terminal
        self._prompt_shown = False  # the cursor sits just after the input prompt
        self._asking = False  # the cursor sits at the end of an approval prompt
        self._status_shown = False  # the cursor sits after a status line ("thinking…")
        self._held: list[str] = []
        self._streamed = ""  # the cursor sits after this much of an answer being written
        self._stream_dropped = False  # deltas are dropped until the next message

    def begin(self) -> None:
        """Show the input prompt, if there is one."""
        self._write(self._prompt())

    def show(self, text: str) -> None:
        """A message (a reply, a progress line, a notice): its own line or lines. The answer
        being streamed ends with the rest of ``text`` when ``text`` continues it."""
        if self._asking:
            self._held.append(text)
            return
        streamed, self._streamed, self._stream_dropped = self._streamed, "", False
        rest = _rest(streamed, text) if streamed else None
        if rest is not None:
            self._write(terminal_text(rest) + "\n" + self._prompt())
            return
        lead = "\n" if streamed else self._erase()
        self._write(lead + terminal_text(text) + "\n" + self._prompt())

    def stream_text(self, delta: str) -> None:
        """A piece of the answer being written, shown at once where "… thinking" was (on a
        terminal; nothing while an approval prompt is open: the answer then shows whole)."""
        if not delta or not self._erasable or self._stream_dropped:
            return
        if self._asking:
            self._stream_dropped, self._streamed = True, ""
            return
        lead = "" if self._streamed else self._erase()
        self._streamed += delta
        self._write(lead + terminal_text(delta))

    def status(self, text: str) -> None:
        """A passing line of the program's own (``… thinking``), on a terminal only: it
        stays on the cursor's line without ending it, and the next message or prompt
        replaces it. Nothing while an approval prompt is open."""
        if not self._erasable or self._asking or self._streamed:
            return
        self._write(self._erase() + terminal_text(text))
        self._status_shown = True

    def line_read(self, *, blank: bool) -> None:
        """The person pressed Enter: the terminal's echo moved the cursor to a new line. A
        blank line gets a fresh prompt; a message's prompt comes back with its answer."""
        self._prompt_shown = False
        if self._streamed:  # typed while an answer was written: its line is ended
            self._streamed, self._stream_dropped = "", True
        if blank:
            self._write(self._prompt())

    def ask(self, prompt: str) -> None:
        """Show an approval prompt (on a line of its own, after an answer being written);
        the cursor stays at its end until :meth:`answered`."""
        lead = "\n" if self._streamed else self._erase()
        self._streamed = ""
        self._write(lead + terminal_text(prompt))
        self._asking = True

    def answered(self, *, echoed: bool) -> None:
        """The approval prompt is closed. ``echoed``: the terminal already ended its line
        (a typed answer); otherwise (end of input, a timeout, piped input) it is ended here.
        Then what was held is shown."""
        self._asking = False
        ending = "" if echoed else "\n"
        held, self._held = self._held, []
        if held:
            ending += terminal_text("\n".join(held)) + "\n"
        self._write(ending + self._prompt())

    def stop_prompting(self) -> None:
        """No input prompt from now on (hatchway chat is quitting); the prompt line is
        cleared."""
        self._prompting = False
        self.clear_line()

    def clear_line(self) -> None:
        """Clear the line the cursor is on: it holds at most the input prompt and what the
        terminal echoed after it (``^C``), since every message ends its own line. An open
        approval prompt is left alone."""
        if self._erasable and not self._asking:
            self._prompt_shown = self._status_shown = False
            if self._streamed:  # keep the answer written so far; the rest is not shown
                self._streamed, self._stream_dropped = "", True
                self._write("\n")
                return
            self._write(ERASE_LINE)

    # -- internals ----------------------------------------------------------------------

    def _prompt(self) -> str:
        if not self._prompting or self._asking or self._prompt_shown:
            return ""
        self._prompt_shown = True
        return INPUT_PROMPT

    def _erase(self) -> str:
        if not (self._prompt_shown or self._status_shown):
            return ""
        self._prompt_shown = self._status_shown = False
        return ERASE_LINE

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._out.flush()
