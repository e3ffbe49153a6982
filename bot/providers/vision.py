"""Whether a provider is sent images: ``providers.<name>.images``, or a fixed rule when unset.

``images = true`` or ``false`` is taken as it is (``true`` is refused for ``kind =
"embedded"`` when the configuration loads). Unset (``None``), the rule (also in
``docs/providers.md``) is:

* ``kind = "anthropic"`` → yes (every Claude model since the third generation reads images);
* ``kind = "embedded"`` → no (the llama.cpp model in this process reads text only);
* ``kind = "openai"`` → yes when the model name (case-insensitive, the part after the last
  ``/`` only) is of a family known to read images through the Chat Completions API
  (:data:`VISION_FAMILIES`, or an o-series reasoning model other than the text-only
  ``o1-mini``, ``o1-preview`` and ``o3-mini``), otherwise no.

A provider that is not sent images gets each message's ``content`` alone, which already names
every image and where it is saved. In a fallback chain each provider answers for itself.
"""

from __future__ import annotations

from bot.config import ProviderConfig

#: Substrings of model names that read images over the Chat Completions API.
VISION_FAMILIES = (
    "gpt-4o",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-4-vision",
    "gpt-5",
    "claude",
    "gemini",
    "gemma3",
    "gemma-3",
    "llava",
    "pixtral",
    "-vl",  # qwen-vl, qwen2.5-vl, qwen3-vl, deepseek-vl, …
    "qwen2.5vl",  # Ollama's name for it
    "qvq",
    "vision",  # llama3.2-vision, grok-2-vision, …
    "minicpm-v",
    "moondream",
    "internvl",
    "llama4",
    "llama-4",
    "mistral-small3.1",
    "mistral-small-3.1",
    "mistral-medium",
)
_REASONING = ("o1", "o3", "o4")
_TEXT_ONLY_REASONING = ("o1-mini", "o1-preview", "o3-mini")


def takes_images(config: ProviderConfig) -> bool:
    """Whether the provider configured by ``config`` is sent images (see the module doc)."""
    if config.images is not None:
        return config.images
    if config.kind == "anthropic":
        return True
    if config.kind == "embedded":
        return False
    model = config.model.lower().rsplit("/", 1)[-1]
    if model.startswith(_REASONING):
        return not model.startswith(_TEXT_ONLY_REASONING)
    return any(family in model for family in VISION_FAMILIES)
