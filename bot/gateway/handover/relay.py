"""The relay of chat commands between replicas: a ``/stop`` that reached one replica is
carried out by the replicas that own the sessions it acts on.

**A handed-over ``/stop`` is acknowledged.** Nothing polls for commands, so the replica
that hands one over sends it again until each owner says it ran it (an owner runs a copy
sent again once); when the owner that was to answer never says so, the replica the
``/stop`` reached answers it itself. A notification carries a few kilobytes at most
(:data:`~bot.store.signals.MAX_PAYLOAD_BYTES`), so the command goes as what stopping and
answering need: its envelope without the words after ``/stop`` and without attachments
(the sender's display name too, should that still not fit).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace

import structlog

from bot.envelope import envelope_from_json, envelope_to_json
from bot.errors import StorageError
from bot.gateway.admission import Arrival
from bot.gateway.handover.ownership import HANDOVER, Ownership
from bot.store import Store
from bot.store.signals import MAX_PAYLOAD_BYTES

log = structlog.get_logger(__name__)

#: How long a replica that handed a ``/stop`` over waits for the owner to say it was done,
#: and how many times it sends it (a notification may be lost: nothing polls for commands)
ACK_S = 2.0
COMMAND_SENDS = 5
#: How many handed-over commands a replica remembers (a command sent again runs once)
REMEMBERED_COMMANDS = 1000

Command = Callable[[Arrival, bool], Awaitable[None]]
"""Runs a chat command another replica handed over (``/stop``; the flag: answer it even when
it finds nothing to do)."""


class CommandRelay:
    """Hands commands over to their sessions' owners and runs those handed over here
    (module docstring). One per :class:`~bot.gateway.handover.Handover`."""

    def __init__(self, *, store: Store, ownership: Ownership) -> None:
        self._store = store
        self._ownership = ownership
        self._commands: asyncio.Queue[tuple[Arrival, bool, str, str]] = asyncio.Queue()
        #: handed-over commands heard here, by id: True once run (a copy sent again is
        #: only acknowledged again)
        self._heard: dict[str, bool] = {}
        #: the acknowledgements this replica waits for, by (command id, owner)
        self._acks: dict[tuple[str, str], asyncio.Future[None]] = {}
        self._run_command: Command | None = None

    def run_commands_with(self, run: Command) -> None:
        """Have ``run`` carry out the chat commands other replicas hand over."""
        self._run_command = run

    async def forward_stop(self, arrival: Arrival, nothing_here: bool) -> bool:
        """Hand a ``/stop`` that reached this replica to the other live replicas that own
        the sessions it acts on (its session, or every session of its conversation for one
        of a whole conversation); whether any will answer it. When it stopped nothing here
        (``nothing_here``), the first of them answers even if it stops nothing either."""
        envelope = arrival.envelope
        try:
            if envelope.command_scope == "conversation":
                conversation = f"{envelope.channel}:{envelope.conversation_id}"
                owners = await self._store.session_owners.owners_in(conversation)
            else:
                owner = await self._store.session_owners.owner(arrival.session_key)
                owners = set() if owner is None else {owner}
            others = owners - {self._ownership.me}
            if not others:
                return False
            live = await self._ownership.live()
            handed = sorted(others & live)
            if not handed:
                return False
            command_id = uuid.uuid4().hex
            command = self._forwardable(arrival, command_id, handed)
            if command is None:
                log.warning("command_not_handed_over", error="its envelope is too large to send")
                return False
            acked = await self._hand_over(arrival, command_id, command, handed, nothing_here)
        except StorageError as exc:
            log.warning("command_not_handed_over", error=str(exc))
            return False
        log.info("command_handed_over", owners=handed, acknowledged=acked)
        # the owner asked to answer said it ran it; otherwise this replica answers (what
        # it stopped here, or that nothing it can reach runs)
        return handed[0] in acked

    def _forwardable(self, arrival: Arrival, command_id: str, handed: list[str]) -> str | None:
        """The envelope of a ``/stop`` as it is handed over (JSON), small enough for the
        notification to every owner of ``handed``: the command word without the words after
        it and no attachments (stopping and answering read neither), the sender's display
        name and the conversation's titles dropped too if it still does not fit; None when
        nothing fits (this replica then answers the command itself)."""
        envelope = arrival.envelope
        words = envelope.text.split(maxsplit=1)
        bare = replace(envelope, text=words[0] if words else "", attachments=())
        nameless = replace(
            bare,
            sender=replace(bare.sender, display_name=""),
            conversation_title="",
            thread_title="",
        )
        for candidate in (bare, nameless):
            command = envelope_to_json(candidate)
            sizes = (
                len(self._command_payload(arrival, command_id, command, owner, False).encode())
                for owner in handed
            )
            if max(sizes) <= MAX_PAYLOAD_BYTES:
                return command
        return None

    def _command_payload(
        self, arrival: Arrival, command_id: str, command: str, owner: str, answer: bool
    ) -> str:
        payload = {
            "to": owner,
            "from": self._ownership.me,
            "id": command_id,
            "session": arrival.session_key,
            "command": command,
            "answer": answer,
        }
        # not escaped: a non-ASCII letter is two or three bytes, not six
        return json.dumps(payload, ensure_ascii=False)

    async def _hand_over(
        self,
        arrival: Arrival,
        command_id: str,
        command: str,
        handed: list[str],
        nothing_here: bool,
    ) -> list[str]:
        """Send ``command`` (the envelope as :meth:`_forwardable` wrote it) to each of
        ``handed`` until each says it ran it (again after :data:`ACK_S`, at most
        :data:`COMMAND_SENDS` times: a notification may be lost, the owner runs a copy sent
        again once); the owners that said so."""
        loop = asyncio.get_running_loop()
        waiting = {owner: loop.create_future() for owner in handed}
        for owner, future in waiting.items():
            self._acks[(command_id, owner)] = future
        try:
            for _ in range(COMMAND_SENDS):
                for owner in [o for o, f in waiting.items() if not f.done()]:
                    answer = nothing_here and owner == handed[0]
                    payload = self._command_payload(arrival, command_id, command, owner, answer)
                    await self._store.signals.notify(HANDOVER, payload)
                pending = [f for f in waiting.values() if not f.done()]
                if not pending:
                    break
                await asyncio.wait(pending, timeout=ACK_S)
        finally:
            for owner in handed:
                self._acks.pop((command_id, owner), None)
        return [owner for owner, future in waiting.items() if future.done()]

    def heard(self, data: Mapping[str, object]) -> None:
        """A notification to this replica that carries a command or the acknowledgement
        of one (``data``: its payload, read)."""
        try:
            if "ack" in data:
                future = self._acks.get((str(data["ack"]), str(data["by"])))
                if future is not None and not future.done():
                    future.set_result(None)
                return
            key = str(data["session"])
            envelope = envelope_from_json(str(data["command"]))
            answer = bool(data.get("answer", True))
            sender, command_id = str(data.get("from", "")), str(data.get("id", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("handover_signal_unreadable")
            return
        if command_id and command_id in self._heard:
            if self._heard[command_id]:  # ran already: its acknowledgement was lost
                self._commands.put_nowait(
                    (Arrival(envelope=envelope, session_key=key), False, sender, command_id)
                )
        else:
            if command_id:
                self._heard[command_id] = False
                while len(self._heard) > REMEMBERED_COMMANDS:
                    del self._heard[next(iter(self._heard))]
            arrival = Arrival(envelope=envelope, session_key=key)
            self._commands.put_nowait((arrival, answer, sender, command_id))

    async def run(self) -> None:
        """Run the commands handed over here, one at a time, and acknowledge each; lives
        until cancelled."""
        while True:
            arrival, answer, sender, command_id = await self._commands.get()
            if self._run_command is None:
                continue
            if not self._heard.get(command_id, False):
                try:
                    await self._run_command(arrival, answer)
                except Exception:
                    # Boundary: a handed-over command that fails is logged, never fatal.
                    log.exception("handed_over_command_failed")
                if command_id in self._heard:
                    self._heard[command_id] = True
            if sender and command_id:
                ack = {"to": sender, "ack": command_id, "by": self._ownership.me}
                try:
                    await self._store.signals.notify(HANDOVER, json.dumps(ack))
                except StorageError as exc:
                    log.warning("command_ack_failed", error=str(exc))
