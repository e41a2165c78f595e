"""The sync client modules are exactly what scripts/generate.py makes of their asyncio sources.

CI regenerates and diffs them too; this says so already in the client tests,
where a hand edit of ``client.py`` or an unregenerated change to ``aio.py``
is first noticed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generate_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", ROOT / "scripts" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sync_modules_are_generated_from_the_asyncio_ones_and_say_so() -> None:
    generate = _generate_script()
    modules = generate.sync_modules()
    assert sorted(path.name for path in modules) == sorted(generate.UNASYNC.values())
    for path, text in modules.items():
        assert path.read_text() == text, f"{path.name} is stale or edited by hand: run python scripts/generate.py"
        assert text.startswith("# GENERATED from client/python/runjournal/"), path.name
