"""How the doctor talks to remote endpoints: one HTTP session, lenient JSON bodies.

Every remote check shares one ``aiohttp`` session whose requests time out after
:data:`HTTP_TIMEOUT_S`. A body that is not a JSON object reads as ``{}``, so a check decides
from the status code and never fails on an unexpected body. ``aiohttp`` is imported when the
doctor runs, not when ``hatchway --help`` builds the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

HTTP_TIMEOUT_S = 15.0


def open_session() -> aiohttp.ClientSession:
    """The session the remote checks share (use it as an async context manager)."""
    import aiohttp

    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT_S))


async def json_object(response: aiohttp.ClientResponse) -> dict[str, Any]:
    """The response body as a JSON object, or ``{}`` when it is anything else."""
    try:
        body = await response.json(content_type=None)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
