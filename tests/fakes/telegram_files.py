"""Files on the fake Telegram: what ``getFile`` answers, what the file URL serves, and the
photos and documents the bot uploads.

Like Telegram, each file sits under a path (``documents/DOC1``, ``photos/PH7``): ``getFile``
names it with the file's size, and ``GET /file/bot<token>/<path>`` serves its bytes. A file
over :data:`DOWNLOAD_LIMIT` gets Telegram's ``400 file is too big`` from ``getFile``.
:meth:`TelegramFiles.add` puts a file there, optionally with a size ``getFile`` tells instead
of its length (a large file without its bytes). Two switches model a file URL that leads
off the server: :attr:`TelegramFiles.foreign_url` makes ``getFile`` answer that absolute URL
as the path, :attr:`TelegramFiles.redirect_to` makes every download answer ``302`` to it.
:attr:`TelegramFiles.downloads` lists the paths fetched.

Uploads are checked as Telegram checks them (the caption by
:mod:`tests.fakes.telegram_rules`): a photo over :data:`PHOTO_LIMIT`, or
one whose sides add up to more than 10,000 pixels or whose ratio exceeds 20
(``PHOTO_INVALID_DIMENSIONS``); a photo is kept in the sizes Telegram makes of it (here: the
original's, read with Pillow), a document with its name and a type guessed from it.
"""

from __future__ import annotations

import io
import mimetypes
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from PIL import Image

JSON = dict[str, Any]
MB = 1024 * 1024
DOWNLOAD_LIMIT = 20 * MB
PHOTO_LIMIT = 10 * MB


@dataclass(slots=True)
class TelegramFiles:
    """The fake's files, by path; ``files`` is :attr:`FakeTelegram.files`."""

    files: dict[str, bytes]
    paths: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    foreign_url: str | None = None
    redirect_to: str | None = None
    downloads: list[str] = field(default_factory=list)

    def add(self, file_id: str, data: bytes, *, path: str = "", size: int | None = None) -> str:
        """Keep ``data`` as file ``file_id`` (under ``path``, else ``documents/<id>``);
        ``size``: what ``getFile`` says instead of ``len(data)``. Returns the path."""
        path = path or f"documents/{file_id}"
        self.paths[file_id] = path
        self.files[path] = data
        if size is not None:
            self.sizes[file_id] = size
        return path

    def get_file(self, file_id: str) -> JSON | tuple[int, str]:
        """``getFile``'s result, or its error (status, description)."""
        path = self.paths.get(file_id, f"documents/{file_id}")
        if path not in self.files:
            return 400, "Bad Request: invalid file_id"
        size = self.sizes.get(file_id, len(self.files[path]))
        if size > DOWNLOAD_LIMIT:
            return 400, "Bad Request: file is too big"
        return {
            "file_id": file_id,
            "file_unique_id": "u" + file_id,
            "file_size": size,
            "file_path": self.foreign_url or path,
        }

    def serve(self, path: str) -> web.Response:
        """The answer to a download of ``path``."""
        self.downloads.append(path)
        if self.redirect_to is not None:
            raise web.HTTPFound(self.redirect_to)
        data = self.files.get(path)
        return web.Response(status=404) if data is None else web.Response(body=data)

    def photo(self, message_id: int, data: bytes) -> list[JSON] | tuple[int, str]:
        """The sizes of an uploaded photo (kept under ``photos/``), or Telegram's refusal."""
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        except (OSError, ValueError):
            return 400, "Bad Request: IMAGE_PROCESS_FAILED"
        ratio_ok = max(width, height) <= 20 * min(width, height)
        if len(data) > PHOTO_LIMIT or width + height > 10_000 or not ratio_ok:
            return 400, "Bad Request: PHOTO_INVALID_DIMENSIONS"
        file_id = f"PH{message_id}"
        self.add(file_id, data, path=f"photos/{file_id}")
        size = {"file_unique_id": "u" + file_id, "file_size": len(data)}
        return [{"file_id": file_id, "width": width, "height": height, **size}]

    def document(self, message_id: int, upload: JSON) -> JSON:
        """The ``document`` of an uploaded file (kept under ``documents/``)."""
        file_id = f"DOC{message_id}"
        self.add(file_id, upload["bytes"])
        name = str(upload["file_name"])
        return {
            "file_id": file_id,
            "file_unique_id": "u" + file_id,
            "file_name": name,
            "mime_type": mimetypes.guess_type(name)[0] or "application/octet-stream",
            "file_size": len(upload["bytes"]),
        }
