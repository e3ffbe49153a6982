"""The checks Discord's API makes on messages, modals and commands, for the fake to refuse
what the real Discord refuses, with Discord's own error: a ``400`` whose body is
``{"code": 50035, "message": "Invalid Form Body", "errors": …}``, the errors nested by field
path down to ``{"_errors": [{"code": …, "message": …}]}`` (:class:`FormError`).

Messages (:func:`message_problem`): content of at most 2,000 characters; a nonce of at most
25 characters; at most 10 embeds within the embed limits (title 256, description 4,096, 25
fields of name 256 and value 1,024, footer 2,048, author 256, 6,000 altogether); without the
components-v2 flag at most five action rows of one to five components, each button with a
``style``, a non-link button with a ``custom_id`` of 1–100 characters unique in the message,
a link button with a ``url`` and no ``custom_id``, labels of at most 80. A message with
embeds and nothing else is valid. The limits are :mod:`tests.fakes.limits`'s.

A modal (:func:`modal_problem`) carries a title (≤ 45), a ``custom_id`` (≤ 100) and one to
five text inputs (in a Label, type 18, or an action row); application commands
(:func:`commands_problem`) keep to their name and description rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.limits import (
    DISCORD_ACTION_ROWS,
    DISCORD_BUTTON_LABEL,
    DISCORD_BUTTON_STYLES,
    DISCORD_BUTTON_URL,
    DISCORD_CONTENT,
    DISCORD_CUSTOM_ID,
    DISCORD_EMBED_AUTHOR,
    DISCORD_EMBED_DESCRIPTION,
    DISCORD_EMBED_FIELD_NAME,
    DISCORD_EMBED_FIELD_VALUE,
    DISCORD_EMBED_FIELDS,
    DISCORD_EMBED_FOOTER,
    DISCORD_EMBED_TITLE,
    DISCORD_EMBED_TOTAL,
    DISCORD_EMBEDS,
    DISCORD_NONCE,
    DISCORD_ROW_COMPONENTS,
    Limit,
)

JSON = dict[str, Any]
MESSAGE_LIMIT = DISCORD_CONTENT.most  # characters of message content
IS_COMPONENTS_V2 = 1 << 15  # message flag


@dataclass(frozen=True, slots=True)
class FormError:
    """One field Discord refuses: its path (``components.0.components.1.custom_id``; empty
    for the whole body), Discord's error code and message."""

    path: str
    code: str
    message: str

    def body(self) -> JSON:
        """Discord's 400 body for this error."""
        nested: JSON = {"_errors": [{"code": self.code, "message": self.message}]}
        for key in reversed([k for k in self.path.split(".") if k]):
            nested = {key: nested}
        return {"code": 50035, "message": "Invalid Form Body", "errors": nested}

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


_SNOWFLAKE = re.compile(r"^(0|[1-9][0-9]*)$")  # discord-api-spec SnowflakeType


def unsent_problem(message: JSON) -> str | None:
    """What makes ``message`` (a MESSAGE_CREATE or MESSAGE_UPDATE payload) one Discord never
    sends, or None: its ids are snowflakes as strings, and it has an author."""
    for key in ("id", "channel_id", "guild_id"):
        value = message.get(key)
        if (key != "guild_id" or value is not None) and not (
            isinstance(value, str) and _SNOWFLAKE.match(value)
        ):
            return f"{key} must be a snowflake string, not {value!r}"
    author = message.get("author")
    if not isinstance(author, dict):
        return "a message has an author"
    author_id = author.get("id")
    if not (isinstance(author_id, str) and _SNOWFLAKE.match(author_id)):
        return f"author.id must be a snowflake string, not {author_id!r}"
    return None


def _length(path: str, value: object, limit: Limit) -> FormError | None:
    """A string field's length against ``limit`` (absent or null is fine)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return FormError(path, "BASE_TYPE_STRING", "Must be a string.")
    if len(value) > limit.most:
        return FormError(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit.most} or fewer in length.")
    if len(value) < limit.least:
        return FormError(path, "BASE_TYPE_MIN_LENGTH", f"Must be {limit.least} or more in length.")
    return None


def _count(path: str, value: object, limit: Limit) -> FormError | None:
    """An array field's size against ``limit``."""
    if not isinstance(value, list):
        return FormError(path, "BASE_TYPE_ARRAY", "Must be an array.")
    if not limit.holds(len(value)):
        return FormError(
            path,
            "BASE_TYPE_BAD_LENGTH",
            f"Must be between {limit.least} and {limit.most} in length.",
        )
    return None


def message_problem(body: object) -> FormError | None:
    """Why Discord would refuse this message body (create or edit), or None."""
    if not isinstance(body, dict):
        return None
    return (
        _length("content", body.get("content"), DISCORD_CONTENT)
        or nonce_problem(body)
        or embeds_problem(body.get("embeds"))
        or components_problem(body.get("components"), flags=int(body.get("flags") or 0))
    )


