"""The Chat Completions request body, encoded to bytes with each tool list's schemas encoded once.

A turn offers the model the same tools on every request (a registry's definitions are one
tuple for the daemon's lifetime), and their JSON schemas are most of a request's size: about
10 KB for the built-in tools against a few hundred bytes of history in a new conversation.
:class:`ToolSchemas` encodes each :class:`~bot.providers.base.ToolDefinition` once and each
tuple of them once, to JSON and to UTF-8, and :func:`request_body` splices those bytes into
the JSON of the rest of the body, which is encoded per request. A definition's
``parameters`` must not change after it was first sent (registries and the MCP catalog build
new definitions instead).

The JSON is the OpenAI SDK's: compact separators, non-ASCII characters as they are, no NaN.
Text that UTF-8 cannot encode (a lone surrogate) is sent as ``\\u`` escapes instead of
failing the request.

Images (:attr:`ChatMessage.images <bot.providers.base.ChatMessage.images>`) are sent only
when the provider takes them (:func:`bot.providers.vision.takes_images`): a user message's
as its ``content`` array (its text, then one ``image_url`` part per image, a ``data:`` URL).
A ``tool`` message can carry text only, so the images of a run of tool results go in one
user message right after them, built here for this request and never kept in history. A
message without images is encoded exactly as before.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from bot.config import ProviderConfig
from bot.providers.base import ChatMessage, CompletionRequest, ImagePart, ToolDefinition
from bot.providers.vision import takes_images

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)

#: Definitions and tuples kept encoded per provider; past this, the cache starts again.
MAX_CACHED = 512
#: The text before the images of a run of tool results, in the user message that carries them.
TOOL_IMAGES_NOTE = "Images returned by the tool calls above (from the tools, not the user):"


def to_openai_messages(
    system: str, messages: Sequence[ChatMessage], *, images: bool = False
) -> list[dict[str, Any]]:
    """Our history as Chat Completions messages: the system prompt first, assistant tool calls
    as ``tool_calls``, each result as a ``tool`` message keyed by ``tool_call_id``. With
    ``images``, messages' images are sent too (see the module doc); without, only text."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    shown: list[dict[str, Any]] = []  # the images of the tool results since the last non-tool
    for message in messages:
        if shown and message.role != "tool":
            out.append({"role": "user", "content": [_text(TOOL_IMAGES_NOTE), *shown]})
            shown = []
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
            if images and message.images:
                label = f"{message.name or 'tool'} ({message.tool_call_id or ''})"
                for image in message.images:
                    shown += [_text(f"{label}: {image.name or image.media_type}"), _image(image)]
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": call.arguments or "{}",
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        elif images and message.images and message.role == "user":
            parts = [_text(message.content)] if message.content else []
            out.append({"role": "user", "content": parts + [_image(i) for i in message.images]})
        else:
            out.append({"role": message.role, "content": message.content})
    if shown:
        out.append({"role": "user", "content": [_text(TOOL_IMAGES_NOTE), *shown]})
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(image: ImagePart) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{data}"}}


def tool_json(tool: ToolDefinition) -> dict[str, Any]:
    """One tool as the API's ``tools`` array holds it."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }


def completion_params(
    config: ProviderConfig, request: CompletionRequest, *, images: bool | None = None
) -> dict[str, Any]:
    """The Chat Completions request body (minus ``stream``) for ``request``, as a dict.

    OpenAI's own API gets ``max_completion_tokens`` (its reasoning models refuse
    ``max_tokens``); compatible servers get the ``max_tokens`` they all understand. Images
    are sent when ``images`` says so (``None``: as :func:`takes_images` decides for
    ``config``).
    """
    params = _params_without_tools(config, request, images=images)
    if request.tools:
        params["tools"] = [tool_json(tool) for tool in request.tools]
    return params


def _params_without_tools(
    config: ProviderConfig, request: CompletionRequest, *, images: bool | None
) -> dict[str, Any]:
    official = config.base_url is None or "api.openai.com" in config.base_url
    if images is None:
        images = takes_images(config)
    params: dict[str, Any] = {
        "model": config.model,
        "messages": to_openai_messages(request.system, request.messages, images=images),
        "max_completion_tokens" if official else "max_tokens": (
            request.max_tokens or config.max_tokens
        ),
    }
    if request.response_schema is not None:
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(request.response_schema)},
        }
    if config.temperature is not None:
        params["temperature"] = config.temperature
    return params


class ToolSchemas:
    """Encoded ``tools`` arrays, each definition and each tuple of them encoded once.

    Entries are keyed by object identity and keep their object alive, so an identity is never
    reused while it is cached. A list is encoded from its definitions' cached JSON each time
    (it may change); a tuple is cached whole.
    """

    def __init__(self) -> None:
        self._tuples: dict[int, tuple[Sequence[ToolDefinition], str]] = {}
        self._each: dict[int, tuple[ToolDefinition, str]] = {}
        self._utf8: dict[int, tuple[Sequence[ToolDefinition], bytes]] = {}

    def array_utf8(self, tools: Sequence[ToolDefinition]) -> bytes:
        """:meth:`array` encoded to UTF-8 (a tuple's once: the text is most of a request)."""
        cached = self._utf8.get(id(tools))
        if cached is not None and cached[0] is tools:
            return cached[1]
        data = _utf8(self.array(tools))
        if isinstance(tools, tuple):
            if len(self._utf8) >= MAX_CACHED:
                self._utf8.clear()
            self._utf8[id(tools)] = (tools, data)
        return data

    def array(self, tools: Sequence[ToolDefinition]) -> str:
        """The JSON text of the ``tools`` array for ``tools``."""
        cached = self._tuples.get(id(tools))
        if cached is not None and cached[0] is tools:
            return cached[1]
        text = "[" + ",".join([self._one(tool) for tool in tools]) + "]"
        if isinstance(tools, tuple):
            if len(self._tuples) >= MAX_CACHED:
                self._tuples.clear()
            self._tuples[id(tools)] = (tools, text)
        return text

    def _one(self, tool: ToolDefinition) -> str:
        cached = self._each.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        text = _encode(tool_json(tool))
        if len(self._each) >= MAX_CACHED:
            self._each.clear()
        self._each[id(tool)] = (tool, text)
        return text


def request_body(
    config: ProviderConfig,
    request: CompletionRequest,
    *,
    stream: bool,
    schemas: ToolSchemas,
    images: bool | None = None,
) -> bytes:
    """The whole request body as bytes: :func:`completion_params` with ``stream`` (and, when
    streaming, usage in the last event), the tools spliced in from ``schemas``."""
    params = _params_without_tools(config, request, images=images)
    params["stream"] = stream
    if stream:
        params["stream_options"] = {"include_usage": True}
    data = _utf8(_encode(params))
    if request.tools:
        # one JSON object: the tools go in before its closing brace (one byte in UTF-8)
        data = b"".join((data[:-1], b',"tools":', schemas.array_utf8(request.tools), b"}"))
    return data


def _encode(value: object) -> str:
    return _ENCODER.encode(value)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:
        # a lone surrogate: JSON can carry it as an escape, UTF-8 cannot carry it at all
        return _ASCII_ENCODER.encode(json.loads(text)).encode()
