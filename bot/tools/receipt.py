"""Execution receipts: an HMAC-SHA256 over what a call's ``tool_calls`` row keeps.

A receipt proves that this daemon recorded this row for a successful call; it is not an
approval. The row keeps arguments and result masked and cut, so the receipt signs the row
as stored plus the SHA-256 of the full arguments (canonical JSON) and of the full result,
which the row stores too (:data:`SIGNED_FIELDS`: ids, tool, both texts, both digests, the
outcome, who let the call run, its duration and when it was recorded).

A receipt reads ``v2.<tags>.<mac>`` (base64url): ``tags`` holds, per signed field in
:data:`SIGNED_FIELDS` order, the first :data:`TAG_BYTES` bytes of an HMAC of that field's
value; ``mac`` is the full HMAC of the tags. Verifying (:meth:`ReceiptSigner.check`) first
checks ``mac`` (the receipt itself is intact and was made with this key), then recomputes
each tag from the row, which names every field changed since it was signed. ``v1``
receipts, from before the row's digests existed, signed the full values the row never kept:
they are reported as legacy, never as verified.

The key is per daemon, read from the environment variable ``agent.receipt_key_env`` names.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.approval.gate import canonical_json
from bot.config import AgentConfig
from bot.errors import ConfigError
from bot.store import ToolCallRecord

MIN_KEY_CHARS = 16
VERSION = "v2"
LEGACY_VERSIONS = frozenset({"v1"})
TAG_BYTES = 8

SIGNED_FIELDS: tuple[str, ...] = (
    "turn_id",
    "call_id",
    "session_key",
    "channel",
    "tool",
    "arguments",
    "arguments_sha256",
    "observation",
    "result_sha256",
    "status",
    "synthetic",
    "approved_by",
    "duration_ms",
    "created_at",
)
"""The ``tool_calls`` columns a receipt signs, in tag order (every column but ``id``,
``receipt`` itself and the ones migration 0019 added for the console, which describe how the
call was decided and ended); verification names changed fields by these names."""

_TAG_CONTEXT = f"hatchway-receipt-{VERSION}-field\0".encode()
_MAC_CONTEXT = f"hatchway-receipt-{VERSION}-mac\0".encode()

Signable = str | float | bool | None


def sha256_text(text: str) -> str:
    """The hex SHA-256 of ``text`` as UTF-8 (a lone surrogate is encoded, not refused)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def arguments_digest(arguments: Mapping[str, object]) -> str:
    """The digest of a call's full arguments: SHA-256 of their canonical JSON."""
    return sha256_text(canonical_json(dict(arguments)))


class ReceiptVerdict(enum.StrEnum):
    VERIFIED = "verified"
    FIELDS_CHANGED = "fields_changed"  # the receipt is intact; these row fields are not
    RECEIPT_INVALID = "receipt_invalid"  # unreadable, altered, or made with another key
    LEGACY = "legacy"  # a v1 receipt: it signed values the row never kept
    UNSIGNED = "unsigned"  # the row has no receipt


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiptCheck:
    """The result of checking one row's receipt. ``changed`` names the fields (of
    :data:`SIGNED_FIELDS`) that differ from what was signed."""

    verdict: ReceiptVerdict
    changed: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        return self.verdict is ReceiptVerdict.VERIFIED

    def describe(self) -> str:
        """One line for a person."""
        match self.verdict:
            case ReceiptVerdict.VERIFIED:
                return "OK"
            case ReceiptVerdict.FIELDS_CHANGED:
                return "CHANGED since signed: " + ", ".join(self.changed)
            case ReceiptVerdict.RECEIPT_INVALID:
                return (
                    "INVALID receipt: it does not verify with this key "
                    "(the receipt was altered, or signed with another key)"
                )
            case ReceiptVerdict.LEGACY:
                return "legacy receipt, cannot be verified (it predates signing the stored row)"
            case ReceiptVerdict.UNSIGNED:
                return "no receipt (only successful calls are signed, with agent.receipts on)"


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingReceipt:
    """A receipt promised at a call's result: the digests of its full arguments and result,
    taken before anything is masked or cut. :meth:`seal` signs the row that keeps the call
    (:func:`bot.tools.call_record.tool_call_row` builds the row with these digests)."""

    signer: ReceiptSigner
    arguments_sha256: str
    result_sha256: str

    def seal(self, record: ToolCallRecord) -> ToolCallRecord:
        """``record`` with its receipt."""
        return replace(record, receipt=self.signer.receipt_for(record))


