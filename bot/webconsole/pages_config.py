"""The Configuration page: the configuration in force, read only, with the routing table and
the approval policy of each channel alias and agent.

*Admins only.* Everything comes from the settings the daemon runs with now (a reload shows
at the next request): each key with its value, as ``hatchway doctor`` reads the same
settings. **Secrets are never shown**: the configuration holds the names of the environment
variables that carry them (``token_env``, ``api_key_env``, ``password_env``…), and those
names are what the page shows; a value under a key that names a secret (``token``,
``password``, ``secret``, ``api_key``, ``headers``…) or in an ``env`` table is replaced by
``(hidden)``; credentials and query strings are cut from URLs; every other value goes through
the same scrubbing as the chat's cards (:func:`bot.scrub.scrub_text`), so a secret pasted
where it does not belong is masked too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web

from bot.approval.policy import effective_policy
from bot.webconsole import display
from bot.webconsole.pages import Access, PageRequest, Pages

PATH = "/configuration"
HIDDEN = "(hidden)"
#: A key whose value is a secret (unless it ends with ``_env``: a variable's name).
_SECRET_KEY = re.compile(
    r"(^|_)(token|secret|password|passwd|key|apikey|credentials?|headers)$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    key: str
    value: str
    note: str


def _url(text: str) -> str:
    """``text`` without the credentials and query of a URL it is."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if not parts.scheme or not parts.netloc:
        return text
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _flatten(value: Any, key: str = "", *, hidden: bool = False) -> Iterator[Setting]:
    leaf = key.rpartition(".")[2]
    if isinstance(value, Mapping):
        if not value:
            yield Setting(key=key, value="{}", note="")
        for name, inner in value.items():
            # an env table's values are what a child process gets: names only
            yield from _flatten(
                inner, f"{key}.{name}" if key else str(name), hidden=hidden or leaf == "env"
            )
        return
    if leaf.endswith("_env") and isinstance(value, str):
        yield Setting(key=key, value=display.text(value, 200), note="variable name")
        return
    if hidden or (_SECRET_KEY.search(leaf) and value not in (None, "", [], {}, False)):
        yield Setting(key=key, value=HIDDEN, note="secret")
        return
    shown = _url(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    yield Setting(key=key, value=display.text(shown, 300), note="")


def settings_in_force(data: Mapping[str, Any]) -> list[Setting]:
    """Every key of the settings (a ``model_dump``), secrets hidden (module docstring)."""
    return list(_flatten(data))


def register(pages: Pages) -> None:
    pages.add("GET", PATH, config_page, access=Access.ADMIN, nav="Configuration")


async def config_page(page: PageRequest) -> web.StreamResponse:
    settings = page.host.settings
    routes = []
    for name in settings.agent_names():
        profile = settings.agents.get(name)
        for index, route in enumerate(profile.routes if profile is not None else [], start=1):
            keys = route.model_dump(exclude_none=True)
            routes.append(
                {
                    "agent": display.text(name),
                    "order": index,
                    "matches": display.text(
                        ", ".join(f"{k} = {json.dumps(v)}" for k, v in keys.items()) or "anything",
                        300,
                    ),
                }
            )
    policies = []
    for kind, alias, channel in settings.channels.all():
        for name in settings.agent_names():
            profile = settings.agents.get(name)
            policy = effective_policy(
                settings.approval, channel, None if profile is None else profile.approval
            )
            policies.append(
                {
                    "channel": f"{kind}.{alias}",
                    "agent": display.text(name),
                    "level": policy.level,
                    "auto_approve": display.text(", ".join(policy.auto_approve) or "—", 300),
                    "always_ask": display.text(", ".join(policy.always_ask) or "—", 300),
                    "deny": display.text(", ".join(policy.deny) or "—", 300),
                    "approvers": display.text(
                        ", ".join([*policy.approvers, *policy.approver_roles]) or "nobody", 300
                    ),
                    "self_approval": "yes" if policy.self_approval else "no",
                    "timeout": display.duration(policy.timeout_s),
                }
            )
    context: dict[str, Any] = {
        "settings": settings_in_force(settings.model_dump(mode="json")),
        "routes": routes,
        "policies": policies,
    }
    return page.render("configuration.html", context)
