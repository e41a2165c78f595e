"""docs/provider-content.md has a row for every fixture's type; every test it names exists and starts a server.

The table is the issue's proof that each block or item type round-trips on
both backends, so a renamed test or a new fixture without a row must fail here
rather than leave the page stale. A test "needs a server" when it takes one of
the fixtures that start one per backend (``journal_server`` and the loops and
stub built on it), which is what makes it run on the file backend and on
JetStream.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from tests.provider_content.fixtures import PROVIDERS, ROOT, provider_value
from tests.provider_content.loops import ANTHROPIC_PLACES, OPENAI_PLACES

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "provider-content.md"
TEST_CELL = re.compile(r"`(tests/provider_content/test_\w+\.py)::(test_\w+)`")
SERVER_FIXTURES = {"journal_server", "stub", "anthropic_loop", "openai_loop"}


def table_rows() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## The table")
    return [line for line in text[start:].splitlines() if line.startswith("| ") and TEST_CELL.search(line)]


def test_every_test_named_in_the_table_exists_and_runs_on_a_server() -> None:
    rows = table_rows()
    assert len(rows) >= 20
    for row in rows:
        [(path, name)] = TEST_CELL.findall(row)
        assert row.rstrip().endswith("| file, jetstream |"), row
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        test = getattr(module, name, None)
        assert callable(test), f"{path}::{name} does not exist"
        assert SERVER_FIXTURES & set(inspect.signature(test).parameters), f"{name} starts no server"


def test_every_fixture_has_a_place_in_a_loop_and_a_row_for_its_type() -> None:
    places = {"anthropic": ANTHROPIC_PLACES, "openai": OPENAI_PLACES}
    for provider in PROVIDERS:
        stems = {path.stem for path in (ROOT / provider).glob("*.json")}
        assert stems == set(places[provider]), f"{provider}: fixtures and loops.py places differ"
        for stem in stems:
            kind = provider_value(provider, stem)["type"]
            rows = [row for row in table_rows() if row.startswith(f"| {provider} | `{kind}`")]
            assert rows, f"{provider} {stem}: no row for type {kind!r}"
