"""``[web]``: identities, names, the public URL and the session lifetimes are checked when the
file loads, each error naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import parse_settings
from bot.errors import ConfigError


def _web(**keys: Any) -> Any:
    return parse_settings({"web": keys}, environ={}, require_provider=False).web


def test_defaults() -> None:
    web = _web()
    assert (web.enabled, web.link_ttl_s, web.session_idle_s, web.secure) == (
        False,
        300.0,
        1800.0,
        False,
    )


def test_a_public_url_is_an_origin_and_https_makes_cookies_secure() -> None:
    web = _web(public_url="https://ops.example.com:8443/")
    assert (web.public_url, web.secure) == ("https://ops.example.com:8443", True)


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ({"admins": ["12345"]}, "web.admins"),
        ({"admins": ["console:me"]}, "is not an identity"),
        ({"admins": ["telegram:a b"]}, "the user id must be"),
        ({"names": {"boss": "matrix:@a"}}, "web.names"),
        ({"public_url": "ops.example.com"}, "must be an http:// or https:// URL"),
        ({"public_url": "https://ops.example.com/hatchway"}, "must be an origin only"),
        ({"session_idle_s": 7200, "session_max_s": 3600}, "longer than session_max_s"),
        ({"link_ttl_s": 5}, "web.link_ttl_s"),
        ({"sign_ins_per_target": 0}, "web.sign_ins_per_target"),
    ],
)
def test_refused(keys: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as err:
        _web(**keys)
    assert says in str(err.value)
