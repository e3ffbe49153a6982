"""``channels/`` keeps at most ``CHANNELS_LIMIT`` one-line forwarders (``scripts/forwarders.py``):
a channel's optional surfaces are attributes (``channel.files``, ``channel.members`` …), not
methods that restate them one by one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("forwarders", ROOT / "scripts" / "forwarders.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("forwarders", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


forwarders = _script()


def test_channels_keep_few_forwarders() -> None:
    found = forwarders.found_under(ROOT / "channels")
    listing = "\n".join(str(f) for f in found)
    assert len(found) <= forwarders.CHANNELS_LIMIT, (
        f"{len(found)} forwarders in channels/, at most {forwarders.CHANNELS_LIMIT}: expose the "
        f"part as an attribute instead of restating its methods\n{listing}"
    )


@pytest.mark.parametrize(
    ("body", "target"),
    [
        ("return self._files.upload_limit(target)", "_files.upload_limit"),
        ("await self._outbound.edit(message, text)", "_outbound.edit"),
        ('"""Doc."""\n        return await self._files.send_file(t, p)', "_files.send_file"),
        ("self._health.set(state, detail)", "_health.set"),
    ],
)
def test_a_forwarder_is_counted(body: str, target: str) -> None:
    source = f"class C:\n    async def m(self, *a):\n        {body}\n"
    assert [f.target for f in forwarders.forwarders(source, "c.py")] == [target]


@pytest.mark.parametrize(
    "body",
    [
        "return self.other(target)",  # the object's own method
        "return files.upload_limit(target)",  # not an attribute of self
        "return self._a.b.c(target)",  # deeper than one attribute
        "x = self._files.upload_limit(target)\n        return x",  # two statements
        "return self._files.limit",  # no call
        "self._files.send(t)\n        self._files.flush()",
    ],
)
def test_other_methods_are_not(body: str) -> None:
    source = f"class C:\n    def m(self, *a):\n        {body}\n"
    assert list(forwarders.forwarders(source, "c.py")) == []
