"""Shell syntax: a command read the way ``/bin/sh`` will read it, for the deny list.

:func:`parse_command` turns the text ``shell`` hands to ``/bin/sh -c`` into the simple commands
that would run, wherever they sit: lists, pipelines, subshells, groups, loops, function bodies,
``$(…)`` and backticks (inside double quotes too), the strings given to ``sh -c``, ``eval``
and ``su -c``, here-documents, here-strings and ``echo``/``printf`` output fed to a shell. Each
comes as the argv its program gets: quotes removed, escapes resolved, unquoted ``$IFS`` split
and ``{a,b}`` expanded; ``$HOME``, ``${HOME}``, ``${HOME:-…}`` and ``~`` become one
:data:`HOME` marker, every other expansion :data:`UNKNOWN`; wrappers (``sudo``, ``env``,
``exec``, ``nohup``, ``command``, ``nice``, ``timeout``, ``xargs`` …) are removed and
``argv[0]`` is a bare name (``\\rm``, ``/usr/bin/rm`` and ``"rm"`` all read ``rm``).
:func:`normalise_target` reduces a path operand to ``/``, ``~`` or a collapsed absolute path.

Why tree-sitter-bash (MIT, through the MIT ``tree-sitter`` bindings): ``shlex`` splits words but
loses what matters here. It cannot tell ``'$HOME'`` from ``"$HOME"``, does not see ``$(…)`` or
backticks inside double quotes, and fails on valid here-documents (a body with an apostrophe),
which would turn ordinary commands into refusals. bashlex is GPLv3; this project is Apache-2.0.
The grammar is bash's, a superset of POSIX sh: where bash reads more than dash does (``$'…'``,
brace expansion), the reading follows bash, i.e. finds more.

This is a reading for a tripwire, not an interpreter: variables other than ``HOME`` and ``IFS``,
aliases, the working directory and a script's contents stay unknown. A text with a syntax error
yields ``parsed=False``, and so does nesting deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.tools.builtin.shell_programs import program_argv, shell_script
from bot.tools.builtin.shell_words import (
    HOME,
    UNKNOWN,
    ansi_c_text,
    double_quoted_text,
    expansion_value,
    split_fields,
    unquoted_text,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["HOME", "UNKNOWN", "CommandSyntax", "SimpleCommand", "normalise_target", "parse_command"]

MAX_DEPTH = 4
"""How many levels of ``sh -c "…"``, ``eval`` and here-documents are read."""

_HOLE_FREE = frozenset({"string_content", "heredoc_content"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleCommand:
    """One program that would run, as its argv (``argv[0]`` a bare name, wrappers removed)."""

    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandSyntax:
    """What :func:`parse_command` read. When ``parsed`` is False the rest is incomplete."""

    parsed: bool
    commands: tuple[SimpleCommand, ...] = ()
    written_files: tuple[str, ...] = ()
    """Targets of output redirections (``>``, ``>>``, ``&>`` …), as words."""
    forking_functions: tuple[str, ...] = ()
    """Functions that call themselves in a pipeline or in the background: fork bombs."""


def parse_command(text: str) -> CommandSyntax:
    """Read ``text`` as ``/bin/sh -c`` would (see the module docstring); never raises."""
    reader = _Reader(text, depth=0)
    reader.read()
    return CommandSyntax(
        parsed=reader.parsed,
        commands=tuple(SimpleCommand(argv=tuple(argv)) for argv in reader.commands),
        written_files=tuple(reader.written),
        forking_functions=tuple(reader.forking),
    )


def normalise_target(word: str) -> str:
    """``/`` for the root, ``~`` for the home directory, otherwise the collapsed absolute path
    (``//``, ``/./``, ``..``, a trailing ``/``, ``/*`` or ``/.*`` removed, ``~/x`` for a
    path under home); a relative or unknown word comes back unchanged. Going above home
    (``~/..``) reads as ``/``. A quoted ``'~'`` or ``'$HOME'`` names a directory literally
    called so, but reads as home here too: ``./'~'`` still names that directory."""
    for literal in ("~", "$HOME", "${HOME}"):
        if word == literal or word.startswith(f"{literal}/"):
            word = HOME + word[len(literal) :]
    if word.startswith(HOME):
        base, rest = "~", word[len(HOME) :]
        if rest and not rest.startswith("/"):
            return word
    elif word.startswith("/"):
        base, rest = "", word
    else:
        return word
    parts: list[str] = []
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return "/"
            parts.pop()
            continue
        parts.append(part)
    while parts and parts[-1] in ("*", ".*"):
        parts.pop()
    if not parts:
        return base or "/"
    return f"{base}/{'/'.join(parts)}"


@functools.cache
def _parser() -> Parser:
    # Imported on first use: the grammar costs a few milliseconds that start-up need not pay.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


class _Reader:
    """Walks one syntax tree; nested scripts get their own reader one level deeper."""

    def __init__(self, text: str, *, depth: int) -> None:
        # A lone surrogate (half an emoji) cannot be encoded; "?" reads the same for the rules.
        self.source = text.encode("utf-8", "replace")
        self.depth = depth
        self.parsed = True
        self.commands: list[list[str]] = []
        self.written: list[str] = []
        self.forking: list[str] = []
        self._done: set[int] = set()

    def read(self) -> None:
        tree = _parser().parse(self.source)
        if tree.root_node.has_error:
            self.parsed = False
            return
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            kind = node.type
            if kind == "redirected_statement":
                self._redirected(node)
            elif kind == "command" and node.id not in self._done:
                self._command(node, [], [])
            elif kind == "file_redirect":
                self._file_redirect(node)
            elif kind == "function_definition":
                self._function(node)
            elif kind == "pipeline":
                self._pipeline(node)
            stack.extend(reversed(node.children))

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    # commands

    def _redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        if body is None or body.type != "command":
            return
        # tree-sitter-bash files the words after `2>/dev/null` under the redirect: they are
        # the command's own arguments.
        extra = [
            word
            for redirect in node.children_by_field_name("redirect")
            if redirect.type == "file_redirect"
            for word in redirect.children_by_field_name("destination")[1:]
        ]
        self._command(body, extra, node.children_by_field_name("redirect"))

    def _command(self, node: Node, extra: list[Node], redirects: list[Node]) -> None:
        self._done.add(node.id)
        argv = self.argv(node, extra)
        if not argv:
            return
        self.commands.append(argv)
        name = argv[0]
        if name == "eval":
            self._nested(" ".join(argv[1:]))
            return
        script = shell_script(argv)
        if isinstance(script, str):
            self._nested(script)
        elif script is not None:  # a shell reading its script from stdin
            for redirect in [*redirects, *node.children_by_field_name("redirect")]:
                self._stdin_script(redirect)

    def argv(self, node: Node, extra: list[Node] = []) -> list[str]:  # noqa: B006 (read only)
        name = node.child_by_field_name("name")
        if name is None:
            return []
        words = [name, *node.children_by_field_name("argument"), *extra]
        # Nodes with no space between them are one word, even where tree-sitter-bash splits
        # them (it reads `a'b'\/` as two arguments).
        groups: list[list[Node]] = []
        for word in words:
            if groups and groups[-1][-1].end_byte == word.start_byte:
                groups[-1].append(word)
            else:
                groups.append([word])
        return program_argv([field for group in groups for field in self.word(*group)])

    def _stdin_script(self, redirect: Node) -> None:
        if redirect.type == "heredoc_redirect":
            for body in redirect.children:
                if body.type == "heredoc_body":
                    self._nested(self.text(body))
        elif redirect.type == "herestring_redirect" and redirect.named_children:
            self._nested(" ".join(self.word(redirect.named_children[-1])))

    def _pipeline(self, node: Node) -> None:
        stages = [child for child in node.named_children if child.type == "command"]
        for source, sink in itertools.pairwise(stages):
            printed = self.argv(source)
            if printed[:1] in (["echo"], ["printf"]) and shell_script(self.argv(sink)) is True:
                self._nested(" ".join(arg for arg in printed[1:] if arg not in ("-n", "-e")))

    def _file_redirect(self, node: Node) -> None:
        destinations = node.children_by_field_name("destination")
        if destinations and any(">" in child.type for child in node.children):
            self.written.extend(self.word(destinations[0]))

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = self.text(name_node)
        calls, piped, background = 0, False, False
        stack = [body]
        while stack:
            current = stack.pop()
            if current.type == "command" and self.argv(current)[:1] == [name]:
                calls += 1
                parent = current.parent
                piped = piped or (parent is not None and parent.type == "pipeline")
            background = background or current.type == "&"
            stack.extend(current.children)
        if calls >= 2 and (piped or background):
            self.forking.append(name)

    def _nested(self, script: str) -> None:
        if self.depth >= MAX_DEPTH:
            self.parsed = False
            return
        inner = _Reader(script, depth=self.depth + 1)
        inner.read()
        self.parsed = self.parsed and inner.parsed
        self.commands.extend(inner.commands)
        self.written.extend(inner.written)
        self.forking.extend(inner.forking)

    # words

    def word(self, *nodes: Node) -> list[str]:
        """The fields one word (one node, or adjacent nodes) of the syntax tree becomes."""
        value = "".join(
            self._value(node, quoted=False, first=index == 0) for index, node in enumerate(nodes)
        )
        return split_fields(value)

    def _value(self, node: Node, *, quoted: bool, first: bool) -> str:
        kind = node.type
        if kind == "word":
            return unquoted_text(self.text(node), tilde=first)
        if kind in ("string", "translated_string"):
            return self._double_quoted(node)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return ansi_c_text(self.text(node)[2:-1])
        if kind in ("simple_expansion", "expansion"):
            return expansion_value(self.text(node), quoted=quoted)
        if kind in _SUBSTITUTIONS:
            return UNKNOWN
        if kind in ("concatenation", "command_name"):
            return "".join(
                self._value(child, quoted=quoted, first=first and index == 0)
                for index, child in enumerate(node.children)
            )
        return self.text(node)

    def _double_quoted(self, node: Node) -> str:
        """A ``"…"`` string: its literal text unescaped, its expansions as values."""
        opening = 2 if self.source[node.start_byte : node.start_byte + 1] == b"$" else 1
        position, end = node.start_byte + opening, node.end_byte - 1
        pieces: list[str] = []
        for child in node.named_children:
            if child.type in _HOLE_FREE:
                continue
            literal = self.source[position : child.start_byte].decode("utf-8", "replace")
            pieces.append(double_quoted_text(literal))
            pieces.append(self._value(child, quoted=True, first=False))
            position = child.end_byte
        literal = self.source[position:end].decode("utf-8", "replace")
        pieces.append(double_quoted_text(literal))
        return "".join(pieces)
