"""The Slack Web API as the adapter uses it: typed calls, per-method rate limits, errors mapped.

:class:`SlackWebApi` wraps slack_sdk's ``AsyncWebClient`` (the same client bolt uses, so
bolt's own calls share the rate-limit handling). A ``429`` is retried after its
``Retry-After`` by :class:`MethodRateLimiter`, which also holds back later calls of the
*same method* until that window has passed; other methods are not delayed.

Failures raise :class:`SlackCallFailed` (a :class:`~bot.errors.ChannelError` carrying Slack's
error code); a refused token raises :class:`~bot.errors.ChannelAuthError`. Tokens never appear
in logs or error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.errors import ChannelAuthError, ChannelError
from channels.slack.normalise import BotIdentity

log = structlog.get_logger(__name__)

#: Error codes meaning "these credentials are refused": fatal for the adapter.
AUTH_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PostedMessage:
    """Where ``chat.postMessage`` put a message: posted to a user id, ``channel`` is the id
    of the app's DM with them (``D…``), which later edits of the message must name."""

    channel: str
    ts: str


#: Messages asked for per ``conversations.history`` / ``conversations.replies`` page.
HISTORY_PAGE_SIZE = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenedView:
    """A modal ``views.open`` opened: its ``id`` and ``hash`` (``views.update`` with that
    hash replaces it only while nobody changed it)."""

    id: str
    hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPage:
    """One page of messages; ``has_more`` when Slack holds more, then ``next_cursor`` is
    the next page's cursor (when Slack gave one)."""

    messages: list[Mapping[str, Any]]
    has_more: bool
    next_cursor: str


class SlackCallFailed(ChannelError):
    """A Web API call failed; ``code`` is Slack's error code (or the transport's)."""

    def __init__(self, method: str, code: str) -> None:
        super().__init__(f"slack {method} failed: {code}")
        self.method = method
        self.code = code


def _retry_after(headers: Mapping[str, Sequence[str] | str]) -> float:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value if isinstance(value, str) else (value[0] if value else "")
            try:
                return max(0.0, float(raw))
            except ValueError:
                return 1.0
    return 1.0


def _error_code(exc: SlackApiError) -> str:
    """Slack's ``error`` field, or ``http_<status>`` when the body was not Slack's JSON."""
    data = exc.response.data
    code = data.get("error") if isinstance(data, dict) else None
    return str(code or f"http_{exc.response.status_code}")


class MethodRateLimiter(AsyncRateLimitErrorRetryHandler):
    """Retries a ``429`` after ``Retry-After`` (plus a little jitter) and blocks the same
    method for that long, so concurrent callers of a limited method wait their turn."""

    def __init__(self, max_retry_count: int, *, clock: Callable[[], float] = time.monotonic):
        super().__init__(max_retry_count=max_retry_count)
        self._clock = clock
        self._blocked_until: dict[str, float] = {}

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:
            raise error or ChannelError("slack rate limit handler called without a response")
        method = request.url.rstrip("/").rsplit("/", 1)[-1]
        delay = _retry_after(response.headers)
        self._blocked_until[method] = self._clock() + delay
        log.info("slack_rate_limited", method=method, retry_after_s=delay)
        state.next_attempt_requested = True
        await asyncio.sleep(delay + random.uniform(0, min(1.0, delay * 0.1)))
        state.increment_current_attempt()

    def blocked(self, method: str) -> bool:
        """Whether ``method`` is inside a ``Retry-After`` window now."""
        return self._blocked_until.get(method, 0.0) > self._clock()

    async def wait_for(self, method: str) -> None:
        """Sleep until ``method`` is no longer inside a ``Retry-After`` window."""
        remaining = self._blocked_until.get(method, 0.0) - self._clock()
        if remaining > 0:
            await asyncio.sleep(remaining)


