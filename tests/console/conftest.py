"""The console tests' LLM: the ops tests' OpenAI fake that can hold an answer back."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.ops.conftest import HeldOpenAI


@pytest.fixture
async def llm() -> AsyncIterator[HeldOpenAI]:
    fake = HeldOpenAI()
    async with fake:
        yield fake
        fake.release()
