"""What the daemon loads before READY, and how it settles after: checked in a fresh
interpreter, since this test process has long imported everything."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import asyncio, gc, sys
    gc.disable()  # as `hatchway run` does before importing the daemon
    import bot.ops.daemon
    from bot.config import Settings
    from bot.providers.factory import defer_provider
    late = ("jsonschema", "bot.providers.openai_compat")
    print("before", [m for m in late if m in sys.modules], gc.isenabled())
    settings = Settings.model_validate({
        "agent": {"provider": "local"},
        "providers": {"local": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
    })
    asyncio.run(bot.ops.daemon._warm_up(defer_provider(settings, environ={})))
    print("after", [m for m in late if m in sys.modules], gc.isenabled(), gc.get_freeze_count() > 0)
    print("sdk", [m for m in ("openai", "httpx2") if m in sys.modules])  # not on the turn's path

    async def stopped_during_warm_up():
        gc.disable()
        task = asyncio.create_task(bot.ops.daemon._warm_up(defer_provider(settings, environ={})))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        print("stopped", gc.isenabled())

    asyncio.run(stopped_during_warm_up())
    """
)


def test_turn_libraries_load_after_ready_and_the_collector_comes_back_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = [
        line
        for line in done.stdout.splitlines()
        if line.startswith(("before", "after", "sdk", "stopped"))
    ]
    assert lines == [
        "before [] False",
        "after ['jsonschema', 'bot.providers.openai_compat'] True True",
        "sdk []",
        "stopped True",
    ]


def test_the_composition_root_leaves_the_metrics_client_to_the_daemon() -> None:
    """``hatchway chat`` builds an App without metrics: the Prometheus client (and the
    ``http.server`` it brings) is not loaded with ``bot.app``, only with the daemon."""
    probe = (
        "import sys, bot.app; print('prometheus_client' in sys.modules); "
        "import bot.ops.daemon; print('prometheus_client' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["False", "True"]


def test_the_command_line_is_built_without_the_config_models_or_the_tools() -> None:
    """``hatchway --help`` (and every command before its handler runs) builds the parser by
    importing each command's module: none of them may load pydantic, the config models, the
    store or the built-in tools at import (about 0.15 s and 15 MB)."""
    probe = (
        "import sys, bot.cli; bot.cli.build_parser(); heavy = "
        "('pydantic', 'bot.config', 'bot.store', 'bot.tools.builtin', 'aiohttp', 'structlog'); "
        "print([m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "[]"
