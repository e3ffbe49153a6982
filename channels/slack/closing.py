"""Closing the Socket Mode connection without dropping what Slack sent in the meantime.

aiohttp's ``ClientWebSocketResponse.close()`` sends the Close frame, then reads until the
server's Close and discards the data frames in between. Slack may have put an event on the wire
at that very moment: discarded unread, it comes again only after Slack's 3 second ack limit,
over another connection, by which time a newer message of its conversation may have reached
another replica and been answered first. RFC 6455 (section 5.5.1) lets an endpoint that sent
its Close go on processing data until the peer's Close arrives, so the stop here sends the
Close frame itself (:meth:`ClosingSocketHandler.begin_close`) and leaves the SDK's receive loop
reading: every envelope that arrives before Slack's Close goes through the listeners, and a
message event is stored like any other, in the order it came.

Its ack is withheld: no data frame may follow a Close frame (and the peer discards one that
does), so Slack sends the event again (over another connection) and the inbox drops that copy
as a redelivery, while the copy stored here keeps the event's place. An ack that cannot be sent
because the connection went away is logged, not raised into the SDK (which would log a
traceback).
"""

from __future__ import annotations

import struct
import time

import aiohttp
import structlog
from aiohttp import ClientWebSocketResponse, WSCloseCode, WSMsgType
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

log = structlog.get_logger(__name__)

#: The payload of a normal Close frame: status code 1000, no reason.
_CLOSE_NORMAL = struct.pack("!H", WSCloseCode.OK)


class ClosingSocketHandler(AsyncSocketModeHandler):
    """bolt's Socket Mode handler, able to close its connection the way the module describes:
    once :meth:`begin_close` sent the Close frame, an envelope's listeners still run, and its
    ack is not sent."""

    _closing = False

    @property
    def closing(self) -> bool:
        """True once this side sent its Close frame."""
        return self._closing

    async def begin_close(self) -> ClientWebSocketResponse | None:
        """Send the Close frame and return the connection, which stays readable until the
        server answers with its own Close; ``None`` when there is no open connection."""
        session = self.client.current_session
        if session is None or session.closed:
            return None
        self._closing = True
        try:
            await session.send_frame(_CLOSE_NORMAL, WSMsgType.CLOSE)
        except (ConnectionError, aiohttp.ClientError) as exc:
            log.info("slack_socket_close_not_sent", error=type(exc).__name__)
            return None
        return session

    async def handle(self, client: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:
        """Run the app's listeners for one envelope, then acknowledge it (bolt's own
        ``handle``), unless the Close frame went out meanwhile."""
        start = time.time()
        response = await run_async_bolt_app(self.app, req)
        if self._closing:
            log.info("slack_ack_withheld_after_close", envelope_id=req.envelope_id)
            return
        try:
            await send_async_response(client, req, response, start)
        except (ConnectionError, aiohttp.ClientError) as exc:
            # the connection went away: Slack sends the envelope again
            log.info("slack_ack_not_sent", envelope_id=req.envelope_id, error=type(exc).__name__)
