"""Markdown → Slack mrkdwn, and chunking under Slack's limit without breaking code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.slack_markup import render_chunks, to_mrkdwn


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


TOKENS = [*"ab <>&*_~`#-[]()|", "\n", "```", "```py\n", "http://x.y", "**", "[t](https://u.v)"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(TOKENS), max_size=400).map("".join),
    st.integers(min_value=60, max_value=600),
)
def test_chunks_fit_and_never_leave_a_fence_open(text: str, limit: int) -> None:
    for chunk in render_chunks(text, limit):
        assert 0 < len(chunk) <= limit
        fences = sum(1 for line in chunk.split("\n") if line.strip().startswith("```"))
        assert fences % 2 == 0
