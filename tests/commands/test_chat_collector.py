"""``hatchway chat`` turns the cyclic collector off while its modules and settings load
(bot.commands.run._chat): whatever happens, it is back on when the command returns."""

from __future__ import annotations

import argparse
import asyncio
import gc
from pathlib import Path

import pytest

from bot.commands.run import _chat
from bot.errors import ConfigError


def test_a_chat_that_cannot_start_leaves_the_collector_on(tmp_path: Path) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text("[agent]\nno_such_key = 1\n", encoding="utf-8")
    args = argparse.Namespace(config=str(config), state_dir=str(tmp_path), verbose=False)
    assert gc.isenabled()
    try:
        with pytest.raises(ConfigError, match="no_such_key"):
            asyncio.run(_chat(args))
        assert gc.isenabled()
    finally:
        gc.enable()
