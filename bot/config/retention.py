"""``[retention]``: how long each kind of record is kept, applied by a daily job.

Each ``*_days`` key is a window in days; 0 keeps the records for ever. The job
(:mod:`bot.schedules.retention`) deletes what is older, table by table, then gives the freed
pages back to the file system (SQLite's incremental vacuum) when ``vacuum`` is on. The audit
trail is kept longest: a window for it must be at least :data:`MIN_AUDIT_DAYS` and at least
every other window (none of which may then be 0). Files users sent are kept
``attachments.keep_days`` (``[attachments]``), which the same job applies. See
docs/operations.md, "Retention and deletion".
"""

from __future__ import annotations

from pydantic import Field, model_validator

from bot.config_model import ConfigModel

#: The shortest audit window accepted (the schema refuses deleting younger audit rows too).
MIN_AUDIT_DAYS = 30
#: The shortest inbox window accepted: a platform may redeliver a message for a day or so
#: after it was sent, and the inbox entry is what recognises it.
MIN_INBOX_DAYS = 2


class RetentionConfig(ConfigModel):
    """``[retention]``; every window in days, 0 for ever."""

    enabled: bool = True
    history_days: int = Field(default=0, ge=0)
    tool_calls_days: int = Field(default=0, ge=0)
    inbox_days: int = Field(default=30, ge=0)
    usage_days: int = Field(default=0, ge=0)
    audit_days: int = Field(default=0, ge=0)
    vacuum: bool = True

    def windows(self) -> dict[str, int]:
        """Every window but the audit's, by key."""
        return {
            "history_days": self.history_days,
            "tool_calls_days": self.tool_calls_days,
            "inbox_days": self.inbox_days,
            "usage_days": self.usage_days,
        }

    @model_validator(mode="after")
    def _audit_kept_longest(self) -> RetentionConfig:
        if 0 < self.inbox_days < MIN_INBOX_DAYS:
            raise ValueError(
                f"inbox_days = {self.inbox_days} is under {MIN_INBOX_DAYS}: the inbox is what "
                "recognises a platform's redelivery of a message"
            )
        if self.audit_days == 0:
            return self
        if self.audit_days < MIN_AUDIT_DAYS:
            raise ValueError(
                f"audit_days = {self.audit_days} is under {MIN_AUDIT_DAYS} (or 0: kept for ever)"
            )
        for key, days in self.windows().items():
            if days == 0 or days > self.audit_days:
                kept = "for ever" if days == 0 else f"{days} days"
                raise ValueError(
                    f"the audit trail is kept longest, but {key} keeps records {kept} and "
                    f"audit_days only {self.audit_days}: set {key} to at most "
                    f"{self.audit_days}, or audit_days = 0"
                )
        return self
