"""The checks Discord's API makes on messages and modals, for the fake to refuse what the
real Discord refuses (a 400 with code 50035): message content keeps to 2,000 characters;
message components keep to five action rows of one to five, labels to 80 characters and
unique ``custom_id`` s of at most 100; a modal carries a title (≤ 45), a ``custom_id``
(≤ 100) and one to five text inputs (in a Label, type 18, or an action row); application
commands keep to their name and description rules.
"""

from __future__ import annotations

import re

MESSAGE_LIMIT = 2000  # characters of message content


def message_problem(body: object) -> str | None:
    """Why Discord would refuse this message body (content and components), or None."""
    if not isinstance(body, dict):
        return None
    content = body.get("content")
    if isinstance(content, str) and len(content) > MESSAGE_LIMIT:
        return f"content: must be {MESSAGE_LIMIT} or fewer in length"
    return components_problem(body.get("components"))


def components_problem(rows: object) -> str | None:
    """Why Discord would refuse these message components (action rows of buttons), or None."""
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) > 5:
        return "components: at most 5 action rows"
    seen: set[str] = set()
    for row in rows:
        children = row.get("components") if isinstance(row, dict) else None
        if row.get("type") != 1 or not isinstance(children, list) or not 1 <= len(children) <= 5:
            return "components: an action row holds 1 to 5 components"
        for child in children:
            custom_id = child.get("custom_id")
            if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
                return "components: custom_id must be 1 to 100 characters"
            if custom_id in seen:
                return "components: custom_id values must be unique"
            seen.add(custom_id)
            if len(str(child.get("label") or "")) > 80:
                return "components: a button label is at most 80 characters"
    return None


def _text_input_problem(field: object, *, labelled: bool) -> str | None:
    if not isinstance(field, dict) or field.get("type") != 4:
        return "a modal field must be a text input (type 4)"
    custom_id = field.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        return "a text input needs a custom_id of 1 to 100 characters"
    if field.get("style") not in (1, 2):
        return "a text input style is 1 (short) or 2 (paragraph)"
    if not 0 <= int(field.get("min_length", 0)) <= int(field.get("max_length", 4000)) <= 4000:
        return "text input lengths must satisfy 0 <= min_length <= max_length <= 4000"
    if not labelled and not 1 <= len(str(field.get("label") or "")) <= 45:
        return "a text input outside a Label needs a label of 1 to 45 characters"
    return None


def modal_problem(data: object) -> str | None:
    """Why Discord would refuse this MODAL callback ``data``, or None."""
    if not isinstance(data, dict):
        return "a modal callback needs data"
    custom_id, title = data.get("custom_id"), data.get("title")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        return "modal custom_id must be 1 to 100 characters"
    if not isinstance(title, str) or not 1 <= len(title) <= 45:
        return "modal title must be 1 to 45 characters"
    components = data.get("components")
    if not isinstance(components, list) or not 1 <= len(components) <= 5:
        return "a modal holds 1 to 5 components"
    for component in components:
        kind = component.get("type") if isinstance(component, dict) else None
        if kind == 18:
            if not 1 <= len(str(component.get("label") or "")) <= 45:
                return "a Label needs a label of 1 to 45 characters"
            problem = _text_input_problem(component.get("component"), labelled=True)
        elif kind == 1 and len(component.get("components") or []) == 1:
            problem = _text_input_problem(component["components"][0], labelled=False)
        else:
            problem = "a modal component is a Label (18) or an action row (1) of one input"
        if problem:
            return problem
    return None


def commands_problem(body: object) -> str | None:
    """Why Discord would refuse this bulk overwrite of application commands, or None: a list
    of at most 100 chat-input commands (type 1) with unique names of 1 to 32 lower-case
    characters and descriptions of 1 to 100."""
    if not isinstance(body, list) or len(body) > 100:
        return "commands: a list of at most 100 commands"
    names: set[str] = set()
    for command in body:
        if not isinstance(command, dict) or command.get("type", 1) != 1:
            return "commands: only chat input commands (type 1) are expected here"
        name = command.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[-_a-z0-9]{1,32}", name):
            return "commands: name must be 1 to 32 lower-case letters, digits, - or _"
        if name in names:
            return "commands: names must be unique"
        names.add(name)
        description = command.get("description")
        if not isinstance(description, str) or not 1 <= len(description) <= 100:
            return "commands: description must be 1 to 100 characters"
    return None
