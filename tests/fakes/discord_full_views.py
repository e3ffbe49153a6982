"""Full views on Discord from a test's side: press a button on any message the approver sees
(a card, an ephemeral answer, a full view), wait for the full view's ephemeral messages, and
read back everything they show — the code blocks put together, or the attached file."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from channels.discord.cards import GOES_ON
from channels.discord.markup import escape_text
from tests.fakes.discord_payloads import JSON, component_interaction
from tests.fakes.discord_server import Call, FakeDiscord

_CODE = re.compile(r"```text\n(.*?)\n```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Press:
    """A button press as Discord delivered it, and the adapter's callback answer."""

    interaction_id: str
    callback: Call


def buttons(message: JSON) -> list[JSON]:
    return [c for row in message.get("components") or [] for c in row["components"]]


def button(message: JSON, ending: str) -> JSON:
    """The one button on ``message`` whose custom id matches ``…:<ending>`` (the card's
    message id, if any, after it as ``:@<id>``)."""
    pattern = re.compile(rf"ap:[^:]+:{ending}(?::@\d+)?")
    [found] = [b for b in buttons(message) if pattern.fullmatch(b["custom_id"])]
    return found


def as_once_shown(message: JSON, label: str, custom_id: str) -> JSON:
    """``message`` as a client that still shows an older version of it sends it: with one
    more button (what a card posted before an upgrade, or edited since, may carry)."""
    shown = copy.deepcopy(message)
    extra = {"type": 2, "style": 3, "label": label, "custom_id": custom_id}
    shown["components"] = [{"type": 1, "components": [extra]}, *shown["components"]]
    return shown


async def press(
    fake: FakeDiscord, message: JSON, ending: str, user: JSON, roles: list[str] | None = None
) -> Press:
    """Press the button ``…:<ending>`` on ``message`` and wait for the adapter's callback."""
    interaction_id = fake.new_id()
    payload = component_interaction(
        id=interaction_id,
        message=message,
        custom_id=button(message, ending)["custom_id"],
        user=user,
        guild_id=fake.guild_of(message["channel_id"]),
        roles=roles,
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    [call] = await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return Press(interaction_id=interaction_id, callback=call)


async def full_view(fake: FakeDiscord, shown: Press) -> list[JSON]:
    """The ephemeral messages of the full view opened by ``shown``, once its last message
    (the one with buttons) arrived."""

    def messages() -> list[JSON]:
        return fake.ephemerals.get(shown.interaction_id, [])

    def complete() -> bool:
        return any(m["components"] for m in messages())

    await fake.wait_until(complete)
    return messages()


def follow_ups(fake: FakeDiscord, shown: Press) -> list[Call]:
    """The follow-up requests the full view was sent with, in order."""
    token = f"itoken{shown.interaction_id}"
    return fake.calls_to("POST", rf"/webhooks/\d+/{token}")


def readable_text(messages: list[JSON]) -> str:
    """What a full view shows in its code blocks, put together: a part whose last line goes
    on in the next one is joined without a line break; the zero-width spaces that break runs
    of three backticks are taken out again (the full text escapes any real one)."""
    goes_on = escape_text(GOES_ON)
    text = ""
    for message in messages:
        for code in _CODE.findall(message["content"]):
            text += code + ("" if goes_on in message["content"] else "\n")
    return text.removesuffix("\n").replace("\u200b", "")
