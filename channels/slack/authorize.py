"""bolt told who the bot is, so that no event asks ``auth.test`` again.

With only a token, slack-bolt authorises every request by calling ``auth.test`` until one
call has succeeded, with no lock: a burst of queued events after a reconnect makes one call
per event, and an event whose call fails (``ratelimited`` in such a burst) has its listener
dropped. The adapter has asked ``auth.test`` once before bolt sees anything
(:meth:`channels.slack.adapter.SlackChannel.run`); :class:`KnownBot` hands bolt that answer
for every request, without a call. A different token means a new adapter, and a new answer.

bolt logs a warning when an app has both a client with a token and an ``authorize``: the
token is not ignored here (:class:`KnownBot` returns it), so :data:`TOKEN_SKIPPED` filters
that one line out.
"""

from __future__ import annotations

import logging

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.logger.messages import warning_token_skipped

from channels.slack.normalise import BotIdentity


class KnownBot(AsyncAuthorize):
    """Authorises every request as ``bot`` with ``token``, without a Web API call."""

    def __init__(self, bot: BotIdentity, token: str) -> None:
        self._bot = bot
        self._token = token

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult:
        # what bolt's single-team authorisation builds from auth.test's answer
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=self._bot.team_id or team_id,
            bot_user_id=self._bot.user_id,
            bot_id=self._bot.bot_id or None,
            bot_token=self._token,
            user_id=user_id,
        )


class _TokenSkipped(logging.Filter):
    """Drops bolt's "`token` will be ignored" warning, which is not true of :class:`KnownBot`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_token_skipped()


TOKEN_SKIPPED = _TokenSkipped()


def quiet_token_notice(logger: logging.Logger) -> None:
    """Add :data:`TOKEN_SKIPPED` to ``logger`` (bolt's app logger) once."""
    if TOKEN_SKIPPED not in logger.filters:
        logger.addFilter(TOKEN_SKIPPED)
