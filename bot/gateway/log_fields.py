"""Fields bound to every log line of a block, as structlog's ``bind_contextvars`` binds them.

:class:`LogFields` names its fields once and sets and resets their context variables
directly: ``bind_contextvars`` builds each variable's name and looks it up on every call,
which a message's admission (two fields) and its turn (six) paid every time. The variables
are structlog's own, so ``merge_contextvars`` puts the fields on every line as before, and
``clear_contextvars`` clears them.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from structlog.contextvars import bind_contextvars, reset_contextvars

Bound = tuple[Token[Any], ...]


class LogFields:
    """The fields ``names``, in that order, for :meth:`bind` and :meth:`reset`."""

    __slots__ = ("_vars",)

    def __init__(self, *names: str) -> None:
        # structlog's variable of each name, as bind_contextvars makes it (an unbound
        # variable holds Ellipsis, which merge_contextvars leaves out)
        tokens = bind_contextvars(**dict.fromkeys(names, Ellipsis))
        self._vars: tuple[ContextVar[Any], ...] = tuple(tokens[name].var for name in names)
        reset_contextvars(**tokens)

    def bind(self, *values: object) -> Bound:
        """Bind the fields to ``values`` (one per name, in order) until :meth:`reset`."""
        return tuple([var.set(value) for var, value in zip(self._vars, values, strict=True)])

    def reset(self, bound: Bound) -> None:
        """The fields as they were before :meth:`bind` returned ``bound``."""
        for var, token in zip(self._vars, bound, strict=True):
            var.reset(token)
