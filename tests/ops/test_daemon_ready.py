"""``daemon_ready`` names the provider in use, from a real ``hatchway run`` process."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.ops.conftest import HeldOpenAI, write_config
from tests.ops.daemon_process import USER, start_daemon


async def test_daemon_ready_names_provider_model_endpoint_and_tool_mode(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    config = write_config(
        tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=[USER], server=False
    )
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        ready = await daemon.wait_event("daemon_ready")
        located = await daemon.wait_event("state_location")
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    assert ready["status"] == "ready: 1 channel"
    assert {k: ready.get(k) for k in ("provider", "provider_kind", "model", "endpoint")} == {
        "provider": "default",
        "provider_kind": "openai",
        "model": "gpt-4o-mini",
        "endpoint": llm.base_url,
    }
    assert ready["tool_mode"] == "native"
    # where the state is, and why there, said once at start
    assert located["folder"] == str(tmp_path)
    assert located["source"] == f"the default: the folder of {config}"
    assert "fallback" not in ready