class SlackWebApi:
    """The Web API calls the adapter makes, with one client and one rate limiter."""

    def __init__(self, *, token: str, base_url: str, rate_limit_retries: int = 3) -> None:
        self.limiter = MethodRateLimiter(rate_limit_retries)
        handlers: list[AsyncRetryHandler] = [AsyncConnectionErrorRetryHandler(), self.limiter]
        self.client = AsyncWebClient(token=token, base_url=base_url, retry_handlers=handlers)

    @contextlib.asynccontextmanager
    async def kept_alive(self) -> AsyncIterator[None]:
        """Every call made while the block runs shares one HTTP session, so connections to
        Slack are reused. Without it slack_sdk opens and closes a session per call: a new
        TCP and TLS handshake for every message, edit and reaction."""
        timeout = aiohttp.ClientTimeout(total=self.client.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            self.client.session = session
            try:
                yield
            finally:
                self.client.session = None

    async def _call(
        self, method: str, invoke: Callable[[], Awaitable[AsyncSlackResponse]]
    ) -> Mapping[str, Any]:
        await self.limiter.wait_for(method)
        try:
            response = await invoke()
        except SlackApiError as exc:
            code = _error_code(exc)
            if code in AUTH_ERRORS:
                raise ChannelAuthError(f"Slack refused the token on {method} ({code})") from None
            raise SlackCallFailed(method, code) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise SlackCallFailed(method, type(exc).__name__) from None
        data: Mapping[str, Any] = response.data if isinstance(response.data, dict) else {}
        return data

    async def call(
        self, method: str, invoke: Callable[[], Awaitable[AsyncSlackResponse]]
    ) -> Mapping[str, Any]:
        """Any other Web API call (``invoke`` uses :attr:`client`), rate-limited and mapped
        to errors like the calls here: the file calls of :mod:`channels.slack.files`."""
        return await self._call(method, invoke)

    async def auth_test(self) -> BotIdentity:
        data = await self._call("auth.test", self.client.auth_test)
        user_id = str(data.get("user_id") or "")
        if not user_id:
            raise SlackCallFailed("auth.test", "no_user_id")
        return BotIdentity(
            user_id=user_id,
            bot_id=str(data.get("bot_id") or ""),
            team_id=str(data.get("team_id") or ""),
        )

    async def open_socket_url(self, app_token: str) -> str:
        """A fresh Socket Mode URL (``apps.connections.open`` with the app-level token)."""
        data = await self._call(
            "apps.connections.open",
            lambda: self.client.apps_connections_open(app_token=app_token),
        )
        url = data.get("url")
        if not isinstance(url, str) or not url:
            raise SlackCallFailed("apps.connections.open", "no_url")
        return url

    async def post_message(
        self,
        *,
        channel: str,
        text: str,
        thread_ts: str | None = None,
        blocks: Sequence[Mapping[str, object]] | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> PostedMessage:
        params: dict[str, Any] = {"channel": channel, "text": text, "mrkdwn": True}
        if thread_ts:
            params["thread_ts"] = thread_ts
        if blocks is not None:
            params["blocks"] = list(blocks)
        if metadata is not None:
            params["metadata"] = dict(metadata)
        data = await self._call("chat.postMessage", lambda: self.client.chat_postMessage(**params))
        return PostedMessage(
            channel=str(data.get("channel") or channel), ts=str(data.get("ts") or "")
        )

    async def update_message(
        self,
        *,
        channel: str,
        ts: str,
        text: str,
        blocks: Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        params: dict[str, Any] = {"channel": channel, "ts": ts, "text": text}
        params["blocks"] = list(blocks) if blocks is not None else []
        await self._call("chat.update", lambda: self.client.chat_update(**params))

    async def post_ephemeral(
        self, *, channel: str, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        params: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            params["thread_ts"] = thread_ts
        await self._call("chat.postEphemeral", lambda: self.client.chat_postEphemeral(**params))

    async def open_view(self, *, trigger_id: str, view: Mapping[str, object]) -> OpenedView:
        """Open a modal for the person whose interaction gave ``trigger_id`` (valid 3 s);
        the view as Slack names it (``id`` and ``hash``, empty when it names none)."""
        data = await self._call(
            "views.open",
            lambda: self.client.views_open(trigger_id=trigger_id, view=dict(view)),
        )
        opened = data.get("view")
        opened = opened if isinstance(opened, Mapping) else {}
        return OpenedView(id=str(opened.get("id") or ""), hash=str(opened.get("hash") or ""))

    async def share_file(
        self, *, channel: str, thread_ts: str | None, name: str, data: bytes, comment: str
    ) -> None:
        """Share ``data`` as the file ``name`` in ``channel`` (in the thread ``thread_ts``)
        with ``comment`` (mrkdwn) under it, through slack_sdk's ``files_upload_v2``
        (``files.getUploadURLExternal``, the bytes, ``files.completeUploadExternal``).
        Raises :class:`SlackCallFailed` (``upload_failed``: the upload URL refused the
        bytes)."""
        params: dict[str, Any] = {
            "file": data,
            "filename": name,
            "title": name,
            "channel": channel,
            "initial_comment": comment,
        }
        if thread_ts:
            params["thread_ts"] = thread_ts
        try:
            await self._call(
                "files.completeUploadExternal", lambda: self.client.files_upload_v2(**params)
            )
        except SlackRequestError:
            # slack_sdk's message names the upload URL: not passed on
            raise SlackCallFailed("files.completeUploadExternal", "upload_failed") from None

    async def update_view(
        self, *, view_id: str, view: Mapping[str, object], view_hash: str = ""
    ) -> None:
        """Replace an open modal. With ``view_hash`` (the view's hash when the person acted
        on it) Slack refuses the update with ``hash_conflict`` if the view changed since."""
        params: dict[str, Any] = {"view_id": view_id, "view": dict(view)}
        if view_hash:
            params["hash"] = view_hash
        await self._call("views.update", lambda: self.client.views_update(**params))

    async def add_reaction(self, *, channel: str, ts: str, name: str) -> None:
        try:
            await self._call(
                "reactions.add",
                lambda: self.client.reactions_add(channel=channel, timestamp=ts, name=name),
            )
        except SlackCallFailed as exc:
            if exc.code != "already_reacted":
                raise

    async def conversation_members(
        self, *, channel: str, cursor: str = "", limit: int = 1000
    ) -> tuple[list[str], str]:
        """One page of ``conversations.members``: the member ids and the next page's cursor
        ("" after the last page)."""
        data = await self._call(
            "conversations.members",
            lambda: self.client.conversations_members(
                channel=channel, cursor=cursor or None, limit=limit
            ),
        )
        members = data.get("members")
        if not isinstance(members, list):
            raise SlackCallFailed("conversations.members", "no_members")
        meta = data.get("response_metadata")
        following = meta.get("next_cursor") if isinstance(meta, dict) else None
        return [str(m) for m in members], str(following or "")

    async def history_page(
        self, *, channel: str, thread_ts: str | None, oldest: str, cursor: str = ""
    ) -> HistoryPage:
        """One page of the messages after ``oldest`` with their metadata: the replies in the
        thread ``thread_ts`` (``conversations.replies``, the parent first) or the
        conversation's top level (``conversations.history``, newest first)."""
        params: dict[str, Any] = {
            "channel": channel,
            "oldest": oldest or None,
            "cursor": cursor or None,
            "limit": HISTORY_PAGE_SIZE,
            "include_all_metadata": True,
        }
        if thread_ts:
            method = "conversations.replies"
            data = await self._call(
                method, lambda: self.client.conversations_replies(ts=thread_ts, **params)
            )
        else:
            method = "conversations.history"
            data = await self._call(method, lambda: self.client.conversations_history(**params))
        messages = data.get("messages")
        if not isinstance(messages, list):
            raise SlackCallFailed(method, "no_messages")
        meta = data.get("response_metadata")
        following = meta.get("next_cursor") if isinstance(meta, dict) else None
        return HistoryPage(
            messages=[m for m in messages if isinstance(m, dict)],
            has_more=bool(data.get("has_more")),
            next_cursor=str(following or ""),
        )

    async def conversation_info(self, channel: str) -> Mapping[str, Any]:
        """``conversations.info``'s ``channel`` object ({} when Slack gives none)."""
        data = await self._call(
            "conversations.info", lambda: self.client.conversations_info(channel=channel)
        )
        found = data.get("channel")
        return found if isinstance(found, dict) else {}

    async def user_profile(self, user_id: str) -> Mapping[str, Any]:
        data = await self._call("users.info", lambda: self.client.users_info(user=user_id))
        user = data.get("user")
        return user if isinstance(user, dict) else {}


def display_name_of(user: Mapping[str, Any]) -> str:
    """The name Slack shows for a user: display name, else real name, else handle."""
    profile = user.get("profile")
    profile = profile if isinstance(profile, dict) else {}
    for value in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


class DisplayNames:
    """A small TTL cache of user display names; a failed lookup gives "" and is not cached."""

    def __init__(
        self,
        api: SlackWebApi,
        *,
        ttl_s: float,
        max_entries: int = 2048,
        lookup_timeout_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._ttl = ttl_s
        self._max = max_entries
        self._timeout = lookup_timeout_s
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()

    async def get(self, user_id: str) -> str:
        hit = self._entries.get(user_id)
        now = self._clock()
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            async with asyncio.timeout(self._timeout):
                name = display_name_of(await self._api.user_profile(user_id))
        except (ChannelError, TimeoutError) as exc:
            log.info("slack_user_lookup_failed", user=user_id, error=str(exc))
            return ""
        self._entries[user_id] = (now + self._ttl, name)
        self._entries.move_to_end(user_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return name
