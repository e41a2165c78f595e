"""Fold: a run's records -> its state. Pure and incremental.

``Folder`` applies records one at a time; ``state()`` takes a snapshot. A
warm server keeps one ``Folder`` per open run and validates each incoming
record by applying it before writing it, so:

* ``apply`` checks everything first and mutates only after every check has
  passed: a refused record leaves the ``Folder`` exactly as it was;
* ``apply`` costs O(size of the record), never O(length of the run);
  ``state()`` is O(length of the run) and changes nothing, so folding a prefix,
  taking a snapshot and applying the rest equals folding everything.

The rules:

* The first record is ``meta`` at seq 1, and ``meta`` appears only there; its
  format version must equal ``FORMAT_VERSION`` exactly (``VersionMismatchError``
  for older and newer alike). Seqs increase by exactly 1. An unknown protocol
  id is skipped when ``optional`` and refused otherwise.
* The open turn is the last ``assistant`` record with its calls (its
  ``tool_use`` blocks; ids unique across the run). A ``tool_result``,
  ``deferral`` or ``approval`` must name an unanswered call of the open turn; a
  call takes one result, one deferral and one decision.
* ``assistant`` and ``user`` are refused while a call of the open turn has no
  result (model APIs refuse them; a cancelled call is answered with an error
  result). Both commit the open turn: its assistant message, then one user
  message of its results in journal order (none when it had no calls).
  ``user`` then merges into a trailing user message (the prompt, the results
  message, an earlier follow-up), because model APIs refuse two user messages
  in a row.
* A fully answered turn stays open inside the ``Folder`` until the next
  ``assistant`` or ``user`` commits it (so a follow-up can merge into its
  results message). ``state()`` shows a fully answered open turn in
  ``conversation`` and a partly answered one as ``pending``; that view never
  changes the ``Folder``.
* ``claim``, ``note`` and ``reconfigure`` never touch the conversation or the
  open turn (a claim usually lands between a turn and its results). ``claim``
  sets the claim token and holder; ``reconfigure`` replaces the effective
  fingerprint. In a fork (a meta with ``forked_from``) the claims at or below
  ``forked_from.seq`` were copied from the source and set nothing: the
  source's workers must not hold the fork, whose token stays 1 (the forker's)
  until a claim of its own. Likewise a copied deferral to a child run
  (``child_run_id``) is an ordinary deferral in the fork: the child's meta
  names the source, whose call its outcome answers, so the fork's call waits
  for a person instead of for a child that will never answer it.
* The spawn links (``spawned_by``, ``child_run_id``, ``answered_by_run_id``)
  are refused in a format-1 run (``kinds.spawn_link_problem``).
* ``terminal`` describes the run only while it is the last non-inert record
  (``summary.is_inert_kind``); it does not close the open turn, so a result
  after a budget or suspend terminal still answers the pending batch.
"""

from __future__ import annotations

from collections.abc import Iterable

from runjournal.v1.records_pb2 import (
    Approval,
    AssistantTurn,
    ClaimNotice,
    Compaction,
    ContentBlock,
    ConversationMessage,
    Decision,
    Deferral,
    Fingerprint,
    JournalRecord,
    Meta,
    Reconfigure,
    Role,
    Terminal,
    ToolResult,
    UserFollowUp,
)
from runjournal_server.core.compaction import Compacted, append_user, compacted_view, cut_problem
from runjournal_server.core.errors import VersionMismatchError
from runjournal_server.core.folded import FoldedRun
from runjournal_server.core.kinds import (
    FORMAT_VERSION,
    MIN_FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    Kind,
    newer_format_problem,
    readable_versions,
    spawn_link_problem,
)
from runjournal_server.core.summary import TERMINAL_STATUS, StoredLike, is_inert_kind
from runjournal_server.core.turns import Call, Turn

_DECISIONS = frozenset({Decision.DECISION_APPROVED, Decision.DECISION_DENIED})


