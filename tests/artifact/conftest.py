"""Fixtures of the artifact smoke (marker ``artifact``; ``scripts/artifact_smoke.py`` runs
it, and ``.ci/run``'s artifact stage runs that).

``installed`` is the wheel's venv or the image (:mod:`tests.artifact.installed`); without
either named the tests fail, saying how to build one. ``place`` is a temporary working
folder with a config file and a state folder, outside the source tree. The fakes are the
ones every other test uses, on loopback.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from tests.artifact.installed import (
    IMAGE_ENV,
    IMAGE_UID,
    VENV_ENV,
    Installed,
    Place,
    from_environment,
)
from tests.fakes.telegram_server import FakeTelegram
from tests.reliability.routed_llm import RoutedOpenAI

TOKEN = "616163:AAartifact-smoke-token-for-the-fake-api"
LLM_KEY = "zq7-artifact-model-key-2b9d"


@pytest.fixture(scope="session")
def installed() -> Installed:
    found = from_environment()
    if found is None:
        pytest.fail(
            f"the artifact smoke runs against an installed wheel ({VENV_ENV}) or an image "
            f"({IMAGE_ENV}): run it with `python scripts/artifact_smoke.py` (add --image for "
            "the container image)",
            pytrace=False,
        )
    return found


@pytest.fixture
def place(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Place:
    """A working folder outside the checkout, with ``hatchway.toml`` and ``state/`` (owned
    by the image's user when the image runs, as docs/operations.md has it)."""
    root = tmp_path_factory.mktemp("smoke")
    state = root / "state"
    state.mkdir(mode=0o750)
    if installed.in_image:
        os.chown(state, IMAGE_UID, IMAGE_UID)
    return Place(config=root / "hatchway.toml", state=state)


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake
