"""Execution: one handler call with its timeout and retries — the per-call boundary.

This is the one place (besides the gateway's per-envelope boundary) that catches
``Exception``: whatever a handler raises becomes an outcome value. ``ToolEnvironmentError``
becomes ENV_ERROR, anything else EXECUTED (failed) as ``ClassName: message``.
``CancelledError`` is never swallowed.

Retries: only for ``retry_safe`` tools and only for transient OS errors raised by the
handler (EBUSY, EAGAIN, EMFILE, ENFILE); at most two more attempts after 200 ms and 400 ms;
a cancel during the backoff stops them (INTERRUPTED, not "before launch": it already ran).
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from bot.tools.call import PreparedCall
from bot.tools.cancellation import CancelSignal, unless_cancelled
from bot.tools.outcome import (
    ToolOutcome,
    environment_error,
    executed,
    failed,
    interrupted,
)
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolHandler, ToolOutput

log = structlog.get_logger(__name__)

TRANSIENT_ERRNOS = frozenset({errno.EBUSY, errno.EAGAIN, errno.EMFILE, errno.ENFILE})


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Backoff delays of the extra attempts (their count is ``len(delays)``)."""

    delays: tuple[float, ...] = (0.2, 0.4)
    errnos: frozenset[int] = TRANSIENT_ERRNOS


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """Everything one handler call needs."""

    call_id: str
    tool: str
    handler: ToolHandler
    arguments: Mapping[str, object]
    context: ToolContext
    timeout_s: float
    retry_safe: bool

    @classmethod
    def of(
        cls, call: PreparedCall, context: ToolContext, *, default_timeout_s: float
    ) -> Invocation:
        """The invocation of a prepared call: its tool's own timeout, else the default."""
        spec = call.spec
        return cls(
            call_id=call.call_id,
            tool=spec.name,
            handler=call.entry.handler,
            arguments=call.arguments,
            context=context,
            timeout_s=spec.timeout_s or default_timeout_s,
            retry_safe=spec.retry_safe,
        )


class ToolTimeoutError(Exception):
    """A handler outlived its tool timeout (reported as a failed execution)."""


async def execute(
    invocation: Invocation,
    *,
    cancel: CancelSignal,
    retry: RetryPolicy,
    clock: Callable[[], float] = time.perf_counter,
) -> ToolOutcome:
    """Run the handler; never raises except ``CancelledError``."""
    started = clock()
    attempt = 0
    while True:
        try:
            result = await _attempt(invocation)
        except OSError as exc:
            transient = exc.errno in retry.errnos
            if invocation.retry_safe and transient and attempt < len(retry.delays):
                delay = retry.delays[attempt]
                attempt += 1
                log.info("tool_call_retrying", tool=invocation.tool, attempt=attempt, delay_s=delay)
                if await _backoff(delay, cancel):
                    continue
                return interrupted(
                    call_id=invocation.call_id, tool=invocation.tool, before_launch=False
                )
            return _failure(invocation, exc, clock() - started)
        except Exception as exc:  # the per-call boundary: everything becomes an outcome
            return _failure(invocation, exc, clock() - started)
        duration = clock() - started
        if isinstance(result, ToolOutput):
            return executed(
                call_id=invocation.call_id,
                tool=invocation.tool,
                text=result.text,
                duration_s=duration,
                paths=result.paths,
                images=result.images,
                failure=result.failure,
            )
        return executed(
            call_id=invocation.call_id, tool=invocation.tool, text=str(result), duration_s=duration
        )


async def _attempt(invocation: Invocation) -> str | ToolOutput:
    try:
        async with asyncio.timeout(invocation.timeout_s) as scope:
            return await invocation.handler(invocation.arguments, invocation.context)
    except TimeoutError:
        if scope.expired():
            raise ToolTimeoutError(
                f"{invocation.tool} did not finish within {invocation.timeout_s:g}s"
            ) from None
        raise


async def _backoff(delay: float, cancel: CancelSignal) -> bool:
    """Sleep ``delay`` unless cancelled first; ``True`` when the retry may go ahead."""
    return await unless_cancelled(asyncio.sleep(delay, True), cancel) is True


def _failure(invocation: Invocation, exc: Exception, duration: float) -> ToolOutcome:
    log.info(
        "tool_handler_raised",
        tool=invocation.tool,
        call_id=invocation.call_id,
        error_type=type(exc).__name__,
    )
    if isinstance(exc, ToolEnvironmentError):
        return environment_error(
            call_id=invocation.call_id, tool=invocation.tool, error=exc, duration_s=duration
        )
    return failed(call_id=invocation.call_id, tool=invocation.tool, error=exc, duration_s=duration)
