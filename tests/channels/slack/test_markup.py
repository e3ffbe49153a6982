"""Markdown → Slack mrkdwn, and chunking under Slack's limit without breaking code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.render.chunking import open_fence
from channels.slack.markup import render_chunks, to_mrkdwn


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and __strong__", "*bold* and *strong*"),
        ("*italic* and _also_", "_italic_ and _also_"),
        ("***both***", "*_both_*"),
        ("~~gone~~", "~gone~"),
        ("[docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|docs>"),
        ("[bad](javascript:alert(1))", "[bad](javascript:alert(1))"),
        ("a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"),
        ("`x < **y**`", "`x &lt; **y**`"),
        ("# Title", "*Title*"),
        ("## **Already bold**", "*Already bold*"),
        ("- one\n  * two", "• one\n  • two"),
        ("> quoted **text**", "> quoted *text*"),
        ("```python\nif a < b:\n    **x**\n```", "```\nif a &lt; b:\n    **x**\n```"),
        ("```\nunclosed", "```\nunclosed\n```"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        # a one-line triple-backtick span is inline code, not an unclosed fence
        ("```ls -la```\nafter **bold**", "`ls -la`\nafter *bold*"),
        ("```sh\nls\n```\n```ls -la```", "```\nls\n```\n`ls -la`"),
        ("```ls -la\nmore", "```\nls -la\nmore\n```"),  # code on the fence line is kept
        ("````md\n```py\n````", "```\n`\u200b`\u200b`py\n```"),
        ("use ``` for blocks", "use `\u200b`\u200b` for blocks"),
        ("[**bold** label](https://x.test)", "<https://x.test|bold label>"),
        (
            "[w](https://en.wikipedia.org/wiki/Foo_(bar))",
            "<https://en.wikipedia.org/wiki/Foo_(bar)|w>",
        ),
        ("[a|b](https://x.test)", "<https://x.test|a/b>"),
        ("[x](https://x.test/a|b)", "[x](https://x.test/a|b)"),
        ("![chart](https://x.test/c.png)", "<https://x.test/c.png|chart>"),
        ("https://x.test/_a_b_/ and_this_", "https://x.test/_a_b_/ and_this_"),
        ("*a **b** c*", "_a *b* c_"),
        ("# Title with **bold** and *it*", "*Title with bold and _it_*"),
        ("* * *", "* * *"),
        ("a\x00b\x01c", "a\x00b\x01c"),
        ("~~~python\nif a < b:\n```\n~~~\n**b**", "```\nif a &lt; b:\n`\u200b`\u200b`\n```\n*b*"),
        ("~~~~\n~~~\n~~~~", "```\n~~~\n```"),
    ],
)
def test_conversion_table(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_empty_text_has_no_chunks() -> None:
    assert render_chunks("  \n ") == []


def test_code_block_split_keeps_fences_balanced() -> None:
    code = "\n".join(f"line {i} <tag> & more" for i in range(200))
    chunks = render_chunks(f"intro\n\n```sh\n{code}\n```\n\noutro", 400)
    assert len(chunks) > 3
    for chunk in chunks:
        assert len(chunk) <= 400
        assert chunk.count("```") % 2 == 0
    joined = "\n".join(chunks)
    assert all(f"line {i} &lt;tag&gt; &amp; more" in joined for i in range(200))


@pytest.mark.parametrize(
    ("tail", "shown"),
    [
        ("> not a quote", "\u200b&gt; not a quote"),
        (">no space", "\u200b&gt;no space"),
        ("~~~ not a fence", "\u200b~~~ not a fence"),
        ("# plain in Slack", "# plain in Slack"),
        ("a &gt; b", "a &amp;gt; b"),
    ],
)
def test_a_line_cut_by_the_splitter_goes_on_as_text(tail: str, shown: str) -> None:
    # Slack quotes a message line starting with &gt; (the escaped >), even the rest of a line
    # the splitter cut; mrkdwn has no escape, so a zero-width space goes first
    chunks = render_chunks("x" * 74 + " " + tail + " " + "y" * 20, 80)
    assert chunks == ["x" * 74, shown + " " + "y" * 20]


def test_a_quote_after_a_cut_stays_a_quote() -> None:
    assert render_chunks("x" * 75 + "\n> quoted", 80) == ["x" * 75, "> quoted"]


TOKENS = [
    *"ab <>&*_~`#-[]()|",
    "\n",
    "```",
    "~~~",
    "~~~py\n",
    " > ",
    "```py\n",
    "````",
    "```x```",
    "http://x.y",
    "**",
    "[t](https://u.v)",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(TOKENS), max_size=400).map("".join),
    st.integers(min_value=60, max_value=600),
)
def test_chunks_fit_and_never_leave_a_fence_open(text: str, limit: int) -> None:
    for chunk in render_chunks(text, limit):
        assert 0 < len(chunk) <= limit
        assert open_fence(chunk) is None
        # Slack pairs ``` anywhere: the only ones left are the fence lines
        fences = sum(1 for line in chunk.split("\n") if line.strip().startswith("```"))
        assert fences % 2 == 0
        assert chunk.count("```") == fences
