"""The Slack adapter alone in a process of its own, for a test that kills it at a crash
point (:mod:`bot.crashpoints`): Socket Mode against the loopback fake at ``api_base_url``,
its store the SQLite file at ``path``, and a host that only records.

    python -m tests.channels.slack.adapter_process <api_base_url> <path>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.store import Store
from channels.slack.adapter import SlackChannel, SlackCredentials
from channels.slack.config import SlackChannelConfig
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_setup import APP_TOKEN, BOT_TOKEN, REF


async def main(api_base_url: str, path: Path) -> None:
    config = SlackChannelConfig.model_validate(
        {"api_base_url": api_base_url, "allowed_users": ["*"]}
    )
    credentials = SlackCredentials(bot_token=BOT_TOKEN, app_token=APP_TOKEN)
    async with await Store.open(path) as store:
        channel = SlackChannel(ref=REF, config=config, credentials=credentials, store=store)
        await channel.run(RecordingHost())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
