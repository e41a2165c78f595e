"""A run's token usage per model, for the run page: summed from the journal's records, one pass, kept warm.

Each ``assistant`` record is one model call, made by the model of the
fingerprint in force at it: ``meta``'s, replaced by each ``reconfigure``
(the same rule the fold uses for ``effective_fingerprint``). So the turns'
totals, summed over the models, are the fold's counters. A ``compaction``
record's usage was spent by the model that wrote its summary (its own
``provider``/``model``); the fold does not count it, so it is shown apart.

A journal only grows and a run id is never used again (a deleted run keeps
its tombstone), so a tally up to seq N stays true: ``UsageCache`` keeps the
last few runs' tallies and a later view reads only the records after N.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass, field

from runjournal.v1 import records_pb2

CACHED_RUNS = 256
"""How many runs' tallies the web server keeps (a few hundred small dicts)."""


@dataclass
class ModelUsage:
    """The calls and tokens of one model."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, usage: records_pb2.Usage) -> None:
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens


@dataclass
class UsageTally:
    """Usage per model over a journal's records up to ``seq``; fed one record at a time, in seq order."""

    seq: int = 0
    model_in_force: str = ""
    turns: dict[str, ModelUsage] = field(default_factory=dict)
    compactions: dict[str, ModelUsage] = field(default_factory=dict)

    def add(self, record: records_pb2.JournalRecord) -> None:
        """Count ``record`` (the record after ``seq``; a repeated or earlier one is ignored)."""
        if record.seq <= self.seq:
            return
        self.seq = record.seq
        kind = record.WhichOneof("payload")
        if kind == "meta":
            self.model_in_force = model_name(record.meta.fingerprint.provider, record.meta.fingerprint.model)
        elif kind == "reconfigure":
            fingerprint = record.reconfigure.fingerprint
            self.model_in_force = model_name(fingerprint.provider, fingerprint.model)
        elif kind == "assistant":
            _of(self.turns, self.model_in_force).add(record.assistant.usage)
        elif kind == "compaction":
            compaction = record.compaction
            _of(self.compactions, model_name(compaction.provider, compaction.model)).add(compaction.usage)

    def total(self) -> ModelUsage:
        """The turns of every model together: what the fold's counters say."""
        whole = ModelUsage("all models")
        for usage in self.turns.values():
            whole.calls += usage.calls
            whole.input_tokens += usage.input_tokens
            whole.output_tokens += usage.output_tokens
            whole.cache_read_tokens += usage.cache_read_tokens
            whole.cache_write_tokens += usage.cache_write_tokens
        return whole


def model_name(provider: str, model: str) -> str:
    """``provider/model`` as stored (the page escapes it), or "unknown" when neither is set."""
    return f"{provider}/{model}" if provider or model else "unknown"


def _of(table: dict[str, ModelUsage], model: str) -> ModelUsage:
    if model not in table:
        table[model] = ModelUsage(model)
    return table[model]


class UsageCache:
    """The tallies of the runs viewed last, so a view reads only the records stored since the one before."""

    def __init__(self, size: int = CACHED_RUNS) -> None:
        self._size = size
        self._tallies: OrderedDict[str, UsageTally] = OrderedDict()

    def start(self, run_id: str) -> UsageTally:
        """A copy of the run's tally to continue (a fresh one when none is kept): each view adds to its own."""
        kept = self._tallies.get(run_id)
        return copy.deepcopy(kept) if kept is not None else UsageTally()

    def keep(self, run_id: str, tally: UsageTally) -> None:
        """Keep ``tally`` unless a newer one is kept already (two views of one run may finish in any order)."""
        kept = self._tallies.get(run_id)
        if kept is None or kept.seq < tally.seq:
            self._tallies[run_id] = tally
        self._tallies.move_to_end(run_id)
        while len(self._tallies) > self._size:
            self._tallies.popitem(last=False)

    def forget(self, run_id: str) -> None:
        """The run was deleted: nothing of it is kept."""
        self._tallies.pop(run_id, None)
