"""The splitter: chunk sizes, fences closed and reopened, and the fence rule it shares with the
platform converters (channels/*_markup.py)."""

from __future__ import annotations

import pytest

from channels.render.chunking import Fence, fence_opening, open_fence, split_chunks


def split_message(text: str, limit: int) -> list[str]:
    return [chunk.text for chunk in split_chunks(text, limit)]


@pytest.mark.parametrize(
    ("line", "fence"),
    [
        ("```", Fence(marker="```", info="")),
        ("```python", Fence(marker="```", info="python")),
        ("  ````md  ", Fence(marker="````", info="md")),
        ("```ls -la", Fence(marker="```", info="ls -la")),
        ("```ls -la```", None),  # inline code on a line of its own
        ("``not", None),
        ("x ```", None),
        ("~~~", Fence(marker="~~~", info="")),
        (" ~~~~ python ", Fence(marker="~~~~", info="python")),
        ("~~~ a`b ~~~", Fence(marker="~~~", info="a`b ~~~")),  # anything goes after tildes
        ("~~", None),
        ("~~strike~~", None),
    ],
)
def test_fence_opening(line: str, fence: Fence | None) -> None:
    assert fence_opening(line) == fence


@pytest.mark.parametrize(
    ("marker", "line", "closes"),
    [
        ("```", "```", True),
        ("```", "  ````  ", True),
        ("````", "```", False),
        ("```", "```py", False),
        ("```", "```x```", False),
        ("~~~", "~~~~ ", True),
        ("~~~~", "~~~", False),
        ("~~~", "```", False),  # a fence closes only with its own character
        ("```", "~~~", False),
        ("~~~", "~~~ x", False),
    ],
)
def test_closing(marker: str, line: str, closes: bool) -> None:
    assert Fence(marker=marker, info="").closed_by(line) is closes


@pytest.mark.parametrize(
    ("info", "language"),
    [("python", "python"), ("c++", "c++"), ("ls -la", ""), ('{"k":1}', ""), ("a" * 21, "")],
)
def test_language(info: str, language: str) -> None:
    assert Fence(marker="```", info=info).language == language


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    text = "```ls -la```\n" + ("some words " * 8 + "\n") * 30
    chunks = split_message(text, 200)
    assert len(chunks) > 5
    assert chunks[0].startswith("```ls -la```\n")
    assert all("```" not in chunk for chunk in chunks[1:])  # nothing closed, nothing reopened
    assert open_fence(text) is None


def test_a_cut_inside_inline_code_never_reopens_a_fence() -> None:
    # the cut after "```ls " leaves a piece that reads as a fence opener on its own: the piece
    # is closed, but the rest of the line is not put back into a code block
    text = "```ls -la``` " + "word " * 40
    for limit in range(40, 60):
        chunks = split_message(text, limit)
        assert all(open_fence(chunk) is None for chunk in chunks)
        assert all(not chunk.startswith("```") for chunk in chunks[1:]), limit


@pytest.mark.parametrize("marker", ["````", "~~~", "~~~~~~~~~~~~"])
def test_fences_reopen_with_their_language_and_marker(marker: str) -> None:
    code = "\n".join(f"line {i} {'x' * (i % 7)}" for i in range(80))
    chunks = split_message(f"{marker}python\n{code}\n{marker}\nafter", 120)
    assert len(chunks) > 3
    for chunk in chunks[:-1]:
        assert len(chunk) <= 120
        assert chunk.startswith(f"{marker}python\n")
        assert chunk.endswith(f"\n{marker}")
    assert chunks[-1].endswith("after")


def test_a_fence_of_the_other_character_does_not_close() -> None:
    assert open_fence("~~~md\n```py\nx\n```\n") == Fence(marker="~~~", info="md")
    assert open_fence("```md\n~~~\nx\n~~~\n") == Fence(marker="```", info="md")
    chunks = split_message("~~~md\n```py\n" + "x = 1\n" * 30 + "```\n~~~\nafter", 60)
    assert all(chunk.startswith("~~~md\n") for chunk in chunks[1:-1])  # reopened as tildes


def test_code_on_the_fence_line_is_not_repeated() -> None:
    chunks = split_message("```ls -la /very/long/path\n" + "x\n" * 100, 60)
    assert chunks[0].startswith("```ls -la")
    assert all(chunk.startswith("```\n") for chunk in chunks[1:])


def test_chunks_that_continue_a_line_are_flagged() -> None:
    chunks = split_chunks("a" * 34 + " > b " + "c" * 10 + "\nnext line", 40)  # cut at a space
    assert [chunk.continues_line for chunk in chunks] == [False, True]
    assert chunks[1].text == "> b " + "c" * 10 + "\nnext line"
    fenced = split_chunks("```\n" + "c" * 80, 40)
    assert not any(chunk.continues_line for chunk in fenced)  # code goes on as code


@pytest.mark.parametrize("opener", ["~~~ not a fence", "```ls"])
def test_the_rest_of_a_cut_line_never_opens_a_fence(opener: str) -> None:
    # in the original the fence-like text is mid-line, so it is text: the chunk holding its
    # rest is neither closed nor does it turn the next lines into code
    chunks = split_chunks("a" * 34 + f" {opener}\nnext line", 40)  # cut at the space
    assert [chunk.continues_line for chunk in chunks] == [False, True]
    assert chunks[1].text == f"{opener}\nnext line"


def test_limit_must_leave_room() -> None:
    with pytest.raises(ValueError, match="at least 40"):
        split_message("x", 39)
