"""What the tests of a replica losing its database share: the daemon's settings for one
replica behind the Telegram fake, and the address of the real PostgreSQL server by way of a
link the test can cut or freeze (the fixtures ``tg`` and ``link``: ``conftest.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bot.config import parse_settings
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import REQUESTER


def settings(tg: FakeTelegram, url: str, client: str, state: Path, **storage: float) -> Any:
    """One replica's settings: short heartbeats and leases, ``storage`` added to
    ``[storage]``."""
    state.mkdir()
    return parse_settings(
        {
            "state_dir": str(state),
            "storage": {"url": url, "pool_size": 4, **storage},
            "replicas": {"heartbeat_s": 0.1, "lease_ttl_s": 1.0, "max_clock_skew_s": 0.3},
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url_for(client),
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "reconnect_initial_s": 0.01,
                        "reconnect_max_s": 0.2,
                        "allowed_users": [str(REQUESTER)],
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )


def through(url: str, port: int) -> str:
    """``url`` by way of the link listening on ``port``."""
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()
