"""What every ``[channels.<kind>.<alias>]`` table has: the keys the core reads.

Access (allow-lists, DM and group policy, mentions), approvers and per-channel approval
overrides are decided by ``bot``, whatever the platform; each platform's model in
``channels/<kind>/config.py`` subclasses :class:`ChannelCommon` with its own keys (tokens,
URLs, modes) and is found through :mod:`bot.channel_registry`. This module imports no
platform code, so a platform's config module can import it without a cycle.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from bot.config_model import ConfigModel
from bot.envelope import Sender

#: How much a turn may do without asking (docs/approvals.md): ``[approval] level`` and its
#: overrides per channel and per agent.
ApprovalLevel = Literal["readonly", "supervised", "full"]
#: Whom a card and the requester's waiting notice name as able to approve
#: (``[approval] name_approvers``): nobody, the approvers who can see the conversation
#: (and the roles, in a group), or every eligible approver and role.
NameApprovers = Literal["none", "members", "all"]
#: Where an "Always" grant applies (``[approval] grant_scope``).
GrantScope = Literal["conversation", "channel", "global"]
#: The most grant choices a card offers (Telegram's row and Slack's overflow fit five).
MAX_GRANT_CHOICES = 5


class GrantChoice(ConfigModel):
    """One ``[[approval.grant_choices]]`` entry: a size of yes an approver may pick on a
    card (docs/approvals.md, "Grants chosen at click time"). ``key`` travels in the button's
    payload; ``label`` is what the approver reads. The grant covers ``scope`` for ``ttl_s``
    seconds (None: as long as ``grant_ttl_s`` allows), only the call's exact arguments when
    ``exact``, and is offered only for tools matching ``tools``."""

    key: str = Field(pattern=r"^[a-z0-9_-]{1,8}$")
    label: str = Field(min_length=1, max_length=40)
    scope: GrantScope = "conversation"
    ttl_s: float | None = Field(default=None, gt=0)
    exact: bool = False
    tools: list[str] = Field(default_factory=lambda: ["*"], min_length=1)


def default_grant_choices() -> list[GrantChoice]:
    """ "for 1 h", "for this conversation", "for this exact command"."""
    return [
        GrantChoice(key="1h", label="for 1 h", ttl_s=3600),
        GrantChoice(key="conv", label="for this conversation"),
        GrantChoice(key="exact", label="for this exact command", exact=True),
    ]


def check_grant_choices(choices: list[GrantChoice] | None) -> list[GrantChoice] | None:
    """At most :data:`MAX_GRANT_CHOICES`, keys and labels unique."""
    if choices is None:
        return None
    if len(choices) > MAX_GRANT_CHOICES:
        raise ValueError(f"at most {MAX_GRANT_CHOICES} grant_choices")
    for name in ("key", "label"):
        values = [getattr(c, name) for c in choices]
        if len(set(values)) != len(values):
            raise ValueError(f"grant_choices: each {name} must be unique")
    return choices


class ReminderOverride(ConfigModel):
    """The keys of a card's life a narrower table may set (a channel's ``approval`` table,
    ``[agents.<name>.approval]``, a tool's entry in either ``tools`` table): the life itself
    (``timeout_s``), reminders and escalation; unset keys inherit
    (docs/approvals.md#reminders-and-escalation). ``remind_max = 0`` turns reminders off
    there, ``escalate_to = []`` and ``escalate_to_roles = []`` escalation."""

    #: The card's life there; ``approval.wait_in_turn_s`` is cut to it.
    timeout_s: float | None = Field(default=None, gt=0)
    remind_after_s: float | None = Field(default=None, gt=0)
    remind_max: int | None = Field(default=None, ge=0, le=50)
    escalate_after_s: float | None = Field(default=None, gt=0)
    escalate_to: list[str] | None = Field(default=None, max_length=50)
    escalate_to_roles: list[str] | None = Field(default=None, max_length=50)


class ToolApproval(ReminderOverride):
    """One entry of ``[approval.tools]`` or ``[agents.<name>.approval.tools]``, keyed by a
    tool name or a shell-style pattern (``"mcp_github_*"``): that tool's own settings."""


#: The longest pattern a quorum rule may hold, and how many ``*`` it may use: matching stays
#: linear (``fnmatch`` compiles to atomic groups) and a rule stays readable.
QUORUM_PATTERN_CHARS = 200
QUORUM_PATTERN_STARS = 10


def _check_pattern(where: str, pattern: str) -> str:
    if not pattern.strip():
        raise ValueError(f"{where}: an empty pattern matches nothing; remove it")
    if len(pattern) > QUORUM_PATTERN_CHARS:
        raise ValueError(f"{where}: a pattern is at most {QUORUM_PATTERN_CHARS} characters")
    if pattern.count("*") > QUORUM_PATTERN_STARS:
        raise ValueError(f"{where}: a pattern has at most {QUORUM_PATTERN_STARS} '*'")
    return pattern


class QuorumRule(ConfigModel):
    """One ``[[approval.quorum.rules]]`` entry: a call of one of ``tools`` (names or
    shell-style patterns, as everywhere in the policy) whose ``arguments`` all match needs
    ``approvals`` distinct approvers. ``arguments`` maps an argument name to shell-style
    patterns matched against the whole value, whitespace folded (docs/approvals.md,
    "Two keys"); no ``arguments``: every call of the tools."""

    tools: list[str] = Field(min_length=1, max_length=50)
    arguments: dict[str, list[str]] = Field(default={}, max_length=10)
    approvals: int = Field(ge=2, le=10)

    @model_validator(mode="after")
    def _check_patterns(self) -> QuorumRule:
        for tool in self.tools:
            _check_pattern("quorum rule tools", tool)
        for name, patterns in self.arguments.items():
            if not patterns:
                raise ValueError(f"quorum rule arguments.{name}: list at least one pattern")
            if len(patterns) > 50:
                raise ValueError(f"quorum rule arguments.{name}: at most 50 patterns")
            for pattern in patterns:
                _check_pattern(f"quorum rule arguments.{name}", pattern)
        return self


class QuorumConfig(ConfigModel):
    """``[approval.quorum]``: the calls that need several approvers. ``grants_satisfy``:
    whether an "Always" grant lets such a call run without them (off: never)."""

    rules: list[QuorumRule] = Field(default=[], max_length=50)
    grants_satisfy: bool = False


class ApprovalOverride(ReminderOverride):
    """Per-channel overrides of the approval policy; unset fields inherit."""

    level: ApprovalLevel | None = None
    auto_approve: list[str] | None = None
    always_ask: list[str] | None = None
    deny: list[str] | None = None
    self_approval: bool | None = None
    grant_choices: list[GrantChoice] | None = None

    _grant_choices = field_validator("grant_choices")(check_grant_choices)
    #: Replaces ``[approval.quorum]`` whole on this channel alias.
    quorum: QuorumConfig | None = None


class DeliveryOptions(ConfigModel):
    """``[channels.<kind>.<alias>.delivery]``: how the channel's answers go out.

    ``long_answer = "file"`` sends an answer that would split into more than
    ``long_answer_max_messages`` messages as one Markdown file (``answer.md``) with its first
    lines as the caption, on a platform that can post files; ``"split"`` (the default) always
    sends messages. Read by the adapter when it starts."""

    long_answer: Literal["split", "file"] = "split"
    long_answer_max_messages: int = Field(default=3, ge=1)


class ContextOptions(ConfigModel):
    """``[channels.<kind>.<alias>.context]``: what the bot reads of a group conversation
    besides the messages addressed to it (docs/context.md). Everything is off by default.

    ``group_messages`` (0: off) is how many messages not addressed to the bot are kept per
    conversation, each for ``group_minutes``, for context only; ``off_in`` lists the
    conversations where none is kept. ``thread_messages`` (0: off) is how many earlier
    messages of a thread the bot is first mentioned in are fetched from the platform, at most
    ``thread_chars`` characters in all."""

    group_messages: int = Field(default=0, ge=0, le=500)
    group_minutes: int = Field(default=60, ge=1, le=10_080)
    off_in: list[str] = Field(default=[])
    thread_messages: int = Field(default=0, ge=0, le=200)
    thread_chars: int = Field(default=8000, ge=500, le=100_000)

    def keeps_in(self, conversation_id: str) -> bool:
        """Whether group context is kept in ``conversation_id``."""
        return self.group_messages > 0 and conversation_id not in self.off_in


class ChannelCommon(ConfigModel):
    """The keys every channel kind shares (see docs/configuration.md)."""

    enabled: bool = True
    allowed_users: list[str] = Field(default=[])
    approvers: list[str] = Field(default=[])
    approver_roles: list[str] = Field(default=[])
    dm_policy: Literal["allowlist", "pairing", "open", "disabled"] = "allowlist"
    group_policy: Literal["allowlist", "open", "disabled"] = "open"
    allowed_conversations: list[str] = Field(default=[])
    require_mention: bool = True
    thread_counts_as_mention: bool = True
    session_per_user_in_groups: bool = False
    ignore_other_bots: bool = True
    reactions_for_approval: bool = False
    excluded_tools: list[str] = Field(default=[])
    #: ``shell``'s network in this channel (``none`` or ``host``); unset: tools.shell.network.
    shell_network: Literal["none", "host"] | None = None
    approval: ApprovalOverride = Field(default_factory=ApprovalOverride)
    #: The agent that answers here unless a route of ``[agents]`` says otherwise.
    agent: str = "default"
    delivery: DeliveryOptions = Field(default_factory=DeliveryOptions)
    context: ContextOptions = Field(default_factory=ContextOptions)
    #: The language hint for voice notes here (unset: the agent's, then
    #: ``transcription.language``).
    transcription_language: str | None = Field(default=None, pattern=r"^[a-z]{2,3}$")

    def is_approver(self, sender: Sender) -> bool:
        """Whether the sender of a message is one of this channel's approvers: listed in
        ``approvers`` by id, or holding one of ``approver_roles`` among the roles the
        platform gave with the message (:attr:`bot.envelope.Sender.roles`, never its text).
        The rule a click on an approval card is held to, applied where a message is all
        there is (budget and rate-limit exemptions, pairing from the chat)."""
        if sender.id in self.approvers:
            return True
        return any(role in self.approver_roles for role in sender.roles)
