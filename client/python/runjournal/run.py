"""Run handles for workers: create or claim a run, then append typed records.

A handle keeps the run's claim token and the seq of the next record, so a
worker writes ``run.assistant(...)``, ``run.tool_result(...)`` and so on
without counting. ``Run`` uses a ``JournalClient``; ``AsyncRun`` an
``AsyncJournalClient``; both get their record methods from ``RunRecords``
(``_run_base``). ``AsyncRun`` is written in ``_run_aio``; ``Run``, in
``_run_sync``, is generated from it by ``scripts/generate.py``.

A handle is one writer. When another worker claims the run, this handle's next
append raises ``RunClaimedError``: stop working on the run.
"""

from __future__ import annotations

from runjournal._builders import (
    approval_record,
    assistant_record,
    deferral_record,
    note_record,
    opaque_block,
    redacted_thinking_block,
    terminal_record,
    text_block,
    thinking_block,
    tool_result_record,
    tool_use_block,
    user_record,
)
from runjournal._run_aio import AsyncRun
from runjournal._run_sync import Run

__all__ = [
    "AsyncRun",
    "Run",
    "approval_record",
    "assistant_record",
    "deferral_record",
    "note_record",
    "opaque_block",
    "redacted_thinking_block",
    "terminal_record",
    "text_block",
    "thinking_block",
    "tool_result_record",
    "tool_use_block",
    "user_record",
]
