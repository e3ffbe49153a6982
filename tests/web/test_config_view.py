"""The configuration page's view of the settings: a secret pasted into the configuration itself
is hidden (a URL's credentials and query cut, a value under a secret's key or in an ``env``
table hidden, a secret-looking value scrubbed), and variable names are shown as names."""

from __future__ import annotations

from bot.webconsole.pages_config import HIDDEN, settings_in_force

LLM_KEY = "sk-live-abcdefghijklmnopqrstuvwx0123"


def test_secrets_in_the_settings_themselves_are_hidden() -> None:
    shown = {
        s.key: s.value
        for s in settings_in_force(
            {
                "storage": {"url": "postgresql://hatch:pw-s3cret@db.example:5432/h?sslkey=x"},
                "telemetry": {"headers": "Authorization=Bearer abc", "headers_env": "OTEL_H"},
                "mcp": {"servers": {"git": {"env": {"GITHUB_TOKEN": "ghp_abcdef"}}}},
                "providers": {
                    "p": {"api_key": "sk-pasted", "note": f"key {LLM_KEY}", "max_tokens": 512}
                },
                "channels": {"slack": {"main": {"bot_token": "xoxb-1", "webhook_secret": "w"}}},
            }
        )
    }
    assert shown["storage.url"] == "postgresql://db.example:5432/h"
    assert shown["telemetry.headers"] == HIDDEN and shown["telemetry.headers_env"] == "OTEL_H"
    assert shown["mcp.servers.git.env.GITHUB_TOKEN"] == HIDDEN
    assert shown["providers.p.api_key"] == HIDDEN
    assert LLM_KEY not in shown["providers.p.note"]
    assert shown["providers.p.max_tokens"] == "512"  # a number of tokens is no secret
    assert shown["channels.slack.main.bot_token"] == HIDDEN
    assert shown["channels.slack.main.webhook_secret"] == HIDDEN
