"""Answers to a slash command, shown only to the person who typed it.

Slack shows a slash command to nobody but the person who typed it, so its answer is private
too: every answer to a ``/hatchway`` command (``/id``, ``/help``, "Nothing is running.", which
turns ``/stop`` stopped, the new session of ``/new``) is an ephemeral message. What others
need to see shows where it happens: a stopped turn's thread says it stopped.

The answer goes to the payload's ``response_url`` (``response_type: ephemeral``), which works
where the bot is no member (a channel it was never invited to, a DM between two people) and
which Slack honours five times within thirty minutes. The URL is used only when it is on
Slack's own hosts, judged against ``api_base_url`` (``https://slack.com/api/`` allows
``https://hooks.slack.com`` and ``https://slack.com``; same scheme and port), so a forged
payload cannot make the daemon post anywhere; it is kept in memory, bounded, and never
logged. Without a usable URL (refused, expired, used up, or a failed post) the answer falls
back to ``chat.postEphemeral`` to the user in that channel, which needs the bot to be a member.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
import structlog
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.envelope import ChannelRef, DeliveryTarget
from channels.slack.api import SlackWebApi
from channels.slack.commands import slash_user

log = structlog.get_logger(__name__)

#: Slack accepts this many posts to one response URL, within this many seconds.
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL_S = 30 * 60
_POST_TIMEOUT_S = 10


def response_url_allowed(url: str, api_base_url: str) -> bool:
    """Whether ``url`` is on Slack's hosts: the Web API's host or ``hooks.`` before it, with
    the API's scheme and port, and no credentials in it."""
    try:
        api, target = urlsplit(api_base_url), urlsplit(url)
        api_port, target_port = api.port, target.port
    except ValueError:
        return False
    host = api.hostname
    if not host or target.scheme not in ("https", "http") or target.scheme != api.scheme:
        return False
    if target.username is not None or target.password is not None:
        return False
    return target.hostname in (host, f"hooks.{host}") and target_port == api_port


@dataclass(slots=True)
class _ResponseUrl:
    url: str
    expires_at: float
    uses_left: int = RESPONSE_URL_USES


class CommandReplies:
    """Sends the answers to slash commands (see the module docstring)."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        api: SlackWebApi,
        api_base_url: str,
        size: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ref = ref
        self._api = api
        self._api_base_url = api_base_url
        self._size = size
        self._clock = clock
        self._urls: OrderedDict[str, _ResponseUrl] = OrderedDict()

    @staticmethod
    def answers(target: DeliveryTarget) -> bool:
        """Whether ``target`` is a slash command's, to be answered here."""
        return slash_user(target.reply_to_message_id) is not None

    def remember(self, message_id: str, response_url: str) -> None:
        """Keep the response URL of the slash command ``message_id``, if it is Slack's."""
        if not response_url:
            return
        if not response_url_allowed(response_url, self._api_base_url):
            host = _host_of(response_url)
            log.warning("slack_response_url_refused", channel=str(self._ref), host=host)
            return
        expires_at = self._clock() + RESPONSE_URL_TTL_S
        self._urls[message_id] = _ResponseUrl(url=response_url, expires_at=expires_at)
        while len(self._urls) > self._size:
            self._urls.popitem(last=False)

    async def send(self, target: DeliveryTarget, chunks: Sequence[str]) -> None:
        """Post each chunk privately to the user who typed the command."""
        message_id = target.reply_to_message_id or ""
        user = slash_user(message_id)
        if user is None:
            raise ValueError("not a slash command's reply target")
        for chunk in chunks:
            if await self._post_to_response_url(message_id, chunk):
                continue
            await self._api.post_ephemeral(
                channel=target.conversation_id, user=user, text=chunk, thread_ts=target.thread_id
            )

    async def _post_to_response_url(self, message_id: str, text: str) -> bool:
        entry = self._urls.get(message_id)
        if entry is None:
            return False
        if entry.uses_left <= 0 or entry.expires_at <= self._clock():
            self._urls.pop(message_id, None)
            return False
        entry.uses_left -= 1
        client = AsyncWebhookClient(
            entry.url,
            timeout=_POST_TIMEOUT_S,
            session=self._api.client.session,
            retry_handlers=[],
        )
        try:
            response = await client.send(text=text, response_type="ephemeral")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.warning(
                "slack_response_url_failed", channel=str(self._ref), error=type(exc).__name__
            )
            return False
        if response.status_code != 200:
            # Slack answers an expired or used-up URL with 404 and a word ("expired_url").
            log.warning(
                "slack_response_url_failed",
                channel=str(self._ref),
                status=response.status_code,
                error=response.body[:60],
            )
            self._urls.pop(message_id, None)
            return False
        return True


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""
