"""Named crash points: where the crash-matrix tests kill the daemon, deterministically.

``HATCHWAY_CRASH_AT=<point>[:<n>]`` in the daemon's environment makes the process kill
itself with ``SIGKILL`` the ``n``-th time (default the first) it reaches :func:`crash_point`
with that name, exactly as ``kill -9`` would at that moment: nothing is flushed, no
``finally`` runs. Unset (always, outside those tests), a crash point is one comparison.

The points, in the order a turn reaches them (docs/reliability.md):

* ``after_admit`` — the message is in the inbox, its turn not begun;
* ``mid_stream`` — Slack only: an answer being streamed into an assistant thread has
  started (its message exists, its ``ts`` is recorded), the model still writing;
* ``after_model_call`` — the model answered (a tool call or the final text), nothing of it
  recorded;
* ``after_tool`` — a tool ran, its result not recorded;
* ``after_card_post`` — an approval card is posted, where it is (its message id) not yet
  stored;
* ``after_answer`` — the final answer is in history, its reply recorded with it where the
  channel can check a delivery (else not yet recorded), not sent;
* ``after_record`` — a reply is recorded ``sending``, its request not yet made (a reply in
  flight: recovery cannot tell whether it arrived where the platform cannot be asked);
* ``before_request`` — Telegram only: a message is recorded by the adapter too
  (:mod:`channels.telegram.send_record`), its request not yet made;
* ``after_request`` — Telegram only: the request made the message, the adapter has not
  recorded its id (the message whose id only an edit probe can find);
* ``after_send`` — the platform took the reply, the ledger does not know it yet;
* ``after_mark`` — the reply is recorded ``sent`` and the inbox entry ``done``;
* ``after_persist`` — a Slack event is stored, not yet acknowledged.
"""

from __future__ import annotations

import os
import signal

ENV = "HATCHWAY_CRASH_AT"
POINTS = (
    "after_admit",
    "mid_stream",
    "after_model_call",
    "after_tool",
    "after_card_post",
    "after_answer",
    "after_record",
    "before_request",
    "after_request",
    "after_send",
    "after_mark",
    "after_persist",
)


def _parse(value: str) -> tuple[str, int] | None:
    name, _, count = value.strip().partition(":")
    if name not in POINTS:
        return None
    return name, int(count) if count.isdigit() and int(count) > 0 else 1


_target = _parse(os.environ.get(ENV, ""))
_reached = 0


def crash_point(name: str) -> None:
    """Kill this process with ``SIGKILL`` if ``HATCHWAY_CRASH_AT`` names this point and
    this is the time it asks for (module docstring)."""
    global _reached
    if _target is None or _target[0] != name:
        return
    _reached += 1
    if _reached >= _target[1]:
        os.kill(os.getpid(), signal.SIGKILL)