def is_empty(body: JSON, files: object = None) -> bool:
    """Whether a message create carries nothing to show (Discord's 50006)."""
    shown = ("content", "embeds", "components", "sticker_ids", "poll", "attachments")
    return not (files or any(body.get(key) for key in shown))


def nonce_problem(body: JSON) -> FormError | None:
    nonce = body.get("nonce")
    if isinstance(nonce, str):
        return _length("nonce", nonce, DISCORD_NONCE)
    if nonce is not None and not isinstance(nonce, int):
        return FormError("nonce", "BASE_TYPE_STRING", "Must be a string or an integer.")
    return None


def embeds_problem(embeds: object) -> FormError | None:
    """Why Discord would refuse these embeds, or None."""
    if embeds is None:
        return None
    if problem := _count("embeds", embeds, DISCORD_EMBEDS):
        return problem
    assert isinstance(embeds, list)
    total = 0
    for index, embed in enumerate(embeds):
        at = f"embeds.{index}"
        if not isinstance(embed, dict):
            return FormError(at, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        footer, author = embed.get("footer") or {}, embed.get("author") or {}
        fields = embed.get("fields") or []
        checks = [
            _length(f"{at}.title", embed.get("title"), DISCORD_EMBED_TITLE),
            _length(f"{at}.description", embed.get("description"), DISCORD_EMBED_DESCRIPTION),
            _length(f"{at}.footer.text", footer.get("text"), DISCORD_EMBED_FOOTER),
            _length(f"{at}.author.name", author.get("name"), DISCORD_EMBED_AUTHOR),
            _count(f"{at}.fields", fields, DISCORD_EMBED_FIELDS),
        ]
        for number, field in enumerate(fields if isinstance(fields, list) else []):
            name, value = field.get("name"), field.get("value")
            if name is None or value is None:
                missing = "name" if name is None else "value"
                checks.append(
                    FormError(
                        f"{at}.fields.{number}.{missing}",
                        "BASE_TYPE_REQUIRED",
                        "This field is required",
                    )
                )
            checks.append(_length(f"{at}.fields.{number}.name", name, DISCORD_EMBED_FIELD_NAME))
            checks.append(_length(f"{at}.fields.{number}.value", value, DISCORD_EMBED_FIELD_VALUE))
            total += len(str(name or "")) + len(str(value or ""))
        if problem := next((c for c in checks if c is not None), None):
            return problem
        parts = (embed.get("title"), embed.get("description"), footer.get("text"))
        total += sum(len(str(p or "")) for p in (*parts, author.get("name")))
    if total > DISCORD_EMBED_TOTAL.most:
        return FormError(
            "embeds",
            "BASE_TYPE_MAX_LENGTH",
            f"Embed size exceeds maximum size of {DISCORD_EMBED_TOTAL.most}",
        )
    return None


def components_problem(rows: object, *, flags: int = 0) -> FormError | None:
    """Why Discord would refuse these message components (action rows of buttons), or None.
    Components v2 (``flags`` with :data:`IS_COMPONENTS_V2`) are not checked here."""
    if rows is None or flags & IS_COMPONENTS_V2:
        return None
    if not isinstance(rows, list):
        return FormError("components", "BASE_TYPE_ARRAY", "Must be an array.")
    if len(rows) > DISCORD_ACTION_ROWS.most:
        return FormError(
            "components",
            "BASE_TYPE_MAX_LENGTH",
            f"Must be {DISCORD_ACTION_ROWS.most} or fewer in length.",
        )
    seen: set[str] = set()
    for index, row in enumerate(rows):
        at = f"components.{index}"
        if not isinstance(row, dict) or row.get("type") != 1:
            return FormError(
                f"{at}.type", "UNION_TYPE_CHOICES", 'Value of field "type" must be one of (1,).'
            )
        if problem := _count(f"{at}.components", row.get("components"), DISCORD_ROW_COMPONENTS):
            return problem
        kinds = [c.get("type") for c in row["components"] if isinstance(c, dict)]
        if 3 in kinds and len(kinds) > 1:  # a select menu fills its action row alone
            return FormError(
                f"{at}.components", "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "Component width exceeded"
            )
        for number, child in enumerate(row["components"]):
            problem = _component_problem(f"{at}.components.{number}", child, seen)
            if problem:
                return problem
    return None


def _component_problem(at: str, child: object, seen: set[str]) -> FormError | None:
    if not isinstance(child, dict):
        return FormError(at, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
    custom_id = child.get("custom_id")
    if child.get("type") == 3 and (problem := _select_problem(at, child)):
        return problem
    if child.get("type") == 2:
        style = child.get("style")
        if style is None:
            return FormError(f"{at}.style", "BASE_TYPE_REQUIRED", "This field is required")
        if style not in DISCORD_BUTTON_STYLES:
            return FormError(
                f"{at}.style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6}."
            )
        if problem := _length(f"{at}.label", child.get("label"), DISCORD_BUTTON_LABEL):
            return problem
        if style == 5:
            if custom_id is not None:
                return FormError(
                    f"{at}.custom_id",
                    "BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED",
                    "A custom id cannot be used with a link button",
                )
            if not child.get("url"):
                return FormError(f"{at}.url", "BUTTON_COMPONENT_URL_REQUIRED", "A url is required")
            return _length(f"{at}.url", child.get("url"), DISCORD_BUTTON_URL)
    if custom_id is None:
        return FormError(f"{at}.custom_id", "BASE_TYPE_REQUIRED", "This field is required")
    if problem := _length(f"{at}.custom_id", custom_id, DISCORD_CUSTOM_ID):
        return problem
    if custom_id in seen:
        return FormError(
            f"{at}.custom_id",
            "COMPONENT_CUSTOM_ID_DUPLICATED",
            "Component custom id cannot be duplicated",
        )
    seen.add(str(custom_id))
    return None


def _select_problem(at: str, select: JSON) -> FormError | None:
    """A string select (type 3): 1-25 options, each a label and a value of at most 100
    characters (Discord's documented limits)."""
    options = select.get("options")
    if not isinstance(options, list) or not 1 <= len(options) <= 25:
        return FormError(
            f"{at}.options", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 25 in length."
        )
    for index, option in enumerate(options):
        for key in ("label", "value"):
            text = option.get(key) if isinstance(option, dict) else None
            if not isinstance(text, str) or not 1 <= len(text) <= 100:
                return FormError(
                    f"{at}.options.{index}.{key}",
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
    return None


def _text_input_problem(at: str, field: object, *, labelled: bool) -> FormError | None:
    if not isinstance(field, dict) or field.get("type") != 4:
        return FormError(
            f"{at}.type", "UNION_TYPE_CHOICES", "a modal field must be a text input (type 4)"
        )
    custom_id = field.get("custom_id")
    if not isinstance(custom_id, str) or not DISCORD_CUSTOM_ID.holds(len(custom_id)):
        return FormError(
            f"{at}.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
        )
    if field.get("style") not in (1, 2):
        return FormError(f"{at}.style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2}.")
    if not 0 <= int(field.get("min_length", 0)) <= int(field.get("max_length", 4000)) <= 4000:
        return FormError(
            f"{at}.max_length",
            "BASE_TYPE_BAD_LENGTH",
            "text input lengths must satisfy 0 <= min_length <= max_length <= 4000",
        )
    if not labelled and not 1 <= len(str(field.get("label") or "")) <= 45:
        return FormError(
            f"{at}.label", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length."
        )
    return None


def modal_problem(data: object) -> FormError | None:
    """Why Discord would refuse this MODAL callback ``data``, or None."""
    if not isinstance(data, dict):
        return FormError("data", "BASE_TYPE_REQUIRED", "This field is required")
    custom_id, title = data.get("custom_id"), data.get("title")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        return FormError(
            "data.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
        )
    if not isinstance(title, str) or not 1 <= len(title) <= 45:
        return FormError(
            "data.title", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length."
        )
    components = data.get("components")
    if not isinstance(components, list) or not 1 <= len(components) <= 5:
        return FormError(
            "data.components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length."
        )
    for index, component in enumerate(components):
        at = f"data.components.{index}"
        kind = component.get("type") if isinstance(component, dict) else None
        if kind == 18:
            if not 1 <= len(str(component.get("label") or "")) <= 45:
                return FormError(
                    f"{at}.label", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length."
                )
            problem = _text_input_problem(
                f"{at}.component", component.get("component"), labelled=True
            )
        elif kind == 1 and len(component.get("components") or []) == 1:
            problem = _text_input_problem(
                f"{at}.components.0", component["components"][0], labelled=False
            )
        else:
            problem = FormError(
                f"{at}.type",
                "UNION_TYPE_CHOICES",
                "a modal component is a Label (18) or an action row (1) of one input",
            )
        if problem:
            return problem
    return None


def commands_problem(body: object) -> FormError | None:
    """Why Discord would refuse this bulk overwrite of application commands, or None: a list
    of at most 100 chat-input commands (type 1) with unique names of 1 to 32 lower-case
    characters and descriptions of 1 to 100."""
    if not isinstance(body, list) or len(body) > 100:
        return FormError("", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
    names: set[str] = set()
    for index, command in enumerate(body):
        if not isinstance(command, dict) or command.get("type", 1) != 1:
            return FormError(
                f"{index}.type",
                "BASE_TYPE_CHOICES",
                "only chat input commands (type 1) are expected here",
            )
        name = command.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[-_a-z0-9]{1,32}", name):
            return FormError(
                f"{index}.name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
            )
        if name in names:
            return FormError(
                f"{index}.name",
                "APPLICATION_COMMANDS_DUPLICATE_NAME",
                "Application command names must be unique",
            )
        names.add(name)
        description = command.get("description")
        if not isinstance(description, str) or not 1 <= len(description) <= 100:
            return FormError(
                f"{index}.description",
                "BASE_TYPE_BAD_LENGTH",
                "Must be between 1 and 100 in length.",
            )
    return None
