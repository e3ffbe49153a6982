"""What Discord approval buttons and modals carry, and how a press is read: the core's codec
within Discord's 100-character ``custom_id``, the form of earlier releases (still read), a
later format version or a damaged id (a polite refusal, nothing decided), ids that are not
ours (left alone), and a submitted reply's payload."""

from __future__ import annotations

import secrets

import pytest

from bot.cards import UNREADABLE_BUTTON, Button, CardVerb, Unreadable
from bot.channel import ApprovalChoice, ClickVerdict
from bot.store import Store
from channels.discord.card_surface import (
    LEGACY_PREFIX,
    ReplySubmission,
    read_custom_id,
    submitted_reply,
)
from channels.discord.cards import FIELD_ID, MAX_CUSTOM_ID, button_codec
from tests.fakes.discord_approvals import (
    APPROVAL_ID,
    click,
    ephemeral_text,
    pending_card,
    request_turn,
    submit_reply,
)
from tests.fakes.discord_full_views import as_once_shown
from tests.fakes.discord_payloads import JSON, component_interaction
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import BOB, RecordingHost, make_channel, running

CARD_ID = "950000000000000002"  # a Discord snowflake: at most 20 digits

DRAWN = [
    Button(approval_id=secrets.token_hex(12), verb=verb, full_view=full_view, card=card)
    for verb in CardVerb
    for full_view in (False, True)
    for card in ("", CARD_ID)
    if not (full_view and verb in (CardVerb.REPLY, CardVerb.SHOW_FULL))
]


# -- the codec within Discord's limit --------------------------------------------------------


@pytest.mark.parametrize("button", DRAWN, ids=lambda b: f"{b.verb}-{b.full_view}-{bool(b.card)}")
def test_every_button_fits_a_custom_id_and_reads_back_after_a_restart(button: Button) -> None:
    custom_id = button_codec().pack(button)
    assert 1 <= len(custom_id) <= MAX_CUSTOM_ID
    # a new codec (a restart, another replica) reads it the same
    assert read_custom_id(button_codec(), custom_id) == button


def test_a_long_approval_id_travels_as_a_digest_this_process_knows() -> None:
    """Ids the approval service makes fit verbatim (24 hex); a longer one (or one with ``:``)
    is carried as a digest: read back here, unknown to another process (its press reads as
    an unknown approval, answered "expired")."""
    codec = button_codec()
    for approval_id in ("x" * 90, "has:colon"):
        button = Button(
            approval_id=approval_id, verb=CardVerb.APPROVE, full_view=True, card=CARD_ID
        )
        custom_id = codec.pack(button)
        assert len(custom_id) <= MAX_CUSTOM_ID and approval_id not in custom_id
        assert read_custom_id(codec, custom_id) == button
        elsewhere = read_custom_id(button_codec(), custom_id)
        assert isinstance(elsewhere, Button) and elsewhere.approval_id != approval_id


# -- earlier releases, later versions, and ids not ours --------------------------------------


@pytest.mark.parametrize(
    ("custom_id", "read"),
    [
        ("hatchway:ap:apr-1:a", Button(approval_id="apr-1", verb=CardVerb.APPROVE)),
        ("hatchway:ap:apr-1:d", Button(approval_id="apr-1", verb=CardVerb.DENY)),
        ("hatchway:ap:apr-1:w", Button(approval_id="apr-1", verb=CardVerb.ALWAYS)),
        ("hatchway:ap:Xy_9-a.b:e", Button(approval_id="Xy_9-a.b", verb=CardVerb.REPLY)),
        ("hatchway:ap:apr-1:f", Button(approval_id="apr-1", verb=CardVerb.SHOW_FULL)),
        (
            f"hatchway:ap:apr-1:f:{CARD_ID}",
            Button(approval_id="apr-1", verb=CardVerb.SHOW_FULL, card=CARD_ID),
        ),
        (
            f"hatchway:ap:apr-1:fa:{CARD_ID}",
            Button(approval_id="apr-1", verb=CardVerb.APPROVE, full_view=True, card=CARD_ID),
        ),
        (
            "hatchway:ap:apr-1:fw",
            Button(approval_id="apr-1", verb=CardVerb.ALWAYS, full_view=True),
        ),
    ],
)
def test_the_form_of_earlier_releases_is_still_read(custom_id: str, read: Button) -> None:
    assert custom_id.startswith(LEGACY_PREFIX)
    assert read_custom_id(button_codec(), custom_id) == read


