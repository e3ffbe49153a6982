"""nanobot's side of ``bench/peers.py``: many conversations at once through nanobot's own
programmatic interface, run with the interpreter of the venv nanobot-ai is installed in (it
imports nothing of this project).

``nanobot.Nanobot.from_config(config)`` builds the same ``AgentLoop`` its gateway runs
(tools, sessions saved in the workspace, memory files); ``Nanobot.run(text,
session_key=...)`` is one turn of one conversation, the call the gateway's channels end in
(``AgentLoop.process_direct``). ``--conversations`` turns, each in its own session, are
started at once with ``asyncio.gather``, after ``--warmup`` turns that are not measured.
Logging is set as ``nanobot gateway`` sets it (loguru, INFO, to stderr: the caller sends
stderr to /dev/null, so the cost is counted). Prints one JSON object.

    /tmp/peers-venv/bin/python bench/peer_nanobot.py --config CONFIG.json
        [--conversations 100] [--warmup 10] [--text TEXT]

``--smoke`` only says whether this interpreter can import nanobot (the smoke run of
``bench/peers.py`` leaves nanobot out: it is not the project's, and installing it takes
longer than a smoke run may).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import resource
import sys
import time


def configure_logging() -> None:
    logger = importlib.import_module("loguru").logger
    logger.remove()
    logger.add(sys.stderr, level="INFO")


async def burst(bot: object, texts: list[tuple[str, str]]) -> list[str]:
    runs = [bot.run(text, session_key=key) for key, text in texts]  # type: ignore[attr-defined]
    results = await asyncio.gather(*runs)
    return [str(r.content or "") for r in results]


async def main(args: argparse.Namespace) -> dict[str, object]:
    nanobot = importlib.import_module("nanobot")
    configure_logging()
    bot = nanobot.Nanobot.from_config(args.config)
    try:
        if args.warmup:
            await burst(bot, [(f"bench:w{n}", args.text) for n in range(args.warmup)])
        keys = [(f"bench:c{n}", args.text) for n in range(args.conversations)]
        cpu0 = time.process_time()
        started = time.perf_counter()
        answers = await burst(bot, keys)
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu0
    finally:
        await bot.aclose()
    return {
        "turns": len(answers),
        "answers": sorted(set(answers)),
        "wall_s": wall,
        "turns_per_s": len(answers) / wall,
        "cpu_ms_per_turn": cpu / len(answers) * 1000,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="nanobot's config.json (required but with --smoke)")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--text", default="hello")
    parser.add_argument("--smoke", action="store_true", help="only check nanobot is importable")
    arguments = parser.parse_args()
    if arguments.smoke:
        found = importlib.util.find_spec("nanobot") is not None
        print(
            f"nanobot {'can' if found else 'cannot'} be imported by {sys.executable}: "
            "skipped (its turns are measured by bench/peers.py, in nanobot's own venv)"
        )
    elif arguments.config is None:
        parser.error("--config is required")
    else:
        print(json.dumps(asyncio.run(main(arguments))), flush=True)
