"""Every file the packages need at run time is in what users install.

The wheel holds the Python modules setuptools finds and, of everything else, only what
`[tool.setuptools.package-data]` names. A file left out works from the checkout and fails
from the wheel (the PostgreSQL migrations once did), so this walks the source tree and fails
on any file under `bot/` or `channels/` that the package data would leave out. The artifact
stage of `.ci/run` builds the real wheel and checks it the same way (scripts/artifact_smoke.py).
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "channels")


def _package_data() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        config = tomllib.load(f)
    data: dict[str, list[str]] = config["tool"]["setuptools"]["package-data"]
    return data


def _shipped(package: str, relative: str, patterns: dict[str, list[str]]) -> bool:
    """Whether `relative` (a path under `package`) matches one of its package-data globs."""
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in patterns.get(package, []))


def _data_files() -> list[tuple[str, str]]:
    files = []
    for package in PACKAGES:
        base = ROOT / package
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in {".py", ".pyc"}:
                continue
            files.append((package, path.relative_to(base).as_posix()))
    return files


def test_every_non_python_file_is_package_data() -> None:
    patterns = _package_data()
    missing = [
        f"{package}/{relative}"
        for package, relative in _data_files()
        if not _shipped(package, relative, patterns)
    ]
    assert missing == [], f"files the wheel would leave out: {missing}"


def test_both_engines_migrations_are_package_data() -> None:
    patterns = _package_data()
    for engine in ("sqlite", "postgres"):
        migrations = sorted((ROOT / "bot" / "store" / engine / "migrations").glob("*.sql"))
        assert migrations, engine
        for path in migrations:
            relative = path.relative_to(ROOT / "bot").as_posix()
            assert _shipped("bot", relative, patterns), relative


def test_a_glob_that_matches_nothing_is_not_kept() -> None:
    """A pattern naming a folder that moved would hide the next omission: each must match."""
    patterns = _package_data()
    files = _data_files()
    for package, globs in patterns.items():
        for pattern in globs:
            assert any(p == package and fnmatch.fnmatchcase(r, pattern) for p, r in files), (
                f"{package}: {pattern} matches no file"
            )