class JournalRuleError(Exception):
    """A record breaks the journal rules.

    The runs map it to ``CORRUPT_JOURNAL`` for a stored record
    (``runs/handles.py``) and to ``INVALID_RECORD`` for an incoming one
    (``runs/writing.py``). ``seq`` is the offending record's.
    """

    def __init__(self, seq: int, detail: str) -> None:
        super().__init__(f"seq {seq}: {detail}")
        self.seq = seq
        self.detail = detail


class Folder(FoldedRun):
    """The incremental fold of one run; see the module docstring for the rules (the queries and the
    snapshot of what it folded are ``FoldedRun``'s, ``core/folded.py``)."""

    # -- applying records ------------------------------------------------

    def apply(self, record: JournalRecord) -> None:
        """Fold one record of a known protocol id; refused records change nothing."""
        seq = record.seq
        kind = record.WhichOneof("payload")
        if kind is None:
            raise JournalRuleError(seq, "the record has no payload")
        self._check_position(seq, kind)
        meta = record.meta if self._meta is None else self._meta
        problem = spawn_link_problem(record, meta.format_version)
        if problem is not None:
            raise JournalRuleError(seq, problem)
        match kind:
            case Kind.META:
                self._apply_meta(seq, record.meta)
            case Kind.ASSISTANT:
                self._apply_assistant(seq, record.assistant)
            case Kind.USER:
                self._apply_user(seq, record.user)
            case Kind.TOOL_RESULT:
                self._apply_tool_result(seq, record.tool_result)
            case Kind.DEFERRAL:
                self._apply_deferral(seq, record.deferral)
            case Kind.APPROVAL:
                self._apply_approval(seq, record.approval)
            case Kind.CLAIM:
                self._apply_claim(seq, record.claim)
            case Kind.TERMINAL:
                self._apply_terminal(seq, record.terminal)
            case Kind.RECONFIGURE:
                self._apply_reconfigure(seq, record.reconfigure)
            case Kind.NOTE:
                pass  # no effect beyond the last seq
            case Kind.COMPACTION:
                self._apply_compaction(seq, record.compaction)
            case _:
                raise JournalRuleError(seq, f"protocol id {kind!r} has no fold rule")
        self._advance(seq, kind, known=True, optional=record.optional)

    def skip_unknown(self, seq: int, kind: str, optional: bool) -> None:
        """Fold a record of a protocol id this server does not know: skipped only when optional."""
        self._check_position(seq, kind)
        if not optional:
            raise JournalRuleError(seq, f"unknown protocol id {kind!r} is not optional; a newer server wrote this run")
        self._advance(seq, kind, known=False, optional=True)

    def apply_stored(self, stored: StoredLike) -> None:
        """Fold one stored record (``records.StoredRecord``)."""
        if stored.record is None:
            self.skip_unknown(stored.seq, stored.kind, stored.optional)
        else:
            self.apply(stored.record)

    def _check_position(self, seq: int, kind: str) -> None:
        if self._meta is None:
            if kind != Kind.META:
                raise JournalRuleError(seq, f"the first record must be 'meta', not {kind!r}")
            if seq != 1:
                raise JournalRuleError(seq, "the meta record must be at seq 1")
            return
        if seq != self._last_seq + 1:
            raise JournalRuleError(seq, f"expected seq {self._last_seq + 1}: a journal has no gaps")
        if kind == Kind.META:
            raise JournalRuleError(seq, "a second meta record; meta appears only at seq 1")

    def _advance(self, seq: int, kind: str, *, known: bool, optional: bool) -> None:
        self._last_seq = seq
        if not is_inert_kind(kind, known=known, optional=optional) and kind != Kind.TERMINAL:
            self._terminal = None

    def _apply_meta(self, seq: int, meta: Meta) -> None:
        if meta.format_version not in READABLE_FORMAT_VERSIONS:
            raise VersionMismatchError(meta.run_id, meta.format_version, FORMAT_VERSION, readable_versions())
        self._meta = Meta()
        self._meta.CopyFrom(meta)
        self._conversation.append(ConversationMessage(role=Role.ROLE_USER, content=meta.prompt))
        self._starts.append(seq)
        self._ends.append(seq)
        self._fingerprint.CopyFrom(meta.fingerprint)
        self._claim_token = seq

    def _apply_assistant(self, seq: int, turn: AssistantTurn) -> None:
        self._refuse_while_unanswered(seq, "an assistant record")
        assert self._meta is not None
        problem = newer_format_problem(turn, self._meta.format_version)
        if problem is not None:
            raise JournalRuleError(seq, problem)
        if turn.iteration <= self._last_iteration:
            raise JournalRuleError(seq, f"iteration {turn.iteration} does not follow iteration {self._last_iteration}")
        new_ids: set[str] = set()
        for block in turn.content:
            if block.WhichOneof("block") != "tool_use":
                continue
            call_id = block.tool_use.id
            if call_id in new_ids or call_id in self._calls:
                raise JournalRuleError(seq, f"tool_use id {call_id!r} is already used in this run")
            new_ids.add(call_id)
        # Every check passed: mutate.
        self._commit_turn()
        message = ConversationMessage(role=Role.ROLE_ASSISTANT, content=turn.content)
        calls = [Call(block.tool_use, seq) for block in message.content if block.HasField("tool_use")]
        for call in calls:
            self._calls[call.tool_use.id] = call
        self._turn = Turn(seq, turn.iteration, message, calls)
        self._last_iteration = turn.iteration
        self._last_stop_reason = turn.stop_reason
        counters, usage = self._counters, turn.usage
        counters.llm_calls += 1
        counters.input_tokens += usage.input_tokens
        counters.output_tokens += usage.output_tokens
        counters.cache_read_tokens += usage.cache_read_tokens
        counters.cache_write_tokens += usage.cache_write_tokens

    def _apply_user(self, seq: int, follow_up: UserFollowUp) -> None:
        self._refuse_while_unanswered(seq, "a user follow-up")
        self._commit_turn()
        if append_user(self._conversation, follow_up.content):
            self._ends[-1] = seq
        else:
            self._starts.append(seq)
            self._ends.append(seq)
        if self._compacted is not None:
            append_user(self._compacted.view, follow_up.content)

    def _apply_tool_result(self, seq: int, result: ToolResult) -> None:
        call = self._open_call(seq, result.tool_use_id, "a tool result")
        call.result_seq = seq
        call.result = ToolResult()
        call.result.CopyFrom(result)
        block = ContentBlock()
        block.tool_result.tool_use_id = result.tool_use_id
        block.tool_result.content.extend(result.content)
        block.tool_result.is_error = result.is_error
        assert self._turn is not None
        self._turn.results.append(block)
        self._turn.unanswered -= 1
        self._counters.tool_calls += 1
        if result.remote:
            self._counters.remote_tool_calls += 1

    def _apply_deferral(self, seq: int, deferral: Deferral) -> None:
        call = self._open_call(seq, deferral.tool_use_id, "a deferral")
        if call.deferral_seq:
            raise JournalRuleError(
                seq, f"call {deferral.tool_use_id!r} was already deferred at seq {call.deferral_seq}"
            )
        call.deferral_seq = seq
        call.deferral = Deferral()
        call.deferral.CopyFrom(deferral)
        if self._meta is not None and self._meta.HasField("forked_from") and seq <= self._meta.forked_from.seq:
            # A fork copies a delegation, never the child: the child answers the source's call (its meta
            # names the source), so in the fork the call waits for an answer like any deferral.
            call.deferral.ClearField("child_run_id")
        self._counters.deferrals += 1

    def _apply_approval(self, seq: int, approval: Approval) -> None:
        if approval.decision not in _DECISIONS:
            raise JournalRuleError(seq, f"approval decision {approval.decision} is neither approved nor denied")
        call = self._open_call(seq, approval.tool_use_id, "an approval")
        if call.approval_seq:
            raise JournalRuleError(
                seq, f"call {approval.tool_use_id!r} already has a decision from seq {call.approval_seq}"
            )
        call.approval_seq = seq
        call.approval = Approval()
        call.approval.CopyFrom(approval)

    def _apply_claim(self, seq: int, claim: ClaimNotice) -> None:
        if self._meta is not None and self._meta.HasField("forked_from") and seq <= self._meta.forked_from.seq:
            return  # copied from the source: a claim there never holds the fork
        self._claim_token = seq
        self._claimed_by = claim.worker_id

    def _apply_terminal(self, seq: int, terminal: Terminal) -> None:
        if terminal.reason not in TERMINAL_STATUS:
            raise JournalRuleError(seq, f"terminal reason {terminal.reason} is not a known reason")
        self._terminal = Terminal()
        self._terminal.CopyFrom(terminal)
        self._terminal_seq = seq

    def _apply_reconfigure(self, seq: int, reconfigure: Reconfigure) -> None:
        self._fingerprint = Fingerprint()
        self._fingerprint.CopyFrom(reconfigure.fingerprint)

    def _apply_compaction(self, seq: int, compaction: Compaction) -> None:
        assert self._meta is not None
        needed = MIN_FORMAT_VERSION[Kind.COMPACTION]
        if self._meta.format_version < needed:
            raise JournalRuleError(
                seq,
                f"a compaction needs journal format {needed} or later; this run was created with format "
                f"{self._meta.format_version}, whose readers would fold it without its compactions",
            )
        problem = cut_problem(
            compaction.upto_seq,
            last_seq=self._last_seq,
            in_force=self._compacted,
            calls=self._calls.values(),
            starts=self._starts,
            ends=self._ends,
        )
        if problem is not None:
            raise JournalRuleError(seq, problem)
        view = compacted_view(compaction.summary, self._conversation, self._starts, compaction.upto_seq)
        self._compacted = Compacted(seq, compaction.upto_seq, view)

    def _refuse_while_unanswered(self, seq: int, what: str) -> None:
        turn = self._turn
        if turn is not None and turn.unanswered:
            missing = [c.tool_use.id for c in turn.calls if not c.result_seq]
            raise JournalRuleError(
                seq,
                f"{what} while call(s) {', '.join(map(repr, missing))} of the turn at seq {turn.seq} "
                "have no result; answer every call first (a cancelled call gets an error result)",
            )

    def _open_call(self, seq: int, tool_use_id: str, what: str) -> Call:
        """The unanswered call ``tool_use_id`` of the open turn, or ``JournalRuleError``."""
        call = self._calls.get(tool_use_id)
        if call is None:
            raise JournalRuleError(seq, f"{what} for unknown call {tool_use_id!r}")
        if self._turn is None or call.assistant_seq != self._turn.seq:
            raise JournalRuleError(
                seq,
                f"{what} for call {tool_use_id!r} of the committed turn at seq {call.assistant_seq}; "
                "only calls of the open turn take one",
            )
        if call.result_seq:
            raise JournalRuleError(
                seq, f"{what} for call {tool_use_id!r}, which was already answered at seq {call.result_seq}"
            )
        return call

    def _commit_turn(self) -> None:
        turn = self._turn
        if turn is None:
            return
        messages = [turn.message]
        end = max((call.result_seq for call in turn.calls), default=turn.seq)  # a call and its result: one unit
        self._starts.append(turn.seq)
        self._ends.append(end)
        if turn.results:
            messages.append(ConversationMessage(role=Role.ROLE_USER, content=turn.results))
            self._starts.append(min(call.result_seq for call in turn.calls))
            self._ends.append(end)
        self._conversation.extend(messages)
        if self._compacted is not None and not self._compacted.covers(turn):
            self._compacted.view.extend(messages)
        self._turn = None


def fold(records: Iterable[JournalRecord]) -> Folder:
    """Fold known records in order (a prefix folds "as of" its last seq)."""
    folder = Folder()
    for record in records:
        folder.apply(record)
    return folder


def fold_stored(stored_records: Iterable[StoredLike]) -> Folder:
    """Fold stored records in order, skipping unknown optional protocol ids."""
    folder = Folder()
    for stored in stored_records:
        folder.apply_stored(stored)
    return folder
