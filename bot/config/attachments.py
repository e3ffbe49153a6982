"""``[attachments]``: files users send with their messages (see docs/attachments.md)."""

from __future__ import annotations

from pydantic import Field

from bot.config_model import ConfigModel

MB = 1024 * 1024


class AttachmentsConfig(ConfigModel):
    """``[attachments]``. Files are downloaded when the turn that answers them starts, at
    most ``max_bytes`` each (and never more than the platform lets a bot download), at most
    ``parallel_downloads`` at once, each within ``download_timeout_s``. A text file or a
    PDF's text is shown to the model up to ``inline_max_chars`` characters; the rest stays
    in the conversation's workspace. A PDF is read at most ``pdf_max_pages`` pages deep,
    within ``pdf_timeout_s``. Files and their rows are deleted ``keep_days`` days after
    they arrived. ``enabled = false`` downloads nothing: the model is told only each file's
    name."""

    enabled: bool = True
    max_bytes: int = Field(default=20 * MB, ge=1)
    inline_max_chars: int = Field(default=20_000, ge=0)
    keep_days: float = Field(default=7.0, gt=0)
    parallel_downloads: int = Field(default=3, ge=1, le=16)
    download_timeout_s: float = Field(default=120.0, gt=0)
    pdf_max_pages: int = Field(default=200, ge=1)
    pdf_timeout_s: float = Field(default=30.0, gt=0)
