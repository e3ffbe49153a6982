"""Files on the fake Slack: shared files to download, and the external upload flow.

:class:`FakeFiles` holds the files users shared (:meth:`FakeFiles.share` gives the file object
an event carries) and serves them as Slack does:

- ``GET /files-pri/{team}-{id}/download/{name}`` (``url_private_download``) wants the bot
  token; without it, or while the app lacks ``files:read`` (:attr:`FakeFiles.read_scope`
  False), the answer is Slack's sign-in page: HTML with status 200. A file shared with
  ``redirect="same"`` answers ``302`` to a signed URL on the same host
  (``/files-origin/{id}?sig=…``, served without a token, as Slack's signed hops are); with
  ``redirect="foreign"`` to a signed URL on another host (``localhost`` at another port, a
  second server, :attr:`FakeFiles.foreign_requests`). ``chunked`` serves the body without a
  ``Content-Length``. Every request for a file is recorded (:attr:`FakeFiles.requests`), with
  the ``Authorization`` header it carried.
- ``files.info`` answers with the file (``missing_scope`` without ``files:read``).
- ``files.getUploadURLExternal`` (``filename``, ``length``; ``missing_scope`` while the
  app lacks ``files:write``, :attr:`FakeFiles.write_scope` False) hands out an upload URL served
  here (``POST /upload/{id}``, the raw bytes, answered ``OK - <length>``);
  ``files.completeUploadExternal`` (``files`` as JSON, ``channel_id``, ``thread_ts``,
  ``initial_comment``) shares each uploaded file: it is recorded in :attr:`FakeFiles.uploads`
  and posted as the bot's message in the conversation (in the thread), and the answer names
  the message under the file's ``shares``. ``files.upload`` is retired
  (``method_deprecated``), as on Slack.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

JSON = dict[str, Any]
Redirect = Literal["none", "same", "foreign"]

SIGN_IN_PAGE = (
    b"<!DOCTYPE html><html><head><title>Slack</title></head>"
    b"<body><h1>Sign in to your workspace</h1></body></html>"
)


@dataclass(frozen=True, slots=True)
class FileRequest:
    path: str
    query: str
    authorization: str


@dataclass(slots=True)
class SharedFile:
    file_id: str
    name: str
    data: bytes
    mimetype: str
    redirect: Redirect = "none"
    chunked: bool = False
    signature: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True, slots=True)
class Upload:
    """A file the bot shared through the external upload flow."""

    file_id: str
    name: str
    title: str
    data: bytes
    channel: str
    thread_ts: str | None
    initial_comment: str | None
    ts: str


class FakeFiles:
    """Shared files and uploads of one :class:`~tests.fakes.slack_server.FakeSlack`."""

    def __init__(self, *, bot_token: str, team: str, bot_user: str, bot_id: str) -> None:
        self.read_scope = True
        #: Whether the app has ``files:write`` (without it no upload URL is handed out).
        self.write_scope = True
        self.requests: list[FileRequest] = []
        self.foreign_requests: list[FileRequest] = []
        self.uploads: list[Upload] = []
        self.shared: dict[str, SharedFile] = {}
        self._bot_token = bot_token
        self._team = team
        self._bot_user = bot_user
        self._bot_id = bot_id
        self._ids = itertools.count(1)
        self._pending: dict[str, JSON] = {}  # file id -> {"filename", "length", "data"}
        self._origin = ""
        self._foreign = LoopbackServer()

    # -- lifecycle and routes --------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        """The file hosts and the upload URL, on the fake's own app."""
        app.router.add_get("/files-pri/{team_file}/download/{name}", self._serve_private)
        app.router.add_get("/files-pri/{team_file}/{name}", self._serve_private)
        app.router.add_get("/files-origin/{file_id}", self._serve_signed)
        app.router.add_post("/upload/{file_id}", self._receive_upload)

    async def start(self, origin: str) -> None:
        """Once the fake serves at ``origin``: start the foreign host."""
        self._origin = origin
        foreign = web.Application()
        foreign.router.add_get("/files/{file_id}", self._serve_foreign)
        await self._foreign.start(foreign)

    async def aclose(self) -> None:
        await self._foreign.aclose()

    # -- test controls -----------------------------------------------------------------------------

    def share(
        self,
        name: str,
        data: bytes,
        mimetype: str,
        *,
        redirect: Redirect = "none",
        chunked: bool = False,
        size: int | None = None,
    ) -> JSON:
        """A file a user shared: the file object a ``file_share`` event carries (``size``
        overrides the size it states)."""
        file_id = f"F{next(self._ids):09d}"
        self.shared[file_id] = SharedFile(
            file_id=file_id,
            name=name,
            data=data,
            mimetype=mimetype,
            redirect=redirect,
            chunked=chunked,
        )
        return self._file_object(self.shared[file_id], size=size)

    def clip(self, data: bytes, *, duration_ms: int, mimetype: str = "audio/ogg") -> JSON:
        """An audio clip recorded in Slack's app: a shared file of subtype ``slack_audio``
        with its length (``duration_ms``), named as the app names it."""
        extension = mimetype.rsplit("/", 1)[-1]
        item = self.share(f"audio_message.{extension}", data, mimetype)
        return item | {"subtype": "slack_audio", "duration_ms": duration_ms}

    def _file_object(self, shared: SharedFile, *, size: int | None = None) -> JSON:
        base = f"{self._origin}/files-pri/{self._team}-{shared.file_id}"
        return {
            "id": shared.file_id,
            "name": shared.name,
            "title": shared.name,
            "mimetype": shared.mimetype,
            "filetype": shared.name.rsplit(".", 1)[-1],
            "size": len(shared.data) if size is None else size,
            "mode": "hosted",
            "url_private": f"{base}/{shared.name}",
            "url_private_download": f"{base}/download/{shared.name}",
        }

    # -- the Web API -------------------------------------------------------------------------------

    def answer(self, method: str, params: JSON, *, ts: str, post: Any) -> tuple[int, JSON] | None:
        """The answer to a ``files.*`` method, or None for another method. ``post(channel,
        message)`` stores a message the way ``chat.postMessage`` does and returns the channel
        it landed in, or an error code."""
        if method == "files.info":
            return 200, self._info(params)
        if method == "files.getUploadURLExternal":
            return 200, self._upload_url(params)
        if method == "files.completeUploadExternal":
            return 200, self._complete(params, ts=ts, post=post)
        if method == "files.upload":
            return 200, {"ok": False, "error": "method_deprecated"}
        return None

    def _info(self, params: JSON) -> JSON:
        if not self.read_scope:
            return {"ok": False, "error": "missing_scope", "needed": "files:read"}
        shared = self.shared.get(str(params.get("file") or ""))
        if shared is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": self._file_object(shared)}

    def _upload_url(self, params: JSON) -> JSON:
        if not self.write_scope:
            return {"ok": False, "error": "missing_scope", "needed": "files:write"}
        filename = str(params.get("filename") or "")
        try:
            length = int(params.get("length") or 0)
        except ValueError:
            length = 0
        if not filename or length <= 0:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._ids):09d}"
        self._pending[file_id] = {"filename": filename, "length": length, "data": None}
        return {"ok": True, "upload_url": f"{self._origin}/upload/{file_id}", "file_id": file_id}

    def _complete(self, params: JSON, *, ts: str, post: Any) -> JSON:
        raw = params.get("files")
        files = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(files, list) or not files:
            return {"ok": False, "error": "invalid_arguments"}
        pending = [(f, self._pending.get(str(f.get("id")))) for f in files]
        if any(p is None or p["data"] is None for _, p in pending):
            return {"ok": False, "error": "file_not_found"}
        channel = str(params.get("channel_id") or "")
        thread_ts = str(params.get("thread_ts") or "") or None
        comment = params.get("initial_comment")
        comment = str(comment) if comment else None
        objects = [
            {"id": f["id"], "name": p["filename"], "title": f.get("title") or p["filename"]}
            for f, p in pending
            if p is not None
        ]
        shares: JSON = {}
        if channel:
            message: JSON = {
                "type": "message",
                "ts": ts,
                "user": self._bot_user,
                "bot_id": self._bot_id,
                "text": comment or "",
                "files": objects,
                "upload": True,
            }
            if thread_ts:
                message["thread_ts"] = thread_ts
            landed = post(channel, message)
            if landed in ("channel_not_found", "not_in_channel"):
                return {"ok": False, "error": landed}
            kind = "private" if landed[:1] in ("D", "G") else "public"
            shares = {kind: {landed: [{"ts": ts, "thread_ts": thread_ts or ""}]}}
            channel = landed
        for (f, p), obj in zip(pending, objects, strict=True):
            assert p is not None
            del self._pending[str(f["id"])]
            self.uploads.append(
                Upload(
                    file_id=str(f["id"]),
                    name=p["filename"],
                    title=obj["title"],
                    data=p["data"],
                    channel=channel,
                    thread_ts=thread_ts,
                    initial_comment=comment,
                    ts=ts,
                )
            )
        return {"ok": True, "files": [{**obj, "shares": shares} for obj in objects]}

    # -- HTTP: the upload URL and the file hosts ---------------------------------------------------

    async def _receive_upload(self, request: web.Request) -> web.Response:
        pending = self._pending.get(request.match_info["file_id"])
        if pending is None:
            return web.Response(status=404, text="upload_not_found")
        data = await request.read()
        if len(data) != pending["length"]:
            return web.Response(status=400, text="length_mismatch")
        pending["data"] = data
        return web.Response(text=f"OK - {len(data)}")

    def _record(self, request: web.Request, into: list[FileRequest]) -> None:
        into.append(
            FileRequest(
                path=request.path,
                query=request.query_string,
                authorization=request.headers.get("Authorization", ""),
            )
        )

    async def _serve_private(self, request: web.Request) -> web.StreamResponse:
        self._record(request, self.requests)
        file_id = request.match_info["team_file"].rsplit("-", 1)[-1]
        shared = self.shared.get(file_id)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if shared is None:
            return web.Response(status=404, text="file_not_found")
        if token != self._bot_token or not self.read_scope:
            return web.Response(body=SIGN_IN_PAGE, content_type="text/html")
        if shared.redirect == "same":
            location = f"{self._origin}/files-origin/{file_id}?sig={shared.signature}"
            raise web.HTTPFound(location)
        if shared.redirect == "foreign":
            foreign = self._foreign.url(f"/files/{file_id}").replace("127.0.0.1", "localhost")
            raise web.HTTPFound(f"{foreign}?sig={shared.signature}")
        return await self._body(request, shared)

    async def _serve_signed(self, request: web.Request) -> web.StreamResponse:
        self._record(request, self.requests)
        return await self._signed(request)

    async def _serve_foreign(self, request: web.Request) -> web.StreamResponse:
        self._record(request, self.foreign_requests)
        return await self._signed(request)

    async def _signed(self, request: web.Request) -> web.StreamResponse:
        shared = self.shared.get(request.match_info["file_id"])
        if shared is None or request.query.get("sig") != shared.signature:
            return web.Response(status=403, text="invalid signature")
        return await self._body(request, shared)

    async def _body(self, request: web.Request, shared: SharedFile) -> web.StreamResponse:
        if not shared.chunked:
            return web.Response(body=shared.data, content_type=shared.mimetype)
        response = web.StreamResponse(headers={"Content-Type": shared.mimetype})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for start in range(0, len(shared.data), 16 * 1024):
                await response.write(shared.data[start : start + 16 * 1024])
            await response.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass  # the client stopped reading: a download cut short on purpose
        return response
