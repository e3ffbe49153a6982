"""The console's screen with an answer written as the model streams it: the deltas go where
"… thinking" was, the answer sent afterwards adds only what they did not show, and anything
else shown meanwhile ends the streamed line first."""

from __future__ import annotations

import io

import pytest

from channels.console.screen import ERASE_LINE, Screen


def terminal() -> tuple[Screen, io.StringIO]:
    out = io.StringIO()
    return Screen(out, prompting=False, erasable=True), out


@pytest.mark.parametrize(
    ("deltas", "answer", "shown"),
    [
        # the answer continues what was streamed: only the rest is written
        (["Hel", "lo"], "Hello", "Hello\n"),
        (["Hel", "lo"], "Hello\n\n(cut at max_tokens)", "Hello\n\n(cut at max_tokens)\n"),
        # blank space the answer comes without is not a difference
        (["\n", "Hello ", "\n"], "Hello", "\nHello \n\n"),
        # an answer that reads otherwise is shown whole on a line of its own
        (["Hel", "p"], "Hello", "Help\nHello\n"),
        # control characters are shown, never obeyed, in deltas as in messages
        (["a\x1b", "[2J"], "a\x1b[2J", "a\\x1b[2J\n"),
    ],
)
def test_a_streamed_answer_is_shown_once(deltas: list[str], answer: str, shown: str) -> None:
    screen, out = terminal()
    screen.status("… thinking")
    for delta in deltas:
        screen.stream_text(delta)
    screen.show(answer)
    assert out.getvalue() == f"… thinking{ERASE_LINE}{shown}"


def test_thinking_does_not_overwrite_the_answer_being_written() -> None:
    screen, out = terminal()
    screen.stream_text("Hel")
    screen.status("… thinking")  # the typing refresh while the answer streams
    screen.stream_text("lo")
    screen.show("Hello")
    assert out.getvalue() == "Hello\n"


def test_a_line_shown_between_ends_the_streamed_line() -> None:
    screen, out = terminal()
    screen.stream_text("Let me look.")
    screen.show("⏳ shell: `ls`")
    screen.stream_text("Found it.")
    screen.show("Found it.")
    assert out.getvalue() == "Let me look.\n⏳ shell: `ls`\nFound it.\n"


def test_ctrl_c_keeps_what_was_written_and_drops_the_rest() -> None:
    screen, out = terminal()
    screen.stream_text("The first part")
    screen.clear_line()  # Ctrl-C: the ^C the terminal echoed
    screen.stream_text(" and the rest")  # a delta already on its way
    screen.show("⏹ stopping…")
    assert out.getvalue() == "The first part\n⏹ stopping…\n"


def test_deltas_while_an_approval_prompt_waits_are_dropped_and_the_answer_shown_whole() -> None:
    screen, out = terminal()
    screen.ask("Approve? ")
    screen.stream_text("Hello")
    screen.answered(echoed=True)
    screen.stream_text(" world")
    screen.show("Hello world")
    assert out.getvalue() == "Approve? Hello world\n"


def test_an_approval_prompt_comes_on_a_line_of_its_own() -> None:
    screen, out = terminal()
    screen.stream_text("I will run it.")
    screen.ask("Approve? ")
    assert out.getvalue() == "I will run it.\nApprove? "


def test_piped_output_gets_no_deltas() -> None:
    out = io.StringIO()
    screen = Screen(out, prompting=False, erasable=False)
    screen.stream_text("Hello")
    screen.show("Hello")
    assert out.getvalue() == "Hello\n"
