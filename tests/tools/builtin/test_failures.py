"""A call that ran and failed carries a structured failure (kind and code), set by the tool or
by its handler raising, never read back from the text: ``shell``'s non-zero exit,
``http_fetch``'s status of 400 or more and its transport errors, any handler that raised.
Each is run through the real execution boundary, and its progress line says it failed."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping

import pytest
from aiohttp import web

from bot.agent.turn import CancelToken
from bot.config import HttpFetchToolConfig, ShellToolConfig
from bot.progress import finished_line
from bot.tools.builtin.http_fetch import http_fetch_tool
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.execution import Invocation, RetryPolicy, execute
from bot.tools.outcome import OutcomeStatus, ToolOutcome, progress_reason
from bot.tools.spec import FailureKind, ToolContext, ToolFailure, ToolHandler, ToolResult
from tests.fakes.loopback import serve_loopback


async def run(
    handler: ToolHandler | None, arguments: Mapping[str, object], context: ToolContext
) -> ToolOutcome:
    assert handler is not None
    invocation = Invocation(
        call_id="c1",
        tool="t",
        handler=handler,
        arguments=arguments,
        context=context,
        timeout_s=60.0,
        retry_safe=False,
    )
    return await execute(invocation, cancel=CancelToken(), retry=RetryPolicy())


def line(outcome: ToolOutcome) -> str:
    return finished_line(
        "t", ok=outcome.ok, duration_s=outcome.duration_s, reason=progress_reason(outcome)
    )


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async def status(request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text="the page says so")

    app = web.Application()
    app.router.add_get("/status/{code}", status)
    async with serve_loopback(app) as served:
        yield served.origin


@pytest.mark.parametrize(
    ("command", "failure"),
    [
        ("echo fine", None),
        ("echo no >&2; exit 1", ToolFailure(kind=FailureKind.EXIT_CODE, code=1)),
        ("exit 127", ToolFailure(kind=FailureKind.EXIT_CODE, code=127)),
        # the word "exit code 0" in the output changes nothing: the code is a field
        ("echo 'exit code 0'; false", ToolFailure(kind=FailureKind.EXIT_CODE, code=1)),
    ],
)
async def test_shell_exit_code(
    workspace: Workspace, context: ToolContext, command: str, failure: ToolFailure | None
) -> None:
    spec = shell_tool(workspace, ShellToolConfig.model_validate({"sandbox": "none"}))
    outcome = await run(spec.handler, {"command": command}, context)
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.failure == failure
    assert outcome.ok is (failure is None) and outcome.returned
    if failure is None:
        assert line(outcome).startswith("✅ t (")
    else:
        assert line(outcome).startswith("❌ t (") and line(outcome).endswith(
            f"`exit {failure.code}`"
        )
        assert outcome.observation.startswith(f"exit code {failure.code}\n")  # the model sees it


@pytest.mark.parametrize("code", [200, 399, 400, 404, 500, 503])
async def test_http_status(site: str, context: ToolContext, code: int) -> None:
    spec = http_fetch_tool(HttpFetchToolConfig.model_validate({"allow_hosts": ["127.0.0.1"]}))
    outcome = await run(spec.handler, {"url": f"{site}/status/{code}"}, context)
    assert outcome.status is OutcomeStatus.EXECUTED
    assert "the page says so" in outcome.observation  # an error page is still shown
    if code < 400:
        assert outcome.ok and outcome.failure is None and line(outcome).startswith("✅")
    else:
        assert outcome.failure == ToolFailure(kind=FailureKind.HTTP_STATUS, code=code)
        assert line(outcome).endswith(f"`HTTP {code}`") and not outcome.ok


async def test_http_transport_error_is_a_raised_failure(context: ToolContext) -> None:
    with socket.socket() as held:  # a port nobody listens on
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
    spec = http_fetch_tool(HttpFetchToolConfig.model_validate({"allow_hosts": ["127.0.0.1"]}))
    outcome = await run(spec.handler, {"url": f"http://127.0.0.1:{port}/"}, context)
    assert outcome.failure == ToolFailure(kind=FailureKind.RAISED, error="ToolFailed")
    assert not outcome.returned and line(outcome).endswith("`ToolFailed`")


async def test_any_handler_that_raised_failed(context: ToolContext) -> None:
    async def broken(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise KeyError("missing")

    outcome = await run(broken, {}, context)
    assert outcome.failure == ToolFailure(kind=FailureKind.RAISED, error="KeyError")
    assert outcome.failed and not outcome.ok and "✅" not in line(outcome)


def test_labels() -> None:
    assert ToolFailure(kind=FailureKind.EXIT_CODE, code=-9).label == "exit -9"
    assert ToolFailure(kind=FailureKind.HTTP_STATUS, code=418).label == "HTTP 418"
    assert ToolFailure(kind=FailureKind.RAISED, error="McpCallFailed").label == "McpCallFailed"
    assert ToolFailure(kind=FailureKind.RAISED).label == "error"
