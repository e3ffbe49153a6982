"""Markdown → Discord: what changes (little) and that everything else passes through as written.

The existing table and chunking properties live in tests/channels/discord/test_units.py.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from channels.discord.markup import render_chunks, to_discord
from channels.render.chunking import open_fence
from channels.render.markdown import Heading, classify


@pytest.mark.parametrize(
    ("markdown", "discord_text"),
    [
        # a one-line triple-backtick span: Discord would show a block, and the splitter used
        # to take it for an unclosed fence (everything after it became code)
        ("```ls -la```\n#### Next", "`ls -la`\n**Next**"),
        ("```a`b```", "``a`b``"),
        ("`keep ![img](https://x.test/i.png)`", "`keep ![img](https://x.test/i.png)`"),
        ("# **C#** ![logo](https://x.test/l.png)", "# **C#** logo https://x.test/l.png"),
        (
            "[w](https://en.wikipedia.org/wiki/Foo_(bar))",
            "[w](https://en.wikipedia.org/wiki/Foo_(bar))",
        ),
        ("```ls -la\ncode", "```\nls -la\ncode"),
        ("````md\n```py\n````", "```md\n`\u200b`\u200b`py\n```"),
        # outside code a stray run is escaped (Discord hides the backslashes); in code it
        # cannot be, a backslash would show
        ("use ``` to fence", "use \\`\\`\\` to fence"),
        ("[a```b](https://x.test)", "[a\\`\\`\\`b](https://x.test)"),
        ("![```](https://x.test/i.png)", "\\`\\`\\` https://x.test/i.png"),
        ("* * *", "───"),
        ("~~~py\nx\n```\n~~~\n**b**", "```py\nx\n`\u200b`\u200b`\n```\n**b**"),
        ("~~~~ls -la\ncode\n~~~", "```\nls -la\ncode\n~~~"),  # ~~~ is shorter: code
    ],
)
def test_markup(markdown: str, discord_text: str) -> None:
    assert to_discord(markdown) == discord_text


_passthrough = st.sampled_from(
    [
        *"*_~`[]() #>-\n",
        "**",
        "__",
        "~~",
        "``",
        "## head\n",
        "- item\n",
        "> quote\n",
        "[a](https://x.test/(b))",
        "https://x.test/a_b",
        "snake_case",
        "\n```python\nx = 1\n```\n",
        "word",
        "🙂",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_passthrough, max_size=50).map("".join))
def test_plain_discord_markdown_passes_through(markdown: str) -> None:
    # nothing to convert: no thematic break, no deep heading, no tilde fence, no ``` but
    # plain fence lines (and no images or triple-backtick spans, which the pieces cannot form)
    lines = markdown.split("\n")
    assume(not any(line.strip() and set(line) <= set("-*_ ") for line in lines))
    assume(not any(isinstance(h := classify(line), Heading) and h.level > 3 for line in lines))
    assume(not any("```" in line and line not in ("```", "```python") for line in lines))
    assume(not any(line.lstrip().startswith("~~~") for line in lines))  # a tilde fence
    assume(not _fence_with_info_inside_code(lines))
    assert to_discord(markdown) == markdown


def _fence_with_info_inside_code(lines: list[str]) -> bool:
    """A ```` ```python ```` line inside an open fence is code, not a fence (a closing fence
    has no info string), and Discord would close on it: it is escaped, not passed through."""
    inside = False
    for line in lines:
        if line == "```python" and inside:
            return True
        if line in ("```", "```python"):
            inside = not inside
    return False


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("``` x` ```", "`` x` ``"),  # found by the property below: was "``x```"
        ("```ls -la```", "`ls -la`"),
        ("``` `a ```", "`` `a ``"),
    ],
)
def test_triple_backtick_spans_become_spans_discord_reads(markdown: str, shown: str) -> None:
    assert to_discord(markdown) == shown


@pytest.mark.parametrize(
    ("tail", "shown"),
    [
        ("# not a heading", "\\# not a heading"),
        ("### not a heading", "\\### not a heading"),
        ("-# not subtext", "\\-# not subtext"),
        ("> not a quote", "\\> not a quote"),
        (">>> not a quote", "\\>>> not a quote"),
        ("- not an item", "\\- not an item"),
        ("* not an item", "\\* not an item"),
        ("12. not an item", "12\\. not an item"),
        ("~~~ not a fence", "\\~~~ not a fence"),
        ("#hashtag stays", "#hashtag stays"),
        ("**bold** stays", "**bold** stays"),
        ("1.5 stays", "1.5 stays"),
    ],
)
def test_a_line_cut_by_the_splitter_goes_on_as_text(tail: str, shown: str) -> None:
    # the first chunk ends at the space before the tail: the second is a message of its own,
    # where a leading marker would make a heading, quote or list item of the rest of a line
    chunks = render_chunks("x" * 74 + " " + tail + " " + "y" * 20, 80)
    assert chunks == ["x" * 74, shown + " " + "y" * 20]


def test_a_new_line_after_a_cut_keeps_its_markup() -> None:
    chunks = render_chunks("x" * 75 + "\n# Heading\n- item", 80)
    assert chunks == ["x" * 75, "# Heading\n- item"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["```", "```py", "~~~", "`", "x", " ", "\n", "**", "#### h\n", "# "]),
        max_size=300,
    )
)
def test_chunks_leave_no_fence_open_and_no_stray_backticks(pieces: list[str]) -> None:
    for chunk in render_chunks("".join(pieces), 200):
        assert len(chunk) <= 200
        assert open_fence(chunk) is None
        fence_lines = [line for line in chunk.split("\n") if line.startswith("```")]
        assert chunk.count("```") == len(fence_lines)  # Discord pairs ``` anywhere
