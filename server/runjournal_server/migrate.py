"""``runjournal migrate``: copy runs and tasks between stores, record by record, byte for byte.

Both ends are ordinary backends (``backends/``) used through their contract
only: a run is created on the target with the source's meta, then the rest is
appended in batches, and every record is the source's stored line, never
re-encoded. So a run moves between the file and JetStream backends (or
between two directories, or two streams) unchanged, and what the target holds
reads, folds and lists exactly as the source did.

Idempotent, by the append rule's verified-duplicate test
(``sequence.check_append``): on the target, each seq that is already stored
must hold the source's line byte for byte. A run whose records are all there
is "already present"; a verified prefix is skipped and the rest appended; a
different record at any seq (or a target that holds more than the source) is a
conflict, and that run is refused. Afterwards the target's copy is read back
and must equal the source byte for byte and fold to the same state.

A file source is opened with its writer lock, held while the run is copied, so
a run that a live server holds (it may be mid-write) is refused "locked"
rather than copied half-way; a JetStream source has no lock (replicas share
runs) and is copied as of the moment it is read. A run that cannot be read or
folded (corrupt), is locked, or conflicts is refused with its reason while the
others go on; the exit code is 1 when any was refused.

Tasks are copied the same way (create-only request and outcome documents,
same bytes; identical bytes present are skipped, different ones a conflict).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import logging
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from runjournal.v1.state_pb2 import RunState
from runjournal_server import config as config_module
from runjournal_server.backends.base import Backend, Journal, TaskStore, WriteRaceError
from runjournal_server.core.fold import JournalRuleError, fold_stored
from runjournal_server.core.records import StoredRecord
from runjournal_server.core.sequence import AppendDecision, check_append
from runjournal_server.errors import (
    CorruptJournalError,
    JournalError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
)

BATCH_RECORDS = 500
"""Records per append: half of JetStream's atomic batch limit (1,000, ``jetstream.config.MAX_ATOMIC_BATCH``)."""
BATCH_BYTES = 4 * 1024 * 1024
"""Bytes per append (at least one record): keeps an atomic batch well inside the server's 10 s commit window."""
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 32
"""Below JetStream's 50 atomic batches in flight per stream."""
PLAIN_PROGRESS_SECONDS = 5.0
"""How often progress is printed when stderr is not a terminal (also at every tenth of the way)."""
TTY_PROGRESS_SECONDS = 0.1

# Settings a migration takes from --config, $RUNJOURNAL_* and flags (the NATS connection and limits);
# where the runs are comes from the SPECs.
SETTINGS = (
    "nats_subject_prefix",
    "nats_replicas",
    "nats_creds",
    "nats_tls_ca",
    "nats_tls_cert",
    "nats_tls_key",
    "nats_user",
    "nats_password",
    "nats_token",
    "nats_request_timeout_seconds",
    "max_record_bytes",
    "io_threads",
)

DESCRIPTION = """\
Copy runs and tasks from one store to another, record by record, byte for byte.

SPEC is one of
  file:DIR                                  a file backend's data directory
  jetstream:URL[,URL...]/STREAM[?OPTIONS]   a JetStream stream
  jetstream:[?OPTIONS]                      the stream the settings name (nats_url, nats_stream)
OPTIONS: prefix=P (subject prefix; default the nats_subject_prefix setting),
create=1 (target only: create the stream if missing), replicas=N (of a created stream).
Example: runjournal migrate --from file:./runjournal-data \\
           --to 'jetstream:nats://127.0.0.1:4222/RUNJOURNAL?create=1'

NATS credentials and TLS come from the same settings as `runjournal serve`
(--config FILE, $RUNJOURNAL_NATS_*, or the flags below). Re-running is safe:
what the target already holds is verified and skipped. Exit code 0 when every
run and task is on the target, 1 when any was refused, 2 for a bad command line.
"""


class SpecError(ValueError):
    """A --from/--to SPEC that cannot be used; the message shows the grammar."""


# ---------------------------------------------------------------- endpoints


@dataclass(frozen=True)
class Endpoint:
    """One end of a migration: the settings of the backend it names, and how to name it to people."""

    config: config_module.Config
    label: str

    @property
    def identity(self) -> tuple[object, ...]:
        """Equal for two endpoints that are the same store."""
        c = self.config
        if c.backend == "file":
            return ("file", c.data_dir.resolve())
        return ("jetstream", c.nats_url, c.nats_stream, c.nats_subject_prefix)


