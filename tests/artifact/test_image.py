"""The container image itself (run by ``scripts/artifact_smoke.py --image``; skipped against
the venv): its health check, the shell sandbox inside it, a secret given as a podman secret,
and two replicas as two containers over the host's PostgreSQL.

Every container runs with a read-only root file system and the host's network
(:mod:`tests.artifact.installed`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.artifact.conftest import LLM_KEY, TOKEN
from tests.artifact.installed import IMAGE_UID, Installed, Place, podman_run
from tests.artifact.test_smoke import OWNER, SECRETS, stop, write_config
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, DaemonProcess
from tests.pg import PgServer, free_port
from tests.reliability.routed_llm import RoutedOpenAI
from tests.tools.workspace_files import files_named

pytestmark = pytest.mark.artifact

SANDBOX_OPTION = "unmask=/proc/*"


@pytest.fixture
def image(installed: Installed) -> str:
    if not installed.in_image:
        pytest.skip("runs against the image (scripts/artifact_smoke.py --image)")
    return installed.image


def health_url(port: int) -> dict[str, str]:
    return {"HATCHWAY_HEALTH_URL": f"http://127.0.0.1:{port}/healthz"}


def test_the_image_keeps_its_health_check_user_and_volume(image: str) -> None:
    [inspected] = json.loads(podman_run("image", "inspect", image).stdout)
    config = inspected["Config"]
    test = inspected["Healthcheck"]["Test"]  # kept by --format docker; the OCI format drops it
    assert test[0] == "CMD" and "HATCHWAY_HEALTH_URL" in " ".join(test)
    assert config["User"] == "hatchway"
    assert list(config["Volumes"]) == ["/var/lib/hatchway"]
    assert "HATCHWAY_STATE_DIR=/var/lib/hatchway" in config["Env"]


async def test_health_check_passes_on_a_running_daemon(
    installed: Installed, image: str, place: Place, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    port = free_port()
    write_config(place, tg=tg, llm=llm, port=port)
    name = f"hatchway-health-{uuid.uuid4().hex[:8]}"
    async with installed.daemon(place, extra={**SECRETS, **health_url(port)}, name=name) as daemon:
        await daemon.wait_event("daemon_ready")
        done = await asyncio.to_thread(podman_run, "healthcheck", "run", name, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        await stop(daemon)


@pytest.fixture
def secret() -> Iterator[str]:
    """The model's key as a podman secret, created from a file and handed over as a variable."""
    name = f"hatchway-llm-key-{uuid.uuid4().hex[:8]}"
    subprocess.run(["podman", "secret", "create", name, "-"], input=LLM_KEY, text=True, check=True)
    try:
        yield name
    finally:
        subprocess.run(["podman", "secret", "rm", name], check=False, capture_output=True)


async def test_doctor_names_the_option_the_sandbox_needs_and_the_shell_runs_in_it(
    installed: Installed,
    image: str,
    place: Place,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    secret: str,
) -> None:
    write_config(place, tg=tg, llm=llm, port=free_port(), auto_approve=("shell",))
    key = ["--secret", f"{secret},type=env,target=SMOKE_LLM_KEY"]
    llm.route_text("ping", "pong")
    llm.route_text("ping", "pong")
    refused = await installed.arun(place, ["doctor"], extra={"SMOKE_TG_TOKEN": TOKEN}, options=key)
    assert "⚠ shell sandbox" in refused.stdout, refused.stdout
    assert f"--security-opt {SANDBOX_OPTION}" in refused.stdout, refused.stdout
    sandboxed = ["--security-opt", SANDBOX_OPTION]
    works = await installed.arun(
        place,
        ["doctor"],
        extra={"SMOKE_TG_TOKEN": TOKEN},
        options=[*sandboxed, *key],
    )
    assert works.returncode == 0, works.stdout + works.stderr
    assert "✓ shell sandbox: bubblewrap" in works.stdout, works.stdout

    # the database is in the container's state folder; the sandbox hides it (and shows only
    # the conversation's own workspace folder)
    probe = (
        "test -e /var/lib/hatchway/hatchway.db && echo visible > seen.txt || echo hidden > seen.txt"
    )
    llm.route_tools("q-shell", [("shell", {"command": probe})])
    llm.route_text("q-shell", "A-shell")
    async with installed.daemon(
        place,
        extra={"SMOKE_TG_TOKEN": TOKEN},
        options=[*sandboxed, *key],
    ) as daemon:
        await daemon.wait_event("daemon_ready")
        sandbox = await daemon.wait_event("shell_sandbox")
        assert sandbox["program"] == "/usr/bin/bwrap"
        await tg.push(
            {"message": message(private_chat(OWNER), user(OWNER, "Owner"), "q-shell", message_id=1)}
        )
        await tg.wait_for("sendMessage", lambda c: c.params.get("text") == "A-shell", wait_s=WAIT_S)
        await stop(daemon)
    assert (place.state / "hatchway.db").is_file()
    [seen] = files_named(place.state / "workspace", "seen.txt")
    assert seen.read_text(encoding="utf-8").strip() == "hidden"
    assert LLM_KEY not in json.dumps(daemon.events)


async def replica_ready(daemon: DaemonProcess) -> None:
    await daemon.wait_event("daemon_ready")
    status, body = await daemon.get("/readyz")
    assert status == 200, body


async def test_two_replicas_as_two_containers_over_the_hosts_postgres(
    installed: Installed,
    image: str,
    tmp_path: Path,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    pg_server: PgServer,
    pg_empty_url: str,
) -> None:
    places = []
    for replica in ("a", "b"):
        state = tmp_path / replica / "state"
        state.mkdir(parents=True)
        state.chmod(0o750)
        os.chown(state, IMAGE_UID, IMAGE_UID)
        place = Place(config=tmp_path / replica / "hatchway.toml", state=state)
        write_config(
            place,
            tg=tg,
            llm=llm,
            port=free_port(),
            storage=f'\n[storage]\nurl = "{pg_empty_url}"\n',
        )
        places.append(place)
    llm.route_text("q-one", "A-one")
    async with (
        installed.daemon(places[0], extra=SECRETS) as first,
        installed.daemon(places[1], extra=SECRETS) as second,
    ):
        await asyncio.gather(replica_ready(first), replica_ready(second))
        await tg.push(
            {"message": message(private_chat(OWNER), user(OWNER, "Owner"), "q-one", message_id=1)}
        )
        await tg.wait_for("sendMessage", lambda c: c.params.get("text") == "A-one", wait_s=WAIT_S)
        first.signal(signal.SIGTERM)
        second.signal(signal.SIGTERM)
        assert await first.wait_exit() == 0
        assert await second.wait_exit() == 0
    answers = [c for c in tg.calls_of("sendMessage") if c.params.get("text") == "A-one"]
    assert len(answers) == 1
    joined = [e for d in (first, second) for e in d.events if e.get("event") == "replica_joined"]
    assert len(joined) == 2
    pollers = [
        e
        for d in (first, second)
        for e in d.events
        if e.get("event") == "lease_taken" and e.get("lease") == "telegram.main.poll"
    ]
    assert pollers, [e for d in (first, second) for e in d.events if "lease" in str(e)]
