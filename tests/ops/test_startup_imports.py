"""What the daemon loads before READY, and how it settles after, and what a plain
``hatchway chat`` turn loads: checked in fresh interpreters, since this test process has long
imported everything."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.console.chat_process import chat_environ
from tests.fakes.openai_server import OpenAIFake

ROOT = Path(__file__).resolve().parents[2]
HATCHWAY = str(Path(sys.executable).with_name("hatchway"))

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
    print("young", gc.get_threshold())  # collected every 5,000 net new objects from then on
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
        if line.startswith(("before", "after", "young", "sdk", "stopped"))
    ]
    assert lines == [
        "before [] False",
        "after ['jsonschema', 'bot.providers.openai_compat'] True True",
        "young (5000, 10, 10)",
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


def test_the_chat_command_line_is_built_from_its_own_module_alone() -> None:
    """``hatchway chat`` builds the commands of ``bot.commands.run`` only (none of the
    others' modules, the doctor's checks among them), and its help reads the same as in the
    whole command line."""
    probe = textwrap.dedent(
        """
        import contextlib, io, sys
        import bot.cli

        def chat_help(parser):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                parser.parse_args(["chat", "--help"])
            return out.getvalue()

        sole = chat_help(bot.cli.build_parser("chat"))
        loaded = sorted(m for m in sys.modules if m.startswith("bot.commands."))
        print(loaded)
        print(sole == chat_help(bot.cli.build_parser()), "usage: hatchway chat" in sole)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.splitlines() == ["['bot.commands.run']", "True True"]


#: Packages a plain text turn has no use for, with where each one belongs.
HEAVY = {
    "PIL": "Pillow: decoding an image, in its own child process (bot/attachments/image_child.py)",
    "pypdf": "reading a PDF, in its own child process (bot/attachments/pdf_child.py)",
    "opentelemetry": "traces, only with [telemetry] on (bot/telemetry/setup.py)",
    "prometheus_client": "the daemon's /metrics (bot/metrics.py); hatchway chat has none",
    "jsonschema": "checking a tool call's arguments, at its first call (bot/tools/schema.py)",
    "xllamacpp": "the embedded model, only when it is the provider (bot/providers/llama_server.py)",
    "llama_cpp": "never imported by the project",
    "difflib": "a file change's diff, drawn when a person is asked (file_diff.py)",
    "anthropic": "the Anthropic provider, only when it is configured (bot/providers/anthropic.py)",
    "mcp": "MCP servers, only when one is configured (bot/mcp/)",
    "asyncpg": "PostgreSQL, only with a postgresql:// database (bot/store/postgres/)",
    "pocketsphinx": "offline transcription, in its own child (bot/transcription/embedded_child.py)",
}

#: What a plain ``hatchway chat`` (the console channel) has no use for either, though the
#: daemon loads it before READY: the platforms' client libraries.
NOT_IN_A_CHAT = {
    **HEAVY,
    "telegram": "the Telegram channel (python-telegram-bot), a daemon's",
    "slack_bolt": "the Slack channel, a daemon's",
    "slack_sdk": "the Slack channel, a daemon's",
    "discord": "the Discord channel (discord.py), a daemon's",
    "httpx": "python-telegram-bot's HTTP client, a daemon's",
    "aiohttp": "the provider's HTTP client for https:// or through a proxy (aiohttp_exchange.py; "
    "a plain http:// endpoint gets http1.py) and http_fetch's first fetch (page_fetch.py)",
    # the project's own parts a text turn never reaches, each imported at its first use
    "bot.transcription.chain": "transcribing a voice note, at the first one (voice.py)",
    "bot.attachments.reading": "reading a message's files, at its first file (ingest.py)",
    "bot.attachments.download": "downloading a message's files, at its first file (ingest.py)",
    "bot.replicas": "the replicas' leases, only with a postgresql:// database (wiring/replicas.py)",
    "bot.gateway.handover": "a session's turns among replicas, only with a postgresql:// database",
    "bot.commands.doctor": "hatchway doctor's checks: the chat's command line is built without",
    "html.parser": "a fetched page reduced to text, at http_fetch's first HTML page (html_text.py)",
}


def imported_modules(stderr: str) -> set[str]:
    """Every module named in ``PYTHONPROFILEIMPORTTIME``'s report (``import time: self |
    cumulative | name``), i.e. every module the process imported, from any thread."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.fixture(scope="module")
def chat_turn_imports(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules ``printf 'hello\\n' | hatchway chat`` imports: the installed console
    script, an OpenAI-compatible provider at the loopback fake, one plain answer."""
    folder = tmp_path_factory.mktemp("chat-imports")

    async def run() -> tuple[int, str, str]:
        async with OpenAIFake(model="gpt-4o-mini") as llm:
            llm.queue_text("Plain answer")
            env = chat_environ(folder / "state", llm_url=llm.base_url)
            env["PYTHONPROFILEIMPORTTIME"] = "1"
            proc = await asyncio.create_subprocess_exec(
                HATCHWAY,
                "chat",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=folder,
                env=env,
            )
            async with asyncio.timeout(120):  # a guard against hanging, not a figure
                out, err = await proc.communicate(b"hello\n")
            return proc.returncode or 0, out.decode(), err.decode()

    code, out, err = asyncio.run(run())
    assert code == 0, err[-2000:]
    assert "Plain answer" in out, out
    modules = imported_modules(err)
    # the report is really there (a turn ran through the App and the provider)
    assert {"bot.cli", "bot.app", "bot.providers.chat_client"} <= modules
    return modules


@pytest.mark.parametrize("package", sorted(NOT_IN_A_CHAT))
def test_a_plain_chat_turn_imports_nothing_heavy(chat_turn_imports: set[str], package: str) -> None:
    loaded = sorted(m for m in chat_turn_imports if m == package or m.startswith(f"{package}."))
    assert loaded == [], (
        f"{', '.join(loaded[:3])} loaded; {package} is for {NOT_IN_A_CHAT[package]}"
    )


def test_the_daemon_and_every_channel_module_load_nothing_heavy_but_the_metrics_client() -> None:
    """``hatchway run`` imports the daemon and its channels' modules before READY: of the
    heavy packages only the Prometheus client (its ``/metrics``) may come with them; each of
    the others is imported where it is used (see :data:`HEAVY`)."""
    probe = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        import bot.ops.daemon
        for name in ("channels.telegram", "channels.slack", "channels.discord"):
            package = importlib.import_module(name)
            for info in pkgutil.iter_modules(package.__path__):
                importlib.import_module(f"{{name}}.{{info.name}}")
        print(sorted(p for p in {sorted(HEAVY)!r} if p in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "['prometheus_client']"
