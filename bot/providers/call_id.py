"""Tool-call ids for calls whose model or server did not supply one.

Some OpenAI-compatible servers (older Ollama, llama.cpp builds) and every text-protocol call
return tool calls without an id; history needs one to pair each call with its result.
"""

from __future__ import annotations

import secrets


def new_call_id() -> str:
    """A fresh, unique id in the style OpenAI uses (``call_`` + 24 hex digits)."""
    return f"call_{secrets.token_hex(12)}"
