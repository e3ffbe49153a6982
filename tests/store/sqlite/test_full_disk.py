"""A disk that fills up while the schema is migrated: the error names the real cause.

SQLite rolls a transaction back by itself when its ``COMMIT`` finds the disk full; an
explicit ``ROLLBACK`` after that fails with "cannot rollback - no transaction is active",
which used to be the only thing the operator saw. The disk here is real: a small tmpfs in a
mount namespace of the test's own (``unshare``), filled up to a few kilobytes, then to more,
so that the space runs out in different migrations.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.store.sqlite.schema import migrations
from tests.store.sqlite.full_disk import MARK

ROOT = Path(__file__).resolve().parents[3]
FULL = "disk is full"  # SQLite's "database or disk is full", or an I/O error's cause
FREE_BYTES = (16_384, 65_536, 131_072, 204_800, 307_200, 409_600, 614_400)


def in_namespace(
    tmp_path: Path, script: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) as root of a new user and mount namespace, where it may mount."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("util-linux's unshare is needed to mount a small tmpfs", pytrace=False)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HATCHWAY_", "OPENAI_", "ANTHROPIC_", "NOTIFY_SOCKET"))
    }
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", "sh", "-euc", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
        check=False,
    )
    if "mount:" in done.stderr and done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs in a namespace: {done.stderr}", pytrace=False)
    return done


def tmpfs(folder: Path) -> str:
    return f"mkdir -p {folder} && mount -t tmpfs -o size=4m tmpfs {folder}"


def test_a_migration_that_fills_the_disk_says_so_and_leaves_the_file_usable(
    tmp_path: Path,
) -> None:
    places = [tmp_path / f"d{free}" for free in FREE_BYTES]
    script = " && ".join(tmpfs(place) for place in places)
    args = " ".join(f"{place}:{free}" for place, free in zip(places, FREE_BYTES, strict=True))
    done = in_namespace(
        tmp_path, f"{script} && exec {sys.executable} -m tests.store.sqlite.full_disk {args}"
    )
    assert done.returncode == 0, done.stderr
    results = [
        json.loads(line.removeprefix(MARK))
        for line in done.stdout.splitlines()
        if line.startswith(MARK)
    ]
    assert len(results) == len(FREE_BYTES)
    latest = migrations()[-1][0]
    failed = [r for r in results if r["error"] is not None]
    for result in failed:
        assert FULL in result["error"], result
        assert "rollback" not in result["error"], result
    # the space ran out part way through: in a later migration than the first, at least once
    assert any(r["left_at"] > 0 for r in failed), results
    for result in results:
        # a migration applies whole or not at all: once there is space, the rest apply
        assert (result["reopened"], result["integrity"]) == (latest, "ok"), result


def test_the_daemon_that_cannot_migrate_for_lack_of_space_names_the_full_disk(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    fill = (
        f"{sys.executable} -c \"import os; s = os.statvfs('{state}');"
        f" open('{state}/filler', 'wb').write(bytes(s.f_bavail * s.f_frsize - 204800))\""
    )
    done = in_namespace(
        tmp_path,
        f"{tmpfs(state)} && {fill} && printf 'state_dir = \"{state}\"\\n' > {state}/h.toml"
        f" && exec {sys.executable} -m bot.cli run --config {state}/h.toml </dev/null",
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert FULL in last, done.stderr
    assert "rollback" not in done.stderr
