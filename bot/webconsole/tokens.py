"""The console's secrets: sign-in link tokens, codes, session ids and CSRF tokens.

* A link token and a session id are 32 random bytes in hex (hex, not base64: nothing in it
  reads as markup when the link is sent as chat text). The database keeps only their
  SHA-256 digests (:func:`digest`).
* A code is 8 characters from an alphabet without look-alikes, shown as ``ABCD-EFGH``. It
  is short enough to type, so it counts only in the browser that asked for it: its digest is
  taken together with that browser's nonce (:func:`code_digest`), a random value kept in a
  cookie the browser got with the sign-in form. A guessed code is worthless elsewhere.
* A session's CSRF token is derived from its id (:func:`csrf_for`): per session, never
  stored, and unknown to anyone who does not hold the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8


def new_token() -> str:
    return secrets.token_hex(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_code() -> str:
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{code[:4]}-{code[4:]}"


def normalise_code(text: str) -> str:
    """A typed code as stored: upper case, without spaces and dashes (``abcd efgh`` and
    ``ABCD-EFGH`` are the same code)."""
    return "".join(ch for ch in text.upper() if ch not in " -\t")


def code_digest(code: str, nonce: str) -> str:
    return digest(f"{nonce}:{normalise_code(code)}")


def csrf_for(session_id: str) -> str:
    return hmac.new(session_id.encode("utf-8"), b"csrf", hashlib.sha256).hexdigest()


def same(given: str, expected: str) -> bool:
    """Constant-time comparison of two tokens."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
