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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time


def configure_logging() -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="INFO")


async def burst(bot: object, texts: list[tuple[str, str]]) -> list[str]:
    runs = [bot.run(text, session_key=key) for key, text in texts]  # type: ignore[attr-defined]
    results = await asyncio.gather(*runs)
    return [str(r.content or "") for r in results]


async def main(args: argparse.Namespace) -> dict[str, object]:
    from nanobot import Nanobot

    configure_logging()
    bot = Nanobot.from_config(args.config)
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
    parser.add_argument("--config", required=True)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--text", default="hello")
    print(json.dumps(asyncio.run(main(parser.parse_args()))), flush=True)