def parse_spec(spec: str, settings: config_module.Config, *, target: bool) -> Endpoint:
    """``file:DIR`` or ``jetstream:URLS/STREAM[?prefix=P&create=1&replicas=N]`` (see ``DESCRIPTION``)."""
    kind, sep, rest = spec.partition(":")
    if sep and kind == "file":
        if not rest:
            raise SpecError(f"{spec!r}: name the directory, e.g. file:./runjournal-data")
        return Endpoint(dataclasses.replace(settings, backend="file", data_dir=Path(rest)), spec)
    if sep and kind == "jetstream":
        return Endpoint(_jetstream_config(spec, rest, settings, target=target), spec)
    raise SpecError(f"{spec!r}: a SPEC is file:DIR or jetstream:NATS_URL/STREAM[?prefix=P&create=1]")


def _jetstream_config(spec: str, rest: str, settings: config_module.Config, *, target: bool) -> config_module.Config:
    from runjournal_server.backends.jetstream.config import validate_stream_name, validate_subject_prefix

    location, _, query = rest.partition("?")
    urls, stream = settings.nats_url, settings.nats_stream
    if location:
        scheme_end = location.rfind("://")
        slash = location.find("/", scheme_end + 3) if scheme_end >= 0 else -1
        if slash < 0:
            raise SpecError(f"{spec!r}: name the stream after the URL, e.g. jetstream:nats://127.0.0.1:4222/RUNJOURNAL")
        urls, stream = location[:slash], location[slash + 1 :]
    options = {"prefix": settings.nats_subject_prefix, "create": "0", "replicas": str(settings.nats_replicas)}
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError as err:
        raise SpecError(f"{spec!r}: the options after '?' are not NAME=VALUE pairs joined by '&'") from err
    for name, value in pairs:
        if name not in options:
            raise SpecError(f"{spec!r}: unknown option {name!r}; known: {', '.join(options)}")
        options[name] = value
    try:
        create = _flag(options["create"])
        replicas = int(options["replicas"])
        validate_stream_name(stream)
        validate_subject_prefix(options["prefix"])
    except ValueError as err:
        raise SpecError(f"{spec!r}: {err}") from err
    if create and not target:
        raise SpecError(f"{spec!r}: create=1 applies to the target only; a source stream must exist")
    return dataclasses.replace(
        settings,
        backend="jetstream",
        nats_url=urls,
        nats_stream=stream,
        nats_subject_prefix=options["prefix"],
        nats_create_stream=create,
        nats_replicas=replicas,
    )


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"create={text!r} must be 1 or 0")


# ---------------------------------------------------------------- outcomes


class Status(enum.StrEnum):
    MIGRATED = "migrated"
    PRESENT = "already present"
    FAILED = "failed"
    ABSENT = "absent"
    """Listed by the source but with no complete record: a creation that never became durable."""


@dataclass(frozen=True)
class Outcome:
    kind: str
    """``run`` or ``task``."""
    name: str
    status: Status
    copied: int = 0
    """Records (or task documents) written to the target, or that a dry run would write."""
    message: str = ""


LOCKED_ON_SOURCE = (
    "locked: another process (a server?) holds it on the source and may be writing to it; "
    "stop that server, or retry once it has released the run"
)


class _Refused(Exception):
    """This run or task cannot be migrated; the message says why and what to do."""


# ---------------------------------------------------------------- runs


async def migrate_run(source: Backend, target: Backend, run_id: str, *, dry_run: bool) -> Outcome:
    """Copy one run; the source's writer lock (where there is one) is held until the copy is verified."""
    try:
        journal, stored = await source.open_journal(run_id)
    except RunNotFoundError:
        return Outcome("run", run_id, Status.ABSENT, message="the source holds no complete record of it")
    except RunLockedError:
        return _failed(run_id, LOCKED_ON_SOURCE)
    except JournalError as err:
        return _failed(run_id, _source_problem(err))
    try:
        try:
            want = fold_stored(stored).state()
        except JournalRuleError as err:
            return _failed(run_id, f"corrupt in the source: seq {err.seq} breaks the journal rules: {err.detail}")
        except JournalError as err:
            return _failed(run_id, _source_problem(err))
        copied = await _copy_run(target, run_id, stored, want, dry_run=dry_run)
    except _Refused as err:
        return _failed(run_id, str(err))
    finally:
        await journal.close()
    return Outcome("run", run_id, Status.MIGRATED if copied else Status.PRESENT, copied)


def _failed(run_id: str, message: str) -> Outcome:
    return Outcome("run", run_id, Status.FAILED, message=message)


