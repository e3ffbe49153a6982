"""The platforms' documented limits, as data: what the loopback fakes refuse, each limit with
the published description (and version) it comes from.

Nothing here is fetched at test time; the values were read from the descriptions named in
:data:`TELEGRAM_API`, :data:`SLACK_WEB_API`, :data:`SLACK_BLOCK_KIT` and
:data:`DISCORD_OPENAPI` (``tests/fakes/README.md`` says which version each fake follows and
where a fake deliberately differs). The fakes' checks
(:mod:`tests.fakes.telegram_rules`, :mod:`tests.fakes.slack_blocks`,
:mod:`tests.fakes.slack_views`, :mod:`tests.fakes.discord_limits`) read these values; the
tests of the fakes (``tests/fakes/test_{telegram,slack,discord}_limits.py``) send one request
over each limit and one within it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """A published API description: its title, version and where it is read."""

    title: str
    version: str
    where: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Limit:
    """``least`` to ``most`` (inclusive) of ``unit`` for ``what``, as ``source`` documents it."""

    what: str
    most: int
    least: int = 0
    unit: str = "characters"
    source: Source

    def holds(self, size: int) -> bool:
        return self.least <= size <= self.most


TELEGRAM_API = Source(
    title="Telegram Bot API reference",
    version="Bot API 10.0 (the version python-telegram-bot 22.8 implements)",
    where="https://core.telegram.org/bots/api",
)
SLACK_WEB_API = Source(
    title="Slack Web API specification (slack-api-specs web-api/slack_web_openapi_v2.json)",
    version="1.7.0, commit bc08db4 (2021-09-07)",
    where="https://github.com/slackapi/slack-api-specs",
)
SLACK_METHODS = Source(
    title="Slack Web API method reference (chat.postMessage, chat.update: arguments and errors)",
    version="as published at docs.slack.dev in 2026",
    where="https://docs.slack.dev/reference/methods/chat.postMessage",
)
SLACK_BLOCK_KIT = Source(
    title="Slack Block Kit reference (blocks, block elements, composition objects)",
    version="as published at docs.slack.dev in 2026",
    where="https://docs.slack.dev/reference/block-kit/blocks",
)
DISCORD_OPENAPI = Source(
    title="Discord HTTP API OpenAPI description (discord/discord-api-spec specs/openapi.json)",
    version="API v10, commit 74fda0f (2026-07-18)",
    where="https://github.com/discord/discord-api-spec",
)
DISCORD_DOCS = Source(
    title="Discord developer documentation (Message Components, Embed Limits, Create Message)",
    version="API v10, as published in 2026",
    where="https://discord.com/developers/docs",
)

# -- Telegram --------------------------------------------------------------------------------

TELEGRAM_TEXT = Limit(
    what="sendMessage / editMessageText text, after entity parsing",
    least=1,
    most=4096,
    unit="UTF-16 code units",
    source=TELEGRAM_API,
)
TELEGRAM_CAPTION = Limit(
    what="sendPhoto / sendDocument caption, after entity parsing",
    most=1024,
    unit="UTF-16 code units",
    source=TELEGRAM_API,
)
TELEGRAM_CALLBACK_DATA = Limit(
    what="InlineKeyboardButton callback_data",
    least=1,
    most=64,
    unit="bytes",
    source=TELEGRAM_API,
)
TELEGRAM_CALLBACK_ANSWER = Limit(what="answerCallbackQuery text", most=200, source=TELEGRAM_API)
TELEGRAM_COMMANDS = Limit(
    what="setMyCommands commands", most=100, unit="commands", source=TELEGRAM_API
)
TELEGRAM_COMMAND_NAME = Limit(
    what="BotCommand command (lower-case letters, digits, underscores)",
    least=1,
    most=32,
    source=TELEGRAM_API,
)
TELEGRAM_COMMAND_DESCRIPTION = Limit(
    what="BotCommand description", least=1, most=256, source=TELEGRAM_API
)
TELEGRAM_BOT_REACTIONS = Limit(
    what="setMessageReaction reaction (a bot sets at most one)",
    most=1,
    unit="reactions",
    source=TELEGRAM_API,
)
#: The tags of Telegram's HTML parse mode (formatting options), with the entity each makes.
TELEGRAM_HTML_TAGS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "span": "spoiler",
    "tg-spoiler": "spoiler",
    "a": "text_link",
    "tg-emoji": "custom_emoji",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
}
#: ReactionTypeEmoji.emoji: the emoji a reaction may be (Bot API 10.0; written without the
#: variation selector U+FE0F, which the fake ignores).
# fmt: off
TELEGRAM_REACTION_EMOJI = frozenset((
    "👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢",
    "🎉", "🤩", "🤮", "💩", "🙏", "👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳",
    "❤\u200d🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓",
    "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓", "👻", "👨\u200d💻", "👀", "🎃", "🙈",
    "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃", "💅", "🤪", "🗿",
    "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷\u200d♂", "🤷", "🤷\u200d♀",
    "😡",
))
# fmt: on

# -- Slack -------------------------------------------------------------------------------------

SLACK_TEXT = Limit(
    what="chat.postMessage / chat.update text (msg_too_long above)",
    most=40_000,
    source=SLACK_METHODS,
)
SLACK_MESSAGE_BLOCKS = Limit(
    what="blocks of a message", most=50, unit="blocks", source=SLACK_BLOCK_KIT
)
SLACK_VIEW_BLOCKS = Limit(
    what="blocks of a modal view", most=100, unit="blocks", source=SLACK_BLOCK_KIT
)
SLACK_SECTION_TEXT = Limit(what="section block text", least=1, most=3000, source=SLACK_BLOCK_KIT)
SLACK_SECTION_FIELDS = Limit(
    what="section block fields", most=10, unit="fields", source=SLACK_BLOCK_KIT
)
SLACK_SECTION_FIELD_TEXT = Limit(
    what="section block field text", least=1, most=2000, source=SLACK_BLOCK_KIT
)
SLACK_HEADER_TEXT = Limit(
    what="header block text (plain_text)", least=1, most=150, source=SLACK_BLOCK_KIT
)
SLACK_CONTEXT_ELEMENTS = Limit(
    what="context block elements", least=1, most=10, unit="elements", source=SLACK_BLOCK_KIT
)
SLACK_ACTIONS_ELEMENTS = Limit(
    what="actions block elements", least=1, most=25, unit="elements", source=SLACK_BLOCK_KIT
)
SLACK_BUTTON_TEXT = Limit(what="button text", least=1, most=75, source=SLACK_BLOCK_KIT)
SLACK_BUTTON_VALUE = Limit(what="button value", most=2000, source=SLACK_BLOCK_KIT)
SLACK_SELECT_OPTIONS = Limit(
    what="static_select options", least=1, most=100, unit="options", source=SLACK_BLOCK_KIT
)
SLACK_OPTION_TEXT = Limit(what="option text (plain_text)", least=1, most=75, source=SLACK_BLOCK_KIT)
SLACK_OPTION_VALUE = Limit(what="option value", least=1, most=150, source=SLACK_BLOCK_KIT)
SLACK_BLOCK_ID = Limit(
    what="block_id (unique in a message or view)", least=1, most=255, source=SLACK_BLOCK_KIT
)
SLACK_ACTION_ID = Limit(
    what="action_id (unique in a message or view)", least=1, most=255, source=SLACK_BLOCK_KIT
)
SLACK_VIEW_TITLE = Limit(
    what="view title, submit and close", least=1, most=24, source=SLACK_BLOCK_KIT
)
SLACK_PRIVATE_METADATA = Limit(what="view private_metadata", most=3000, source=SLACK_BLOCK_KIT)
SLACK_CALLBACK_ID = Limit(what="view callback_id", most=255, source=SLACK_BLOCK_KIT)
SLACK_INPUT_LABEL = Limit(what="input block label", least=1, most=2000, source=SLACK_BLOCK_KIT)
SLACK_INPUT_MAX_LENGTH = Limit(
    what="plain_text_input max_length", least=1, most=3000, source=SLACK_BLOCK_KIT
)
#: Methods' required arguments (slack-api-specs ``required: true``), and the error a missing
#: one gets (the method reference's).
SLACK_REQUIRED = {
    "chat.postMessage": (("channel", "channel_not_found"),),
    "chat.update": (("channel", "channel_not_found"), ("ts", "message_not_found")),
    "chat.postEphemeral": (("channel", "channel_not_found"), ("user", "user_not_found")),
    "conversations.history": (("channel", "channel_not_found"),),
    "conversations.info": (("channel", "channel_not_found"),),
    "conversations.replies": (("channel", "channel_not_found"), ("ts", "thread_not_found")),
    "reactions.add": (
        ("channel", "channel_not_found"),
        ("timestamp", "no_item_specified"),
        ("name", "invalid_name"),
    ),
}
#: The methods that post or change a message.
SLACK_MESSAGE_METHODS = frozenset({"chat.postMessage", "chat.update", "chat.postEphemeral"})

# -- Discord -----------------------------------------------------------------------------------

DISCORD_CONTENT = Limit(what="message content (a bot's)", most=2000, source=DISCORD_DOCS)
DISCORD_ACTION_ROWS = Limit(
    what="action rows of a message without IS_COMPONENTS_V2",
    most=5,
    unit="rows",
    source=DISCORD_DOCS,
)
DISCORD_ROW_COMPONENTS = Limit(
    what="components of an action row", least=1, most=5, unit="components", source=DISCORD_OPENAPI
)
DISCORD_CUSTOM_ID = Limit(
    what="component custom_id (unique in a message)", least=1, most=100, source=DISCORD_OPENAPI
)
DISCORD_BUTTON_LABEL = Limit(what="button label", most=80, source=DISCORD_OPENAPI)
DISCORD_BUTTON_URL = Limit(what="link button url", most=512, source=DISCORD_OPENAPI)
DISCORD_NONCE = Limit(what="message nonce (a string)", most=25, source=DISCORD_OPENAPI)
DISCORD_EMBEDS = Limit(what="embeds of a message", most=10, unit="embeds", source=DISCORD_OPENAPI)
DISCORD_EMBED_TITLE = Limit(what="embed title", most=256, source=DISCORD_OPENAPI)
DISCORD_EMBED_DESCRIPTION = Limit(what="embed description", most=4096, source=DISCORD_OPENAPI)
DISCORD_EMBED_FIELDS = Limit(what="embed fields", most=25, unit="fields", source=DISCORD_OPENAPI)
DISCORD_EMBED_FIELD_NAME = Limit(what="embed field name", most=256, source=DISCORD_OPENAPI)
DISCORD_EMBED_FIELD_VALUE = Limit(what="embed field value", most=1024, source=DISCORD_OPENAPI)
DISCORD_EMBED_FOOTER = Limit(what="embed footer text", most=2048, source=DISCORD_OPENAPI)
DISCORD_EMBED_AUTHOR = Limit(what="embed author name", most=256, source=DISCORD_OPENAPI)
DISCORD_EMBED_TOTAL = Limit(
    what="all embeds' title, description, field names and values, footer and author together",
    most=6000,
    source=DISCORD_DOCS,
)
#: ButtonStyleTypes: PRIMARY, SECONDARY, SUCCESS, DANGER, LINK, PREMIUM.
DISCORD_BUTTON_STYLES = frozenset({1, 2, 3, 4, 5, 6})
