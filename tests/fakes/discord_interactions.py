"""Interactions in the fake Discord: their callbacks, follow-ups and webhook messages.

:class:`Interactions` answers the routes authorised by an interaction's token, as Discord
does (a 400 with code 50035 or 40060, a 404 with 10062, 10015 or 10008 where Discord
refuses): an interaction is answered once, and only if it was dispatched; a follow-up only
after the answer; a MODAL callback (type 9) is refused for a MODAL_SUBMIT.

* ``POST /interactions/<id>/<token>/callback``: the answer (the resource it made);
* ``POST /webhooks/<application>/itoken<id>``: a follow-up (kept, in order, in
  :attr:`Interactions.follow_ups`; the ephemeral ones, flag 64 or the first after an
  ephemeral deferral, which takes its place, with the ephemeral responses in
  :attr:`Interactions.ephemerals`);
* ``…/itoken<id>/messages/<id or @original>``: a follow-up edited, or a deferred response
  deleted (:attr:`Interactions.deleted_responses`).

Answers are ``(status, body)``, a None body being an empty 204, like
:class:`~tests.fakes.discord_members.People`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tests.fakes.discord_limits import FormError, message_problem, modal_problem
from tests.fakes.discord_payloads import JSON, TIMESTAMP

EPHEMERAL = 64  # message flag
Answer = tuple[int, JSON | None]
UNKNOWN_WEBHOOK: Answer = (404, {"message": "Unknown Webhook", "code": 10015})
#: A message payload made for a channel from a create body (not stored).
MakeMessage = Callable[[str, JSON], JSON]


def invalid(problem: FormError | str, code: int = 50035) -> Answer:
    """Discord's 400: a form it refuses (code 50035 with ``errors``), or another refusal."""
    if isinstance(problem, FormError):
        return 400, problem.body()
    return 400, {"message": problem, "code": code}


@dataclass(slots=True)
class Interactions:
    #: ``make(channel, body)`` builds a message payload; ``store`` also keeps it in the
    #: channel (a follow-up everyone sees).
    make: MakeMessage
    store: MakeMessage
    kinds: dict[str, int] = field(default_factory=dict)  # dispatched interaction id -> type
    channels: dict[str, str] = field(default_factory=dict)  # dispatched id -> channel
    #: Messages only the interaction's user sees, in order, by interaction id.
    ephemerals: dict[str, list[JSON]] = field(default_factory=dict)
    modals: dict[str, JSON] = field(default_factory=dict)  # id -> the modal it was answered with
    #: Every follow-up message, in order, by interaction id.
    follow_ups: dict[str, list[JSON]] = field(default_factory=dict)
    deferred: dict[str, int] = field(default_factory=dict)  # id -> flags of its deferral
    deleted_responses: set[str] = field(default_factory=set)  # ids whose response was deleted
    answered: set[str] = field(default_factory=set)

    def dispatched(self, data: JSON) -> None:
        """An INTERACTION_CREATE went to the client."""
        self.kinds[str(data["id"])] = int(data["type"])
        self.channels[str(data["id"])] = str(data["channel_id"])

    def route(self, method: str, path: str, body: JSON, query: Mapping[str, str]) -> Answer | None:
        if m := re.fullmatch(r"/interactions/(\d+)/[^/]+/callback", path):
            return self._callback(m[1], body)
        if (m := re.fullmatch(r"/webhooks/\d+/itoken(\d+)", path)) and method == "POST":
            return self._follow_up(m[1], body, wait=query.get("wait") in ("1", "true"))
        if m := re.fullmatch(r"/webhooks/\d+/itoken(\d+)/messages/(\d+|@original)", path):
            return self._webhook_message(method, m[1], m[2], body)
        return None

    def _callback(self, interaction_id: str, body: JSON) -> Answer:
        kind = self.kinds.get(interaction_id)
        if kind is None:
            return 404, {"message": "Unknown interaction", "code": 10062}
        if interaction_id in self.answered:
            return invalid("Interaction has already been acknowledged.", 40060)
        data = body.get("data")
        is_message = isinstance(data, dict) and body.get("type") in (4, 7)
        if is_message and (problem := message_problem(data)):
            return invalid(problem)
        if body.get("type") == 9:
            if kind == 5:
                return invalid(
                    FormError("type", "INTERACTION_RESPONSE_TYPE_INVALID", "Invalid response type")
                )
            if problem := modal_problem(data):
                return invalid(problem)
            assert isinstance(data, dict)
            self.modals[interaction_id] = data
        self.answered.add(interaction_id)
        if body.get("type") == 5:
            self.deferred[interaction_id] = int((data or {}).get("flags", 0))
        resource: JSON = {"type": body.get("type")}
        if isinstance(data, dict) and body.get("type") in (4, 7):
            resource["message"] = self.make(self.channels[interaction_id], data)
        if isinstance(data, dict) and body.get("type") == 4 and data.get("flags", 0) & EPHEMERAL:
            self._keep_ephemeral(interaction_id, data)
        ephemeral = bool(isinstance(data, dict) and data.get("flags", 0) & EPHEMERAL)
        interaction = {"id": interaction_id, "type": kind, "response_message_ephemeral": ephemeral}
        return 200, {"interaction": interaction, "resource": resource}

    def _follow_up(self, interaction_id: str, body: JSON, *, wait: bool) -> Answer:
        """A follow-up message: only after the interaction was answered (or deferred)."""
        if interaction_id not in self.answered:
            return UNKNOWN_WEBHOOK
        if problem := message_problem(body):
            return invalid(problem)
        first = interaction_id not in self.follow_ups
        deferral = self.deferred.get(interaction_id, 0) if first else 0
        if (int(body.get("flags", 0)) | deferral) & EPHEMERAL:
            message = self._keep_ephemeral(interaction_id, {**body, "flags": EPHEMERAL})
        else:
            message = self.store(self.channels[interaction_id], body)
        self.follow_ups.setdefault(interaction_id, []).append(message)
        return (200, message) if wait else (204, None)

    def _webhook_message(
        self, method: str, interaction_id: str, message_id: str, body: JSON
    ) -> Answer:
        """Edit a follow-up, or delete the original (deferred) response."""
        if interaction_id not in self.answered:
            return UNKNOWN_WEBHOOK
        if method == "DELETE" and message_id == "@original":
            self.deleted_responses.add(interaction_id)
            return 204, None
        sent = [m for m in self.follow_ups.get(interaction_id, []) if m["id"] == message_id]
        if method != "PATCH" or not sent:
            return 404, {"message": "Unknown Message", "code": 10008}
        if problem := message_problem(body):
            return invalid(problem)
        sent[0].update({k: body[k] for k in ("content", "components", "embeds") if k in body})
        sent[0]["edited_timestamp"] = TIMESTAMP
        return 200, sent[0]

    def _keep_ephemeral(self, interaction_id: str, body: JSON) -> JSON:
        message = self.make(self.channels[interaction_id], body)
        message["flags"] = int(body.get("flags", 0))
        message["attachments"] = [
            {"id": str(n), "filename": a.get("filename", "")}
            for n, a in enumerate(body.get("attachments") or [])
        ]
        self.ephemerals.setdefault(interaction_id, []).append(message)
        return message
