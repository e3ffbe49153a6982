"""What of a provider's URL people are shown."""

from __future__ import annotations

import pytest

from bot.providers.endpoint import shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("https://user:s3cret@gw.example.com/v1", "https://gw.example.com/v1"),
        ("https://gw.example.com/v1?api-key=s3cret#frag", "https://gw.example.com/v1"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("  http://localhost:8000  ", "http://localhost:8000"),
        ("not a url", ""),
        ("http://host:notaport/v1", ""),
        ("", ""),
    ],
)
def test_shown_url_keeps_the_server_and_drops_credentials(url: str, shown: str) -> None:
    assert shown_url(url) == shown
