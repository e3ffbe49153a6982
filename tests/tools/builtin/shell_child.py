"""One ``shell`` call in a process of its own: ``python -m tests.tools.builtin.shell_child
'<json>'`` with ``workspace``, ``config`` (``[tools.shell]``) and ``command``; the result's
text is the last line of stdout, as JSON.

The process-limit test runs it as an unprivileged user: the kernel never applies
RLIMIT_NPROC to root, and the daemon runs as its service user.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bot.config import ShellToolConfig
from bot.tools.builtin.observation import ToolFailed
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from tests.tools.builtin.conftest import make_context


async def call(workspace: Path, config: dict[str, object], command: str) -> str:
    spec = shell_tool(
        Workspace(root=workspace), ShellToolConfig.model_validate(config), grace_s=0.3
    )
    assert spec.handler is not None
    try:
        result = await spec.handler({"command": command}, make_context())
    except ToolFailed as exc:
        return f"{type(exc).__name__}: {exc}"
    return result if isinstance(result, str) else result.text


def main() -> None:
    request = json.loads(sys.argv[1])
    text = asyncio.run(call(Path(request["workspace"]), request["config"], request["command"]))
    print(json.dumps(text))


if __name__ == "__main__":
    main()
