"""What an image a model is shown costs in tokens, estimated from its size in pixels.

The rule is Anthropic's published one, which every provider here charges at or below:
``width × height / 750`` tokens, at most :data:`MAX_IMAGE_TOKENS` (Claude scales a larger
image down to about that) and at least :data:`MIN_IMAGE_TOKENS`. OpenAI's high-detail
count for the same images (85 + 170 per 512-pixel tile after scaling the short side to 768)
comes out lower: 765 to 1,105 tokens for an image of 1568 pixels on its long side, the most an
attachment is shown at. An image whose size is not known counts as the most. History
trimming (:mod:`bot.agent.context_window`) and the usage estimate of a call whose provider
reported none (:mod:`bot.usage.estimate`) both count images this way.
"""

from __future__ import annotations

from bot.providers.base import ImagePart

PIXELS_PER_TOKEN = 750
MAX_IMAGE_TOKENS = 1600
MIN_IMAGE_TOKENS = 85


def image_tokens(image: ImagePart) -> int:
    """The estimated tokens of showing ``image`` to a model (see the module doc)."""
    if image.width <= 0 or image.height <= 0:
        return MAX_IMAGE_TOKENS
    tokens = -(-(image.width * image.height) // PIXELS_PER_TOKEN)
    return max(MIN_IMAGE_TOKENS, min(MAX_IMAGE_TOKENS, tokens))
