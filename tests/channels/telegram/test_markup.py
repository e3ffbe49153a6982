"""Markdown → Telegram HTML, and chunking under the 4,096-character limit."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.telegram.markup import render_chunks, to_html
from tests.fakes.telegram_html import well_formed


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("plain & simple <tag>", "plain &amp; simple &lt;tag&gt;"),
        ("**bold** and __also__", "<b>bold</b> and <b>also</b>"),
        ("*it* and _it_", "<i>it</i> and <i>it</i>"),
        ("~~gone~~", "<s>gone</s>"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("use `a < b` here", "use <code>a &lt; b</code> here"),
        ("`**not bold**`", "<code>**not bold**</code>"),
        ("[docs](https://x.test/?a=1&b=2)", '<a href="https://x.test/?a=1&amp;b=2">docs</a>'),
        ("[bad](javascript:alert(1))", "[bad](javascript:alert(1))"),
        ("# Title", "<b>Title</b>"),
        ("- one\n- two", "• one\n• two"),
        ("> quoted\n> more", "<blockquote>quoted\nmore</blockquote>"),
        (
            "```python\nif a < b:\n    pass\n```",
            '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>',
        ),
        ("```\nraw **text**\n```", "<pre><code>raw **text**</code></pre>"),
        # markers never cross: the bold pairs, the stray stars stay text (was: all literal)
        ("**a *b** c*", "<b>a *b</b> c*"),
        ("***both***", "<b><i>both</i></b>"),  # was sent literally
        # a one-line triple-backtick span is inline code, not an unclosed fence
        ("```ls -la```\nafter **bold**", "<code>ls -la</code>\nafter <b>bold</b>"),
        ("```ls -la\nmore", "<pre><code>ls -la\nmore</code></pre>"),
        (
            "````md\n```py\nx\n```\n````",
            '<pre><code class="language-md">```py\nx\n```</code></pre>',
        ),
        ("[**bold** label](https://x.test)", '<a href="https://x.test"><b>bold</b> label</a>'),
        ("[`code` label](https://x.test)", '<a href="https://x.test">code label</a>'),
        (
            "[w](https://en.wikipedia.org/wiki/Foo_(bar))",
            '<a href="https://en.wikipedia.org/wiki/Foo_(bar)">w</a>',
        ),
        ('[q](https://x.test/?a="1"&b)', '<a href="https://x.test/?a=&quot;1&quot;&amp;b">q</a>'),
        ("![chart](https://x.test/c.png)", '<a href="https://x.test/c.png">chart</a>'),
        ("https://x.test/_a_b_/ and_this_", "https://x.test/_a_b_/ and_this_"),
        ("# C# &lt;tips&gt;", "<b>C# &amp;lt;tips&amp;gt;</b>"),
        ("> > nested", "<blockquote>&gt; nested</blockquote>"),
        ("***", "***"),
        (
            "~~~python\nx < 1\n```\n~~~\n**b**",
            '<pre><code class="language-python">x &lt; 1\n```</code></pre>\n<b>b</b>',
        ),
        ("~~~~\n~~~\n~~~~", "<pre><code>~~~</code></pre>"),
        ("~~~ `a` b\nx\n~~~", "<pre><code>`a` b\nx</code></pre>"),
    ],
)
def test_to_html(markdown: str, expected: str) -> None:
    rendered = to_html(markdown)
    assert rendered == expected
    assert well_formed(rendered)


def test_unclosed_fence_still_renders_as_code() -> None:
    assert (
        to_html("```sh\necho <hi>") == '<pre><code class="language-sh">echo &lt;hi&gt;</code></pre>'
    )


def test_a_line_cut_by_the_splitter_goes_on_as_text() -> None:
    # the splitter cuts inside a long line; the rest must not become a quote, heading or list
    for tail in ("> not a quote", "# not a heading", "- not an item"):
        chunks = render_chunks("x" * 74 + " " + tail + " " + "y" * 20, 80)  # cut at the space
        assert len(chunks) == 2
        assert chunks[1] == html.escape(tail, quote=False) + " " + "y" * 20
        assert to_html(tail, continues_line=True) == html.escape(tail, quote=False)


@pytest.mark.parametrize("opener", ["~~~ not a fence", "```ls"])
def test_the_rest_of_a_cut_line_never_opens_a_code_block(opener: str) -> None:
    # mid-line, the fence-like text is text; the next lines must not become code either
    chunks = render_chunks("x" * 74 + f" {opener}\nnext **line**", 80)
    assert chunks == ["x" * 74, f"{opener}\nnext <b>line</b>"]


@pytest.mark.parametrize("marker", ["`" * 13, "~" * 13])
def test_a_fence_marker_too_long_to_repeat_still_renders(marker: str) -> None:
    # at a cut the fence is closed with three characters (13 would take over a quarter of the
    # chunk), which does not close it: re-splitting the escaped piece used to recurse forever
    chunks = render_chunks(marker + "> > >>>>>>1. > ", 47)
    assert chunks
    assert all(len(chunk) <= 47 and well_formed(chunk) for chunk in chunks)


def test_blank_text_gives_no_chunks() -> None:
    assert render_chunks("   \n") == []


def test_escaping_heavy_text_still_fits() -> None:
    text = "<&>" * 3000  # escaping makes it ~4x longer
    chunks = render_chunks(text, 4096)
    assert len(chunks) >= 3
    assert all(len(c) <= 4096 and well_formed(c) for c in chunks)
    assert html.unescape("".join(chunks)).replace("\n", "").replace(" ", "") == text


_pieces = st.sampled_from(
    [
        "**",
        "*",
        "_",
        "__",
        "~~",
        "`",
        "```",
        "```py",
        "\n",
        "\n\n",
        "<",
        ">",
        "&",
        "[a](",
        "https://x.test)",
        "# ",
        "- ",
        "> ",
        "word",
        " ",
        "é",
        "🙂",
        "```x```",
        "````",
        "~~~",
        "~~~py\n",
        "***",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieces, max_size=120), st.integers(min_value=40, max_value=300))
def test_every_chunk_is_valid_and_within_the_limit(parts: list[str], limit: int) -> None:
    for chunk in render_chunks("".join(parts), limit):
        assert len(chunk) <= limit
        assert well_formed(chunk)
