"""The run-lifecycle commands: ``runs watch``, ``runs fork``, ``runs delete``, ``gc`` and ``inbox --watch``.

``cli.py`` registers them (``add_runs_commands``, ``add_gc_command``) and hands
``inbox --watch`` to ``watch_inbox``. The watching commands never end by
themselves: they resume after the server goes away (from the last seq shown,
so nothing is shown twice or skipped) and stop on Ctrl-C. The deleting ones
look before they delete and delete only what they looked at
(``expected_last_seq``), and ask first unless ``--yes``.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time

from runjournal._cli_support import add_address, client_of, confirmed, label
from runjournal._watching import CaughtUp
from runjournal.errors import LastSeqMismatchError, UnavailableError
from runjournal.render import inbox_changes, render_inbox, render_record, safe_text
from runjournal.v1 import state_pb2

RECONNECT_SECONDS = 2.0
"""How long a watching command waits before watching again once the client's own retries gave up."""
INTERRUPTED_EXIT_CODE = 130
"""Ctrl-C, as a shell reports a command ended by SIGINT."""
SKIP_CONVERSATION = 2**31 - 1
"""``conversation_from`` past any conversation: a fold for the run's numbers, without its messages."""

_DURATION = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_runs_commands(runs_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``runs watch``, ``runs fork`` and ``runs delete``."""
    watch = runs_commands.add_parser("watch", help="follow a run: print its records, then each new one (tail -f)")
    add_address(watch)
    watch.add_argument("run_id")
    watch.add_argument("--after-seq", type=int, default=0, metavar="SEQ", help="start after this seq (default 0)")
    watch.add_argument("--limit", type=int, default=0, metavar="N", help="stop after N records (default: never)")
    watch.set_defaults(handler=runs_watch)

    fork = runs_commands.add_parser("fork", help="branch a run at a seq into a new run (the source is unchanged)")
    add_address(fork)
    fork.add_argument("run_id")
    fork.add_argument("--at", type=int, default=0, metavar="SEQ", help="the last record to copy (default: its last)")
    fork.add_argument("--new-run-id", required=True, metavar="ID", help="the new run's id (it must not exist)")
    fork.set_defaults(handler=runs_fork)

    delete = runs_commands.add_parser("delete", help="delete a run for good (its id is never used again)")
    add_address(delete)
    delete.add_argument("run_id")
    delete.add_argument(
        "--expected-last-seq",
        type=int,
        metavar="N",
        help="delete only if its last seq is still N (default: read it first and show it)",
    )
    delete.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    delete.set_defaults(handler=runs_delete)


def add_gc_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gc = commands.add_parser("gc", help="delete the runs that stopped longer ago than a duration")
    add_address(gc)
    when = gc.add_mutually_exclusive_group(required=True)
    when.add_argument("--older-than", type=duration, metavar="AGE", help="e.g. 30d, 12h, 1w2d (s, m, h, d, w)")
    when.add_argument(
        "--stopped-before", type=moment, metavar="TIME", help="an ISO 8601 time with its zone, e.g. 2026-11-01T00:00Z"
    )
    gc.add_argument(
        "--label", action="append", default=[], type=label, metavar="KEY=VALUE", help="only runs with label"
    )
    gc.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    gc.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    gc.set_defaults(handler=gc_runs)


def duration(text: str) -> datetime.timedelta:
    """``30d``, ``12h``, ``1w2d``, ``90m``, ``45s`` as a timedelta; anything else is refused."""
    if not text or _DURATION.sub("", text):
        raise argparse.ArgumentTypeError(f"expected a duration like 30d, 12h or 1w2d, got {text!r}")
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text))
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"the duration must be more than 0, got {text!r}")
    return datetime.timedelta(seconds=seconds)


def moment(text: str) -> datetime.datetime:
    """An ISO 8601 time that names its zone (``Z`` or an offset): a deletion cutoff is never guessed."""
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time like 2026-11-01T00:00Z, got {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"the time must name its zone (Z or +01:00), got {text!r}")
    return value


# --- watching -----------------------------------------------------------------


def runs_watch(args: argparse.Namespace) -> int:
    after, shown = args.after_seq, 0
    try:
        with client_of(args) as client:
            while True:
                try:
                    for item in client.watch(args.run_id, after):
                        if isinstance(item, CaughtUp):
                            _note(f"caught up at seq {item.head_seq}; new records follow (Ctrl-C to stop)")
                            continue
                        print(render_record(item.seq, item.record), flush=True)
                        after, shown = item.seq, shown + 1
                        if args.limit and shown >= args.limit:
                            return 0
                except UnavailableError as err:
                    _lost(err, f"watching again after seq {after}")
    except KeyboardInterrupt:
        return INTERRUPTED_EXIT_CODE


def watch_inbox(args: argparse.Namespace) -> int:
    """The inbox, then each change to it as a ``+``/``-`` line, kept live through WatchRuns."""
    runs: dict[str, state_pb2.RunSummary] | None = None  # None until the first catch-up
    try:
        with client_of(args) as client:
            while True:
                fresh: dict[str, state_pb2.RunSummary] = {}
                try:
                    stream = client.watch_runs(labels=dict(args.label), waiting_for_person=True, task_id=args.task)
                    for item in stream:
                        if isinstance(item, CaughtUp):
                            if runs is None:
                                print(render_inbox(fresh.values()), flush=True)
                                _note("watching the inbox (Ctrl-C to stop)")
                            else:  # watching again after a failure: tell what changed while away
                                for run_id in {**runs, **fresh}:
                                    _changed(run_id, runs.get(run_id), fresh.get(run_id))
                            runs = fresh
                        elif runs is not fresh:  # the stored part of the stream, before its catch-up
                            if isinstance(item, state_pb2.RunSummary):
                                fresh[item.run_id] = item
                        elif isinstance(item, state_pb2.RunSummary):
                            _changed(item.run_id, runs.get(item.run_id), item)
                            runs[item.run_id] = item
                        else:
                            _changed(item.run_id, runs.pop(item.run_id, None), None)
                except UnavailableError as err:
                    _lost(err, "watching the inbox again")
    except KeyboardInterrupt:
        return INTERRUPTED_EXIT_CODE


def _changed(run_id: str, before: state_pb2.RunSummary | None, after: state_pb2.RunSummary | None) -> None:
    old = before.waiting_calls if before is not None else ()
    new = after.waiting_calls if after is not None else ()
    for line in inbox_changes(run_id, old, new):
        print(line, flush=True)


def _note(text: str) -> None:
    print(f"-- {text}", file=sys.stderr, flush=True)


def _lost(err: UnavailableError, doing: str) -> None:
    _note(f"lost the server ({safe_text(err.message)}); {doing} in {RECONNECT_SECONDS:g}s")
    time.sleep(RECONNECT_SECONDS)


# --- forking and deleting -----------------------------------------------------


def runs_fork(args: argparse.Namespace) -> int:
    with client_of(args) as client:
        answer = client.fork_run(args.run_id, args.at, args.new_run_id)
    origin = answer.forked_from
    print(
        f"forked run {safe_text(args.run_id)} at seq {origin.seq} into {safe_text(answer.run_id)} "
        f"(last seq {answer.last_seq}, prefix sha256 {safe_text(origin.prefix_sha256)})"
    )
    return 0


def runs_delete(args: argparse.Namespace) -> int:
    run_id = safe_text(args.run_id)
    with client_of(args) as client:
        expected = args.expected_last_seq
        if expected is None:
            state = client.fold(args.run_id, conversation_from=SKIP_CONVERSATION)
            expected = state.last_seq
            status = state_pb2.RunStatus.Name(state.status).removeprefix("RUN_STATUS_").lower()
            claimed = f", claimed by {safe_text(state.claimed_by)}" if state.claimed_by else ""
            print(f"run {run_id}: status {status}, last seq {expected}{claimed}")
        question = f"delete run {run_id} at last seq {expected}? It cannot be undone."
        if not confirmed(question, yes=args.yes, what=f"delete run {run_id}"):
            return 1
        try:
            answer = client.delete_run(args.run_id, expected)
        except LastSeqMismatchError as err:
            print(
                f"runjournal: did not delete run {run_id}: it moved on to seq {err.last_seq} since seq {expected}; "
                f"look at it again (runjournal runs show {run_id})",
                file=sys.stderr,
            )
            return 1
    if answer.deleted:
        later = "" if answer.erased else "; its records are being erased in the background (delete again to wait)"
        print(f"deleted run {run_id} (last seq {answer.last_seq}){later}")
    else:
        print(f"run {run_id} was deleted already (last seq {answer.last_seq})")
    return 0


def gc_runs(args: argparse.Namespace) -> int:
    cutoff = args.stopped_before or datetime.datetime.now(datetime.UTC) - args.older_than
    when = cutoff.isoformat(timespec="seconds")
    with client_of(args) as client:
        # Listed whole before deleting: deleting while paging would move the pages under the listing.
        runs = list(client.iter_runs(labels=dict(args.label), stopped_before=cutoff))
        if not runs:
            print(f"no run stopped before {when}")
            return 0
        print(f"{'RUN':<40} {'STATUS':<15} {'LAST SEQ':>8}  STOPPED")
        for run in runs:
            status = state_pb2.RunStatus.Name(run.status).removeprefix("RUN_STATUS_").lower()
            stopped = run.updated_at.ToJsonString() if run.HasField("updated_at") else "-"
            print(f"{safe_text(run.run_id):<40} {status:<15} {run.last_seq:>8}  {stopped}")
        count = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
        if args.dry_run:
            print(f"{count} stopped before {when} would be deleted (dry run: nothing deleted)")
            return 0
        if not confirmed(f"delete these {count}? It cannot be undone.", yes=args.yes, what=f"delete {count}"):
            return 1
        deleted, moved, gone = 0, 0, 0
        for run in runs:
            try:
                answer = client.delete_run(run.run_id, run.last_seq)
            except LastSeqMismatchError as err:
                # Written to since it was listed: it is not the run that was looked at, so it stays.
                print(f"kept {safe_text(run.run_id)}: it moved on to seq {err.last_seq} since it was listed")
                moved += 1
                continue
            deleted += answer.deleted
            gone += not answer.deleted
    print(f"deleted {deleted}, kept {moved} that moved since listed, {gone} deleted already")
    return 0