class ReceiptSigner:
    """Signs and checks receipts with one key."""

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
        key = _key(settings, environ)
        if not key:
            raise ConfigError(
                f"agent.receipts is on but {settings.receipt_key_env} is not set; set it to a "
                "random secret of 16+ characters or turn receipts off"
            )
        return cls(key.encode())

    @classmethod
    def for_verifying(
        cls, settings: AgentConfig, environ: Mapping[str, str] | None = None
    ) -> ReceiptSigner:
        """The signer of the key the config names, whether receipts are on now or not (rows
        signed earlier still verify); :class:`ConfigError` when the key is not set."""
        key = _key(settings, environ)
        if not key:
            raise ConfigError(
                f"{settings.receipt_key_env} is not set; set it to the receipt key the daemon "
                "signs with (agent.receipt_key_env names the variable)"
            )
        return cls(key.encode())

    def sign(self, tool: str, arguments: Mapping[str, object], result: str) -> PendingReceipt:
        """Promise a receipt for a successful call of ``tool``: the digests of its full
        ``arguments`` and ``result``, sealed over the call's row once it is built."""
        return PendingReceipt(
            signer=self,
            arguments_sha256=arguments_digest(arguments),
            result_sha256=sha256_text(result),
        )

    def receipt_for(self, record: ToolCallRecord) -> str:
        """The receipt of ``record`` as it stands."""
        tags = self._tags(record)
        return f"{VERSION}.{_b64(tags)}.{_b64(self._mac(tags))}"

    def check(self, record: ToolCallRecord) -> ReceiptCheck:
        """Check ``record``'s receipt against the row as stored now. Never raises."""
        receipt = record.receipt
        if receipt is None:
            return ReceiptCheck(verdict=ReceiptVerdict.UNSIGNED)
        version, _, rest = receipt.partition(".")
        if version in LEGACY_VERSIONS:
            return ReceiptCheck(verdict=ReceiptVerdict.LEGACY)
        tags_text, _, mac_text = rest.partition(".")
        signed, mac = _unb64(tags_text), _unb64(mac_text)
        if (
            version != VERSION
            or signed is None
            or mac is None
            or len(signed) != TAG_BYTES * len(SIGNED_FIELDS)
            or not hmac.compare_digest(mac, self._mac(signed))
        ):
            return ReceiptCheck(verdict=ReceiptVerdict.RECEIPT_INVALID)
        current = self._tags(record)
        changed = tuple(
            name
            for i, name in enumerate(SIGNED_FIELDS)
            if not hmac.compare_digest(_tag_at(signed, i), _tag_at(current, i))
        )
        if changed:
            return ReceiptCheck(verdict=ReceiptVerdict.FIELDS_CHANGED, changed=changed)
        return ReceiptCheck(verdict=ReceiptVerdict.VERIFIED)

    def _tags(self, record: ToolCallRecord) -> bytes:
        return b"".join(
            hmac.new(
                self._key,
                _TAG_CONTEXT + name.encode() + b"\0" + _encode(getattr(record, name)),
                hashlib.sha256,
            ).digest()[:TAG_BYTES]
            for name in SIGNED_FIELDS
        )

    def _mac(self, tags: bytes) -> bytes:
        return hmac.new(self._key, _MAC_CONTEXT + tags, hashlib.sha256).digest()


def _key(settings: AgentConfig, environ: Mapping[str, str] | None) -> str:
    return (os.environ if environ is None else environ).get(settings.receipt_key_env, "")


def _encode(value: Signable) -> bytes:
    """A field's value as signed: NULL differs from every text; numbers as Python writes a
    float back exactly (SQLite REAL keeps the double)."""
    if value is None:
        return b"\0"
    if isinstance(value, bool):
        return b"\1" + (b"1" if value else b"0")
    if isinstance(value, int | float):
        return b"\1" + repr(float(value)).encode()
    return b"\1" + value.encode("utf-8", "surrogatepass")


def _tag_at(tags: bytes, index: int) -> bytes:
    return tags[index * TAG_BYTES : (index + 1) * TAG_BYTES]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes | None:
    if not text:
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
