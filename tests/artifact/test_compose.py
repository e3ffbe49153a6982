"""``compose.yaml`` (a team's hatchway: PostgreSQL and two replicas) follows the Compose
Specification and keeps what docs/operations.md ("Containers") promises of it.

``compose-spec.json`` is the specification's JSON schema, copied from
github.com/compose-spec/compose-spec (``schema/compose-spec.json`` at commit 1700982,
2026-06-23; Apache License 2.0); nothing is downloaded at test time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

pytestmark = pytest.mark.artifact

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
REPLICAS = ("hatchway-a", "hatchway-b")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def test_it_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads((HERE / "compose-spec.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(compose)


def test_two_replicas_share_postgres_and_keep_a_state_volume_each(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", *REPLICAS}
    states = []
    for name in REPLICAS:
        service = services[name]
        assert service["read_only"] is True
        assert service["depends_on"] == ["postgres"]
        assert "unmask=/proc/*" in service["security_opt"]
        assert service["stop_grace_period"] == "75s"
        mounts = {m.split(":")[1]: m.split(":")[0] for m in service["volumes"]}
        assert mounts["/etc/hatchway/hatchway.toml"] == "./hatchway.toml"
        states.append(mounts["/var/lib/hatchway"])
    assert len(set(states)) == 2 and all(s in compose["volumes"] for s in states)
    ports = [services[name]["ports"][0] for name in REPLICAS]
    assert len(set(ports)) == 2


def test_no_secret_is_written_in_it() -> None:
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    assert "PASSWORD:" not in text.replace("PASSWORD_FILE:", "")
