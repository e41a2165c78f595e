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

A deleted run is never copied: its tombstone is (``migrate_tombstone``), so
the run cannot reappear on the target, and a copy an earlier migration made
is deleted there too.

Tasks are copied the same way (create-only request and outcome documents,
same bytes; identical bytes present are skipped, different ones a conflict).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from runjournal_server import config as config_module
from runjournal_server.backends.base import Backend
from runjournal_server.tools.migrate_copy import (
    Outcome,
    Progress,
    Status,
    migrate_run,
    migrate_task,
    migrate_task_tombstone,
    migrate_tombstone,
)
from runjournal_server.tools.migrate_endpoints import Endpoint, SpecError, parse_spec

DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 32
"""Below JetStream's 50 atomic batches in flight per stream."""
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
        deleted = {t.run_id for t in await source.tombstones()} if options.run_ids else set()

        async def one_run(run_id: str) -> Outcome:
            outcome = await migrate_run(source, target, run_id, dry_run=options.dry_run)
            if outcome.status == Status.ABSENT and options.run_ids and outcome.name not in deleted:
                return dataclasses.replace(outcome, status=Status.FAILED, message="not found in the source")
            return outcome

        outcomes = await _all("runs", run_ids, one_run, options, err)
        tombstones = {t.run_id: t for t in await source.tombstones()}
        wanted = sorted(set(options.run_ids) & set(tombstones)) if options.run_ids else sorted(tombstones)

        async def one_tombstone(run_id: str) -> Outcome:
            return await migrate_tombstone(target, tombstones[run_id], dry_run=options.dry_run)

        outcomes += await _all("tombstones", wanted, one_tombstone, options, err)
        if not options.run_ids:
            source_tasks, target_tasks = source.task_store(), target.task_store()
            task_ids = sorted(await source_tasks.list_task_ids())

            async def one_task(task_id: str) -> Outcome:
                return await migrate_task(source_tasks, target_tasks, task_id, dry_run=options.dry_run)

            outcomes += await _all("tasks", task_ids, one_task, options, err)
            deleted_tasks = sorted(await source_tasks.deleted_task_ids())

            async def one_task_tombstone(task_id: str) -> Outcome:
                return await migrate_task_tombstone(target_tasks, task_id, dry_run=options.dry_run)

            outcomes += await _all("task tombstones", deleted_tasks, one_task_tombstone, options, err)
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
    kinds = ["run", "tombstone"] if options.run_ids else ["run", "tombstone", "task", "task tombstone"]
    for line in summary(outcomes, kinds=kinds, dry_run=args.dry_run):
        print(prefix + line, flush=True)
    return 1 if any(o.status == Status.FAILED for o in outcomes) else 0
