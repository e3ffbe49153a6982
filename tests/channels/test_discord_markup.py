"""Markdown → Discord: what changes (little) and that everything else passes through as written.

The existing table and chunking properties live in tests/channels/test_discord_units.py.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.chunking import open_fence
from channels.discord_markup import render_chunks, to_discord


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
        ("use ``` to fence", "use `\u200b`\u200b` to fence"),
        ("* * *", "───"),
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
    # nothing to convert: no thematic break, no ``` but plain fence lines (and no images,
    # deep headings or triple-backtick spans, which the pieces cannot form)
    lines = markdown.split("\n")
    assume(not any(line.strip() and set(line) <= set("-*_ ") for line in lines))
    assume(not any("```" in line and line not in ("```", "```python") for line in lines))
    assert to_discord(markdown) == markdown


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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["```", "```py", "`", "x", " ", "\n", "**", "#### h\n"]), max_size=300)
)
def test_chunks_leave_no_fence_open_and_no_stray_backticks(pieces: list[str]) -> None:
    for chunk in render_chunks("".join(pieces), 200):
        assert len(chunk) <= 200
        assert open_fence(chunk) is None
        fence_lines = [line for line in chunk.split("\n") if line.startswith("```")]
        assert chunk.count("```") == len(fence_lines)  # Discord pairs ``` anywhere
