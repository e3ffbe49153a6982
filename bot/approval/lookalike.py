"""Look-alike hosts and names: text that reads as one thing and is another.

``gіthub.com`` with a Cyrillic ``і`` looks exactly like ``github.com`` on a card. Following
Unicode TS #39 (security mechanisms), :func:`look_alikes` finds, in one argument's text:

* the host of every URL (``scheme://[user@]host[:port]``), in any argument;
* in a shell command (``command``, ``cmd``), every dotted word (a host: ``ssh git@host``,
  ``curl host/x``) and every other word;

and marks each one, label by label for a host, that is

* **mixed-script**: letters from more than one script (``Common`` and ``Inherited``, such as
  digits, punctuation and combining marks, belong to every script; Latin with the scripts of
  Japanese, Chinese or Korean writing counts as one, TS #39's "highly restrictive"), or
* **confusable with ASCII**: every non-ASCII character in it has an ASCII look-alike
  (a whole-script confusable such as an all-Cyrillic ``аррӏе``, or Latin ``ɡ`` for ``g``).

The scripts and the look-alike pairs come from Unicode's ``Scripts.txt`` and
``confusables.txt`` as the ``confusable-homoglyphs`` package ships them (a pure-Python wheel:
nothing to compile, no system ICU at install time); ``idna`` (UTS #46) gives a host's
punycode form. A mark carries the form an approver can compare: the punycode host
(``xn--gthub-n2e.com``), or for a name, or a host ``idna`` refuses, every non-ASCII
character escaped (``g\\u0456thub``).

Pure functions of the text; ASCII text costs one ``str.isascii`` call (the tables are read
the first time text that is not ASCII is looked at). At most
:data:`MAX_MARKS` marks per text, so a megabyte of look-alikes stays bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

#: The most marks one text gets (the rest are counted, not listed).
MAX_MARKS = 10
#: Longer words are not hosts (DNS names stop at 253) and are not looked at.
MAX_WORD_CHARS = 253
#: Scripts that go with any other (digits, punctuation, combining marks).
_ANY_SCRIPT = frozenset({"COMMON", "INHERITED"})
#: The arguments that hold a shell command: every word in them is looked at.
COMMAND_KEYS = frozenset({"command", "cmd"})

#: Script sets TS #39 counts as one ("highly restrictive"): Latin with the scripts of
#: Japanese, Chinese or Korean writing.
_ONE_WRITING = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^\s/?#\"'<>\\`|;&()]+)")
_WORD = re.compile(r"[^\s;|&$()<>`\\'\"{}\[\]=:/@,*!?#]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class LookAlike:
    """One host or name to mark: as written, why, and the form to compare it by."""

    text: str
    why: str
    plain: str  # punycode for a host, escapes for a name

    @property
    def note(self) -> str:
        """The words on the card beside the argument (the look-alike itself escaped by
        the caller like any text)."""
        return f"⚠ look-alike: {self.text} is {self.plain} ({self.why})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Marks:
    """What :func:`look_alikes` found: up to :data:`MAX_MARKS` marks and how many more."""

    found: tuple[LookAlike, ...] = ()
    more: int = 0


NO_MARKS = Marks()


def escaped(text: str) -> str:
    """``text`` with every non-ASCII character as a ``\\uXXXX`` escape."""
    return "".join(
        ch if ch.isascii() else (f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        for ch in text
    )


def _punycode(host: str) -> str:
    import idna  # only for text that is not ASCII

    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return escaped(host)


@lru_cache(maxsize=1024)
def _has_ascii_twin(ch: str) -> bool:
    """Whether confusables.txt pairs ``ch`` with an ASCII look-alike."""
    from confusable_homoglyphs import confusables

    found = confusables.is_confusable(ch, greedy=True, preferred_aliases=[])
    return bool(found) and any(
        glyph["c"].isascii() for entry in found for glyph in entry["homoglyphs"]
    )


def _why(label: str) -> str | None:
    """Why ``label`` (one host label, or one name) is a look-alike; None when it is not."""
    if label.isascii():
        return None
    # imported (and its tables read, about 1 MB) only when text that is not ASCII is shown
    from confusable_homoglyphs import categories

    scripts = {categories.alias(ch) for ch in label} - _ANY_SCRIPT
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in _ONE_WRITING):
        return "mixed scripts: " + ", ".join(sorted(s.title() for s in scripts))
    if all(_has_ascii_twin(ch) for ch in label if not ch.isascii()):
        written = next(iter(scripts), "COMMON").title()
        return f"{written} letters that look like ASCII"
    return None


def _host(host: str) -> LookAlike | None:
    for label in host.split("."):
        why = _why(label)
        if why is not None:
            return LookAlike(text=host, why=why, plain=_punycode(host))
    return None


def _name(word: str) -> LookAlike | None:
    why = _why(word)
    return None if why is None else LookAlike(text=word, why=why, plain=escaped(word))


def _url_hosts(text: str) -> list[str]:
    hosts = []
    for match in _URL.finditer(text):
        authority = match.group(1).rpartition("@")[2]
        host = authority[1:].partition("]")[0] if authority.startswith("[") else authority
        hosts.append(host.rpartition(":")[0] if host.count(":") == 1 else host)
    return hosts


def look_alikes(text: str, *, command: bool = False) -> Marks:
    """The look-alike hosts (and, in a ``command``, names) in ``text`` (module docstring)."""
    if text.isascii():
        return NO_MARKS
    found: dict[str, LookAlike] = {}
    more = 0

    def add(mark: LookAlike | None) -> None:
        nonlocal more
        if mark is None or mark.text in found:
            return
        if len(found) < MAX_MARKS:
            found[mark.text] = mark
        else:
            more += 1

    for host in _url_hosts(text):
        if len(host) <= MAX_WORD_CHARS:
            add(_host(host))
    if command:
        for match in _WORD.finditer(text):
            word = match.group(0).strip(".")
            if not word or word.isascii() or len(word) > MAX_WORD_CHARS:
                continue
            add(_host(word) if "." in word else _name(word))
    return Marks(found=tuple(found.values()), more=more)
