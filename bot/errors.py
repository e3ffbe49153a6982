"""The error tree of hatchway.

Exceptions are for broken invariants and for failures a caller must handle; a denied or
failed tool call is an outcome value, never an exception.

The tree, with the subclasses that live beside the code raising them, is drawn in
docs/architecture.md ("Errors"), which a test keeps whole.
"""

from __future__ import annotations

from typing import ClassVar


class HatchwayError(Exception):
    """Root of every error hatchway raises on purpose."""


class ConfigError(HatchwayError):
    """The configuration is invalid; the message names the key and how to fix it."""


class StorageError(HatchwayError):
    """The database cannot be opened, migrated, read or written. The store raises this tree
    and nothing of its engine (no ``sqlite3`` error leaves ``bot/store``); the message names
    the database and the engine's own words."""

    busy: ClassVar[bool] = False
    """Whether the failure passes (:class:`StorageBusy`): worth trying again."""


class StorageBusy(StorageError):
    """Another connection holds the database right now (SQLite's BUSY or LOCKED once its
    busy timeout ran out): the same write may succeed a moment later."""

    busy = True


class StorageIntegrityError(StorageError):
    """A write broke a constraint: a unique or foreign key, or a trigger that refuses it
    (the audit table is append-only). Trying again fails the same way."""


class StorageUnavailable(StorageError):
    """The database server cannot be reached: the connection was refused or lost, or the
    server is starting or shutting down (PostgreSQL only; a SQLite file has no server).
    What was in flight did not commit, or its outcome is unknown; the database may be back
    a moment later, so a replica reports not-ready rather than stopping."""


class SchemaTooNew(StorageError):
    """The database's schema is above this release's last migration: a newer release
    migrated it, and this one would write rows its tables do not expect. Nothing a restart
    changes: ``hatchway run`` exits with status 2, which the systemd unit does not restart
    (the operator runs the newer release or puts back the backup)."""


class ProviderError(HatchwayError):
    """An LLM provider failed after its retries were spent."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ProviderTimeout(ProviderError):
    """The provider did not answer within the request timeout."""


class ProviderUnavailable(ProviderError):
    """Every provider of the fallback chain failed."""


class ChannelError(HatchwayError):
    """A channel adapter cannot start or reach its platform."""


class ChannelAuthError(ChannelError):
    """The platform refused the adapter's credentials; the adapter stops."""


class AttachmentError(HatchwayError):
    """A file a user attached cannot be fetched or read: the download failed or expired,
    its address is not one of the platform's own hosts, or it is larger than allowed. The
    message is one plain sentence the user can be shown (no token, no signed URL)."""


class AttachmentTooLarge(AttachmentError):
    """The file is larger than ``attachments.max_bytes`` or the platform's own limit."""


class AttachmentRefused(AttachmentError):
    """The attachment's address (or a redirect's) is not one of the platform's own hosts:
    nothing is fetched from it."""


class TranscriptionError(HatchwayError):
    """A voice note or audio file could not be transcribed: it is longer or larger than
    allowed, its audio cannot be read, or every transcription provider failed. The message
    is one plain sentence the user can be shown (no key, no URL with credentials)."""


class RegistryError(HatchwayError):
    """A tool registry is inconsistent, e.g. a spec has no handler."""