def _source_problem(err: JournalError) -> str:
    if isinstance(err, CorruptJournalError):
        return f"corrupt in the source: {err.message}"
    return f"cannot read it from the source ({err.reason}): {err.message}"


async def _copy_run(target: Backend, run_id: str, stored: list[StoredRecord], want: RunState, *, dry_run: bool) -> int:
    """Append what the target lacks and verify the result; the number of records written."""
    journal: Journal | None = None
    try:
        try:
            if dry_run:
                present = await target.load(run_id)
            else:
                journal, present = await target.open_journal(run_id)
        except RunNotFoundError:
            present = []
        except RunLockedError as err:
            raise _Refused(
                "locked on the target: a server there holds it; stop it and run the migration again"
            ) from err
        except JournalError as err:
            raise _Refused(f"cannot read it from the target ({err.reason}): {err.message}") from err
        missing = stored[verified_prefix(stored, present) :]
        if dry_run or not missing:
            return len(missing)
        try:
            if journal is None:
                journal = await target.create_journal(run_id, missing[0])
                missing = missing[1:]
            for batch in batches(missing):
                await journal.append(batch)
        except RunExistsError as err:
            raise _Refused("it was created on the target while this migration ran; run the migration again") from err
        except WriteRaceError as err:
            raise _Refused(
                f"another writer appended to it on the target meanwhile ({err}); run the migration again"
            ) from err
        except JournalError as err:
            raise _Refused(
                f"writing it to the target failed ({err.reason}): {err.message}; run the migration again"
            ) from err
        await _verify(target, run_id, stored, want)
        return len(stored) - len(present)
    finally:
        if journal is not None:
            await journal.close()


def verified_prefix(source: Sequence[StoredRecord], present: Sequence[StoredRecord]) -> int:
    """How many of the source's records the target already holds, each verified byte for byte.

    The append rule's duplicate test at every occupied seq: the same line is a
    duplicate (skipped), a different one a conflict (the run is refused).
    """
    last = len(present)
    for record in source[:last]:
        if check_append(last, record.seq, record.line, present[record.seq - 1].line) is AppendDecision.CONFLICT:
            raise _Refused(
                f"conflict: the target holds a different record at seq {record.seq}; the run was written on both "
                "sides: keep one (move the other away) and run the migration again"
            )
    if last > len(source):
        raise _Refused(
            f"conflict: the target holds {last} records, the source only {len(source)} (did the run go on at the "
            "target?); nothing was written"
        )
    return last


