"""Execution receipts: HMAC-SHA256 over tool, canonical arguments, result and timestamp.

A receipt proves that this daemon produced this result for this call; it is not an
approval. The key is per daemon, read from the environment variable the config names.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from datetime import UTC, datetime

from bot.approval.gate import canonical_json
from bot.config import AgentConfig
from bot.errors import ConfigError

MIN_KEY_CHARS = 16
VERSION = "v1"


class ReceiptSigner:
    """Signs and verifies receipts with one key. Receipts look like
    ``v1.<iso timestamp>.<hex digest>``."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_CHARS:
            raise ConfigError(f"the receipt key must be at least {MIN_KEY_CHARS} bytes long")
        self._key = key

    @classmethod
    def from_settings(
        cls, settings: AgentConfig, environ: Mapping[str, str] | None = None
    ) -> ReceiptSigner | None:
        """``None`` when receipts are off; raises :class:`ConfigError` when they are on and
        the key is missing, so that a daemon fails at start rather than mid-turn."""
        if not settings.receipts:
            return None
        env = os.environ if environ is None else environ
        key = env.get(settings.receipt_key_env, "")
        if not key:
            raise ConfigError(
                f"agent.receipts is on but {settings.receipt_key_env} is not set; set it to a "
                "random secret of 16+ characters or turn receipts off"
            )
        return cls(key.encode())

    def _digest(self, tool: str, arguments: Mapping[str, object], result: str, at: str) -> str:
        body = canonical_json(
            {"tool": tool, "arguments": dict(arguments), "result": result, "at": at}
        )
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def sign(
        self,
        tool: str,
        arguments: Mapping[str, object],
        result: str,
        at: datetime | None = None,
    ) -> str:
        stamp = (at or datetime.now(UTC)).isoformat()
        return f"{VERSION}.{stamp}.{self._digest(tool, arguments, result, stamp)}"

    def verify(self, receipt: str, tool: str, arguments: Mapping[str, object], result: str) -> bool:
        version, _, rest = receipt.partition(".")
        stamp, _, digest = rest.rpartition(".")
        if version != VERSION or not stamp:
            return False
        return hmac.compare_digest(digest, self._digest(tool, arguments, result, stamp))
