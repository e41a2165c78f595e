"""The generated parts of the docs are current, and their generators refuse what would make them wrong.

``scripts/generate_docs.py`` writes the configuration table, the reason table
and the README's performance table from the code's own tables; CI diffs its
output, and this test fails first, naming the stale files.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bench import results_table

ROOT = Path(__file__).resolve().parents[2]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_docs", ROOT / "scripts" / "generate_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_docs", module)
    spec.loader.exec_module(module)
    return module


generate_docs = load_generator()


def test_the_generated_docs_are_what_their_sources_give_now() -> None:
    stale = [str(path.relative_to(ROOT)) for path in generate_docs.stale_files()]
    assert stale == [], "run 'python scripts/generate_docs.py' and commit"


def test_the_configuration_page_has_a_row_for_every_setting_in_order() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")]
    assert rows == [setting.name for setting in generate_docs.config.SETTINGS]


def test_the_detailed_notes_name_only_settings_that_exist() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    notes = text.split("## What some settings mean in detail", 1)[1]
    named = {line.split("`")[1] for line in notes.splitlines() if line.startswith("- **`")}
    assert named and named <= {setting.name for setting in generate_docs.config.SETTINGS}


def test_the_errors_page_has_a_row_for_every_reason_with_its_status_code() -> None:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    assert rows == {reason.value: code.name for reason, code in generate_docs.STATUS_CODES.items()}


def test_a_proto_comment_naming_another_code_stops_the_generation(tmp_path: Path, monkeypatch: Any) -> None:
    protos = []
    for path in generate_docs.PROTOS:
        text = path.read_text(encoding="utf-8")
        copy = tmp_path / path.name
        copy.write_text(text.replace("//   SEQ_CONFLICT         ABORTED ", "//   SEQ_CONFLICT         INTERNAL"))
        protos.append(copy)
    assert protos[0].read_text() != generate_docs.PROTOS[0].read_text()
    monkeypatch.setattr(generate_docs, "PROTOS", tuple(protos))
    with pytest.raises(SystemExit, match=re.escape("SEQ_CONFLICT the code INTERNAL, api/status.py ABORTED")):
        generate_docs.reasons_table()


def test_a_reason_missing_from_the_proto_comments_stops_the_generation(tmp_path: Path, monkeypatch: Any) -> None:
    copy = tmp_path / "journal_service.proto"
    copy.write_text(generate_docs.PROTOS[0].read_text(encoding="utf-8"))
    monkeypatch.setattr(generate_docs, "PROTOS", (copy,))  # the task service's reasons are gone
    with pytest.raises(SystemExit, match="TASK_NOT_FOUND is not in the protos' reason tables"):
        generate_docs.reasons_table()


def test_a_parser_without_a_description_stops_the_generation() -> None:
    def _hours(text: str) -> float:
        return float(text)

    with pytest.raises(SystemExit, match=r"describe the parser '.*_hours'"):
        generate_docs.describe_parser(_hours)


def test_a_file_without_its_markers_is_refused_not_appended_to() -> None:
    with pytest.raises(SystemExit, match="expected one 'settings' region"):
        generate_docs.replace_region("no markers here\n", "settings", "x", ROOT / "docs" / "configuration.md")


def row(ratio: list[float], op: str = ">=", value: float = 0.75) -> dict[str, Any]:
    return {"benchmark": "b", "run": "A", "ratio": ratio, "target": {"on": "ratio", "op": op, "value": value}}


def test_the_verdict_is_computed_from_the_numbers() -> None:
    assert results_table.verdict(row([0.8])) == "ratio ≥ 0.75: met"
    assert results_table.verdict(row([0.5, 0.6])) == "ratio ≥ 0.75: **missed**"
    assert results_table.verdict(row([0.5, 0.8, 0.9])) == "ratio ≥ 0.75: met in 2 of 3"
    figure = {
        "benchmark": "b",
        "figure": {"values": [200], "unit": "ms"},
        "target": {"on": "figure", "op": "<", "value": 200},
    }
    assert results_table.verdict(figure) == "< 200 ms: **missed**"


def test_a_ratio_left_out_is_the_figure_over_its_baseline() -> None:
    computed = {"benchmark": "b", "figure": {"values": [3, 8]}, "baseline": {"values": [2]}}
    assert results_table.ratios(computed) == [1.5, 4.0]
    with pytest.raises(ValueError, match="2 figures against 3 baselines"):
        results_table.ratios({"benchmark": "b", "figure": {"values": [3, 8]}, "baseline": {"values": [1, 2, 3]}})


def test_every_published_row_names_a_run_the_results_describe() -> None:
    results = results_table.load()
    assert {row["run"] for row in results["rows"]} <= set(results["runs"])
    results["rows"].append({"benchmark": "b", "run": "Z"})
    with pytest.raises(ValueError, match="no run 'Z'"):
        results_table.render(results)