@pytest.mark.parametrize(
    "custom_id",
    [
        "v2:apr-1:a",  # a later format version
        "v17:anything",
        "ap:apr-1:zz",  # damaged
        "ap::a",
        "hatchway:ap:apr-1:z",  # the earlier form, damaged
        "hatchway:ap::a",
        "hatchway:ap:apr-1:a:1",  # a card only on the full view's buttons
        "hatchway:ap:has space:a",
    ],
)
def test_a_payload_of_ours_that_cannot_be_read_is_unreadable(custom_id: str) -> None:
    assert read_custom_id(button_codec(), custom_id) is Unreadable.PAYLOAD


@pytest.mark.parametrize("custom_id", ["poll:yes", "other:ap:x:a", "hatchway:reply", "", None])
def test_other_ids_are_not_ours(custom_id: str | None) -> None:
    assert read_custom_id(button_codec(), custom_id) is None


# -- over discord.py against the fake ---------------------------------------------------------


async def _press_id(fake: FakeDiscord, message: JSON, custom_id: str, user: JSON) -> Call:
    interaction_id = fake.new_id()
    payload = component_interaction(
        id=interaction_id,
        message=message,
        custom_id=custom_id,
        user=user,
        guild_id=fake.guild_of(message["channel_id"]),
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    [call] = await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return call


@pytest.mark.usefixtures("discord_env")
@pytest.mark.parametrize(
    ("code", "choice"), [("a", ApprovalChoice.APPROVE), ("d", ApprovalChoice.DENY)]
)
async def test_a_card_drawn_by_an_earlier_release_still_decides(
    fake: FakeDiscord, store: Store, code: str, choice: ApprovalChoice
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        legacy = f"hatchway:ap:{APPROVAL_ID}:{code}"
        old_card = as_once_shown(fake.messages[sent.message_id], "Old", legacy)
        callback = await _press_id(fake, old_card, legacy, BOB)
    assert callback.body == {"type": 6}  # accepted: the card edit follows
    [seen] = host.clicks
    assert (seen.approval_id, seen.choice, seen.full_view) == (APPROVAL_ID, choice, False)
    assert seen.card is not None and seen.card.message_id == sent.message_id


@pytest.mark.usefixtures("discord_env")
async def test_a_reply_dialog_opened_by_an_earlier_release_still_counts(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        callback = await submit_reply(
            fake, sent.message_id, "no", BOB, custom_id=f"hatchway:ap:{APPROVAL_ID}:e"
        )
    assert ephemeral_text(callback) == ClickVerdict.ACCEPTED.message
    assert [(c.choice, c.replacement_text) for c in host.clicks] == [(ApprovalChoice.DENY, "no")]


@pytest.mark.usefixtures("discord_env")
@pytest.mark.parametrize("via", ["button", "modal"])
@pytest.mark.parametrize("custom_id", [f"v2:{APPROVAL_ID}:a", "hatchway:ap:x:z"])
async def test_a_button_of_another_version_is_refused_politely_and_decides_nothing(
    fake: FakeDiscord, store: Store, custom_id: str, via: str
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        if via == "button":
            newer = as_once_shown(fake.messages[sent.message_id], "Newer", custom_id)
            callback = await _press_id(fake, newer, custom_id, BOB)
        else:
            callback = await submit_reply(fake, sent.message_id, "no", BOB, custom_id=custom_id)
        # the channel goes on answering: a button it draws still decides
        accepted = await click(fake, sent.message_id, "a", BOB)
    assert ephemeral_text(callback) == UNREADABLE_BUTTON
    assert accepted.body == {"type": 6}
    assert [c.choice for c in host.clicks] == [ApprovalChoice.APPROVE]


# -- a submitted reply -----------------------------------------------------------------------


def _text(custom_id: str, value: object) -> dict[str, object]:
    return {"type": 4, "id": 2, "custom_id": custom_id, "value": value}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"custom_id": "m", "components": [{"type": 18, "component": _text(FIELD_ID, "hi")}]},
            ReplySubmission(custom_id="m", text="hi"),
        ),
        (
            {"custom_id": "m", "components": [{"type": 1, "components": [_text(FIELD_ID, "x")]}]},
            ReplySubmission(custom_id="m", text="x"),
        ),
        (  # the field is missing: an empty reply, refused by the adapter
            {"custom_id": "m", "components": [{"type": 18, "component": _text("other", "x")}]},
            ReplySubmission(custom_id="m", text=""),
        ),
        ({"custom_id": "m"}, ReplySubmission(custom_id="m", text="")),
        ({"custom_id": "", "components": []}, None),
        ({"components": []}, None),
        ({"custom_id": "m", "components": [{"type": "label"}]}, None),
        (None, None),
    ],
)
def test_submitted_reply(data: dict[str, object] | None, expected: ReplySubmission | None) -> None:
    assert submitted_reply(data) == expected
