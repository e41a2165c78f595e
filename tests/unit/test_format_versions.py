"""Journal format versions: a format-1 journal written before format 2 existed folds exactly as it did then.

``testdata/journals/format1.jsonl`` was written, and ``format1.state.json``
folded from it, by the tree of commit 62a362e (format 1 only), once; they are
never regenerated. Format 2 only adds the ``compaction`` record, so a reader
of both must fold the old journal to the same state, field for field.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format

from runjournal.v1.state_pb2 import RunState
from runjournal_server.core import records
from runjournal_server.core.fold import JournalRuleError, fold_stored
from tests.support import builders as b

FIXTURES = Path(__file__).resolve().parents[2] / "testdata" / "journals"


def stored_fixture() -> list[records.StoredRecord]:
    return [records.decode(line) for line in (FIXTURES / "format1.jsonl").read_bytes().splitlines()]


def test_a_format_1_journal_of_the_old_tree_folds_to_the_state_it_folded_to_then() -> None:
    journal = stored_fixture()
    assert journal[0].record is not None and journal[0].record.meta.format_version == 1
    expected = json_format.Parse((FIXTURES / "format1.state.json").read_text(), RunState())
    assert fold_stored(journal).state() == expected


def test_the_fixture_holds_every_kind_format_1_knew() -> None:
    kinds = {item.kind for item in stored_fixture()}
    assert kinds == {"meta", "assistant", "user", "tool_result", "deferral", "approval", "claim", "terminal"} | {
        "reconfigure",
        "note",
    }
    assert json.loads((FIXTURES / "format1.state.json").read_text())["status"] == "RUN_STATUS_COMPLETED"


def test_a_format_1_run_refuses_a_compaction_whatever_its_point() -> None:
    folder = fold_stored(stored_fixture())
    for upto in (1, 9, 15):
        try:
            folder.copy().apply(b.compaction(16, upto))
        except JournalRuleError as err:
            assert "needs journal format 2" in err.detail
        else:
            raise AssertionError(f"a compaction through {upto} was folded into a format-1 run")
