"""People by name: a page names each person it shows by their latest display name with their
id beside it, ``Alice (12345)``.

Names come from :attr:`bot.store.Store.display_names` (the name each person last wrote with,
kept as messages arrive: :mod:`bot.gateway.names`), read once per page for every person it
shows. A name is whatever its owner typed: it is shown, never matched on, secrets masked and
cleaned of control, format and invisible characters as the chat's cards clean it
(:func:`bot.webconsole.display.text`, which uses :func:`bot.visible_text.visible`). Someone
with no name kept (or a decider that is not a person: ``runtime``, ``operator:NAME``) is shown
by id alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.store import Store
from bot.store.display_names import identity
from bot.webconsole import display

#: Deciders that are not platform users.
NOT_PEOPLE_PREFIXES = ("operator:", "forgotten:")
RUNTIME = "runtime"


def is_person(user_id: str) -> bool:
    return bool(user_id) and user_id != RUNTIME and not user_id.startswith(NOT_PEOPLE_PREFIXES)


class People:
    """The names known for the people of one page."""

    def __init__(self, names: dict[str, str]) -> None:
        self._names = names

    @classmethod
    async def load(cls, store: Store, who: Iterable[tuple[str, str]]) -> People:
        """The names of ``who`` (pairs of platform kind and user id)."""
        wanted = {identity(kind, user) for kind, user in who if kind and is_person(user)}
        return cls(await store.display_names.of(wanted) if wanted else {})

    def name(self, kind: str, user_id: str) -> str:
        """The person's name as shown (empty when none is kept)."""
        return display.text(self._names.get(identity(kind, user_id), ""), 80)

    def show(self, kind: str, user_id: str) -> str:
        """``Alice (12345)``; the id alone without a name."""
        shown_id = display.text(user_id, 120)
        name = self.name(kind, user_id) if is_person(user_id) else ""
        return f"{name} ({shown_id})" if name and name != shown_id else shown_id


def kind_of(channel: str) -> str:
    """The platform kind of a ``kind.alias``."""
    return channel.partition(".")[0]
