"""``[web]``: the admin web console (:mod:`bot.webconsole`).

The console is served by the daemon's HTTP server (``[server] host:port``, loopback by
default) under ``/console/``; enabling it makes the daemon listen even when
``server.enabled`` is false. Who may sign in is not a list of passwords but platform
identities: ``<kind>:<user id>`` (``telegram:12345``, ``slack:U0123``, ``discord:1234…``). An
approver of a channel alias (its ``approvers``) may sign in and decide that alias's calls;
an identity in ``admins`` may read everything. ``names`` lets someone sign in by a short
name instead of a user id (a bot cannot look up a Telegram ``@username``).

``public_url`` is the origin browsers reach the daemon at (``https://ops.example.com``
behind a TLS reverse proxy, which forwards ``/console/`` as it is); sign-in links are built
from it, and when it is ``https`` the
session cookie is ``Secure``. Empty: ``http://`` and ``[server] host:port``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from bot.config_model import ConfigModel
from bot.timezones import find_zone

#: The platforms a sign-in message can be sent on (the console has no one to send it to).
SIGN_IN_KINDS = ("telegram", "slack", "discord")
#: A platform user id as the console accepts it: Telegram and Discord ids are digits, Slack's
#: letters and digits.
USER_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def check_identity(text: str) -> str:
    """``text`` when it is ``<kind>:<user id>`` of a platform that can send a sign-in
    message; ValueError naming what is wrong otherwise."""
    kind, sep, user = text.partition(":")
    if not sep or kind not in SIGN_IN_KINDS:
        raise ValueError(
            f"{text!r} is not an identity: write <kind>:<user id> with kind one of "
            f"{', '.join(SIGN_IN_KINDS)} (e.g. telegram:12345)"
        )
    if not USER_ID.match(user):
        raise ValueError(f"{text!r}: the user id must be 1-64 letters, digits, '_', '.' or '-'")
    return text


class WebConfig(ConfigModel):
    """``[web]``; see the module docstring and docs/console.md."""

    enabled: bool = False
    admins: list[str] = Field(default=[])
    names: dict[str, str] = Field(default={})
    public_url: str = ""
    #: A session ends after this long without a request, and at the latest after
    #: ``session_max_s``.
    session_idle_s: float = Field(default=1800.0, ge=60, le=7 * 86400)
    session_max_s: float = Field(default=12 * 3600.0, ge=60, le=30 * 86400)
    #: How long a sign-in link and its code stay valid.
    link_ttl_s: float = Field(default=300.0, ge=30, le=3600)
    #: Sign-in requests allowed per ``rate_window_s``: from one client address for one id or
    #: name, and from one client address whatever it asks for (codes typed count too).
    sign_ins_per_target: int = Field(default=5, ge=1, le=1000)
    sign_ins_per_client: int = Field(default=20, ge=1, le=10_000)
    rate_window_s: float = Field(default=900.0, ge=10, le=86400)
    #: Sign-in messages asked for one id or name per hour, from every client together;
    #: beyond it only the target's own requests get through (from a browser or address it
    #: signed in from in the last 30 days, or a session of its own).
    sign_in_messages_per_hour: int = Field(default=10, ge=1, le=1000)
    #: Behind a reverse proxy: the client address is the last one in ``X-Forwarded-For``
    #: (the one the proxy added) instead of the proxy's own.
    trust_forwarded_for: bool = False
    #: The zone the pages show times in (an IANA name; relative times are shown beside).
    time_zone: str = "UTC"

    @field_validator("admins")
    @classmethod
    def _identities(cls, value: list[str]) -> list[str]:
        return [check_identity(item) for item in value]

    @field_validator("names")
    @classmethod
    def _named(cls, value: dict[str, str]) -> dict[str, str]:
        for name, identity in value.items():
            if not name.strip() or len(name) > 64:
                raise ValueError(f"names: {name!r} must be 1-64 characters")
            check_identity(identity)
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        if value != "UTC" and find_zone(value) is None:
            raise ValueError(f"time_zone: {value!r} is not an IANA time zone (e.g. Europe/Paris)")
        return value

    @field_validator("public_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"public_url {value!r} must be an http:// or https:// URL")
        if parts.path.strip("/") or parts.query or parts.fragment:
            raise ValueError(
                f"public_url {value!r} must be an origin only (scheme, host and port): the "
                "console is always under /console/"
            )
        return f"{parts.scheme}://{parts.netloc}"

    @model_validator(mode="after")
    def _lifetimes(self) -> WebConfig:
        if self.session_idle_s > self.session_max_s:
            raise ValueError("session_idle_s is longer than session_max_s")
        return self

    @property
    def secure(self) -> bool:
        """Browsers reach the console over TLS: its cookies are ``Secure``."""
        return self.public_url.startswith("https://")