def batches(records: Sequence[StoredRecord]) -> Iterator[list[StoredRecord]]:
    """Consecutive slices of at most ``BATCH_RECORDS`` records and ``BATCH_BYTES`` bytes (one record at least)."""
    batch: list[StoredRecord] = []
    size = 0
    for record in records:
        if batch and (len(batch) == BATCH_RECORDS or size + len(record.line) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += len(record.line)
    if batch:
        yield batch


async def _verify(target: Backend, run_id: str, stored: list[StoredRecord], want: RunState) -> None:
    """The target's copy, read back, is the source's lines and folds to the source's state."""
    try:
        copy = await target.load(run_id)
        same_state = fold_stored(copy).state() == want
    except (JournalError, JournalRuleError) as err:
        raise _Refused(f"reading the copy back from the target failed: {err}") from err
    if [r.line for r in copy] != [r.line for r in stored]:
        raise _Refused("the copy read back from the target differs from the source")
    if not same_state:
        raise _Refused("the copy on the target folds to a different state than the source")


# ---------------------------------------------------------------- tasks


async def migrate_task(source: TaskStore, target: TaskStore, task_id: str, *, dry_run: bool) -> Outcome:
    """Copy a task's request and outcome documents, byte for byte, create-only."""
    try:
        request, outcome = await source.get(task_id)
        if request is None:
            return Outcome("task", task_id, Status.ABSENT, message="the source holds no request for it")
        have_request, have_outcome = await target.get(task_id)
        _check_document(task_id, "request", request, have_request)
        if have_outcome is not None:
            _check_document(task_id, "outcome", outcome, have_outcome)
        todo = [
            (kind, body)
            for kind, body, have in (("request", request, have_request), ("outcome", outcome, have_outcome))
            if body is not None and have is None
        ]
        if dry_run or not todo:
            return Outcome("task", task_id, Status.MIGRATED if todo else Status.PRESENT, len(todo))
        for kind, body in todo:
            create = target.create_request if kind == "request" else target.create_outcome
            _check_document(task_id, kind, body, await create(task_id, body))
    except _Refused as err:
        return Outcome("task", task_id, Status.FAILED, message=str(err))
    except JournalError as err:
        return Outcome("task", task_id, Status.FAILED, message=f"{err.reason}: {err.message}")
    return Outcome("task", task_id, Status.MIGRATED, len(todo))


def _check_document(task_id: str, kind: str, want: bytes | None, stored: bytes | None) -> None:
    """A document the target holds must be the source's, byte for byte."""
    if stored is None:
        return
    if want is None:
        raise _Refused("conflict: the target holds an outcome the source does not have (completed at the target?)")
    if stored != want:
        raise _Refused(f"conflict: the target holds a different {kind} under this task id; keep one and run again")


# ---------------------------------------------------------------- progress


class Progress:
    """Counts on stderr: one line rewritten in place on a terminal, a plain line now and then otherwise."""

    def __init__(self, what: str, total: int, stream: TextIO) -> None:
        self._what = what
        self._total = total
        self._stream = stream
        self._tty = stream.isatty()
        self._counts = dict.fromkeys(Status, 0)
        self._done = 0
        self._shown_at = time.monotonic()
        self._shown_tenth = 0

    def add(self, outcome: Outcome) -> None:
        self._counts[outcome.status] += 1
        self._done += 1
        now = time.monotonic()
        tenth = self._done * 10 // max(self._total, 1)
        if self._tty:
            due = now - self._shown_at >= TTY_PROGRESS_SECONDS
        else:
            due = tenth > self._shown_tenth or now - self._shown_at >= PLAIN_PROGRESS_SECONDS
        if due or self._done == self._total:
            self._shown_tenth = tenth
            self._show(now)

    def _show(self, now: float) -> None:
        self._shown_at = now
        line = f"{self._what}: {self._done}/{self._total}  " + "  ".join(
            f"{status.value} {count}" for status, count in self._counts.items() if count or status != Status.ABSENT
        )
        end = "\n" if not self._tty or self._done == self._total else ""
        self._stream.write(("\r\x1b[K" if self._tty else "") + line + end)
        self._stream.flush()


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class Options:
    run_ids: tuple[str, ...] = ()
    dry_run: bool = False
    concurrency: int = DEFAULT_CONCURRENCY


async def migrate(source_end: Endpoint, target_end: Endpoint, options: Options, err: TextIO) -> list[Outcome]:
    """Migrate every run (or the named ones) and, unless runs were named, every task."""
    from runjournal_server.backends import make_backend

    executor = ThreadPoolExecutor(max_workers=source_end.config.io_threads, thread_name_prefix="runjournal-migrate")
    started: list[Backend] = []
    try:
        for end in (source_end, target_end):
            backend = make_backend(end.config, executor)
            try:
                await backend.start()
            except Exception as start_error:
                hint = " (a dry run never creates a stream)" if options.dry_run and end is target_end else ""
                raise SpecError(f"cannot open {end.label}: {start_error}{hint}") from start_error
            started.append(backend)
        source, target = started
        run_ids = list(options.run_ids) or sorted(await source.list_run_ids())

        async def one_run(run_id: str) -> Outcome:
            outcome = await migrate_run(source, target, run_id, dry_run=options.dry_run)
            if outcome.status == Status.ABSENT and options.run_ids:
                return dataclasses.replace(outcome, status=Status.FAILED, message="not found in the source")
            return outcome

        outcomes = await _all("runs", run_ids, one_run, options, err)
        if not options.run_ids:
            source_tasks, target_tasks = source.task_store(), target.task_store()
            task_ids = sorted(await source_tasks.list_task_ids())

            async def one_task(task_id: str) -> Outcome:
                return await migrate_task(source_tasks, target_tasks, task_id, dry_run=options.dry_run)

            outcomes += await _all("tasks", task_ids, one_task, options, err)
        return outcomes
    finally:
        for backend in reversed(started):
            await backend.close()
        executor.shutdown(wait=True)


async def _all(
    what: str, names: Sequence[str], one: Callable[[str], Awaitable[Outcome]], options: Options, err: TextIO
) -> list[Outcome]:
    """Run ``one`` for every name, ``options.concurrency`` at a time, counting progress."""
    progress = Progress(what, len(names), err)
    gate = asyncio.Semaphore(options.concurrency)

    async def guarded(name: str) -> Outcome:
        async with gate:
            try:
                outcome = await one(name)
            except Exception as unexpected:  # one broken run must not stop the others
                outcome = Outcome(what[:-1], name, Status.FAILED, message=f"{type(unexpected).__name__}: {unexpected}")
        progress.add(outcome)
        return outcome

    return list(await asyncio.gather(*(guarded(name) for name in names)))


def summary(outcomes: Sequence[Outcome], *, kinds: Sequence[str], dry_run: bool) -> list[str]:
    """One line per kind: ``runs: 198 migrated, 0 already present, 2 failed (1234 records copied)``."""
    lines = []
    for kind in kinds:
        mine = [o for o in outcomes if o.kind == kind]
        count = {status: sum(1 for o in mine if o.status == status) for status in Status}
        copied = sum(o.copied for o in mine)
        unit = "records" if kind == "run" else "documents"
        absent = f", {count[Status.ABSENT]} absent" if count[Status.ABSENT] else ""
        lines.append(
            f"{kind}s: {count[Status.MIGRATED]} {'to migrate' if dry_run else 'migrated'}, "
            f"{count[Status.PRESENT]} already present, {count[Status.FAILED]} failed{absent} "
            f"({copied} {unit} {'to copy' if dry_run else 'copied'})"
        )
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", required=True, metavar="SPEC", help="where the runs are now")
    parser.add_argument("--to", dest="target", required=True, metavar="SPEC", help="where they go")
    parser.add_argument(
        "--run",
        dest="run_ids",
        action="append",
        default=[],
        metavar="RUN_ID",
        help="migrate only this run (repeatable); tasks are then left alone",
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would be copied; write nothing")
    parser.add_argument(
        "--concurrency",
        type=_concurrency,
        default=DEFAULT_CONCURRENCY,
        help=f"runs copied at once, 1-{MAX_CONCURRENCY} (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument("--config", type=Path, help=f"TOML file of settings (or ${config_module.CONFIG_FILE_ENV})")
    for setting in config_module.SETTINGS:
        if setting.name in SETTINGS:
            default = "unset" if setting.secret else setting.default
            parser.add_argument(
                "--" + setting.name.replace("_", "-"),
                dest=setting.name,
                default=None,
                help=f"{setting.help} (env {config_module.ENV_PREFIX}{setting.name.upper()}; default {default})",
            )


def _concurrency(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_CONCURRENCY}")
    return value


def main(args: argparse.Namespace) -> int:
    """``runjournal migrate``: 0 when everything is on the target, 1 when anything was refused, 2 for bad input."""
    try:
        settings = config_module.load(args)
        source = parse_spec(args.source, settings, target=False)
        target = parse_spec(args.target, settings, target=True)
        if source.identity == target.identity:
            raise SpecError(f"{args.source!r} and {args.target!r} are the same store")
        if args.dry_run and target.config.nats_create_stream:
            target = dataclasses.replace(target, config=dataclasses.replace(target.config, nats_create_stream=False))
        if source.config.backend == "file" and not source.config.data_dir.is_dir():
            raise SpecError(f"{args.source!r}: {source.config.data_dir} is not a directory")
        if args.dry_run and target.config.backend == "file" and not target.config.data_dir.is_dir():
            raise SpecError(f"{args.target!r}: {target.config.data_dir} does not exist (a dry run creates nothing)")
    except (config_module.ConfigError, SpecError) as err:
        print(f"runjournal migrate: {err}", file=sys.stderr)
        return 2
    # The backends log a few warnings (e.g. a stream with one replica); show them plainly.
    logging.basicConfig(level=logging.WARNING, format="runjournal migrate: %(message)s")
    options = Options(tuple(args.run_ids), args.dry_run, args.concurrency)
    try:
        outcomes = asyncio.run(migrate(source, target, options, sys.stderr))
    except SpecError as err:
        print(f"runjournal migrate: {err}", file=sys.stderr)
        return 1
    for outcome in outcomes:
        if outcome.status in (Status.FAILED, Status.ABSENT):
            verdict = "not migrated" if outcome.status == Status.FAILED else "skipped"
            print(f"runjournal migrate: {outcome.kind} {outcome.name!r} {verdict}: {outcome.message}", file=sys.stderr)
    prefix = "dry run: " if args.dry_run else ""
    kinds = ["run"] if options.run_ids else ["run", "task"]
    for line in summary(outcomes, kinds=kinds, dry_run=args.dry_run):
        print(prefix + line, flush=True)
    return 1 if any(o.status == Status.FAILED for o in outcomes) else 0
