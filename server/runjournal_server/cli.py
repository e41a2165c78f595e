"""``runjournal``: serve the journal, and a few commands for people.

``runjournal serve`` runs the server (file backend in ./runjournal-data on
127.0.0.1:50051 with no flags). ``runs list``, ``runs show``, ``inbox``,
``answer`` and ``approve`` talk to a running server through the Python client,
sending ``$RUNJOURNAL_TOKEN`` as the bearer token when it is set.
``migrate`` copies runs and tasks between stores (``migrate.py``), and
``dev-nats`` runs a local nats-server for the JetStream backend (``devnats.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from runjournal_server import config as config_module
from runjournal_server import devnats, migrate
from runjournal_server.render import safe_text

if TYPE_CHECKING:  # the client is imported only by the commands that talk to a server
    from runjournal import JournalClient

DEFAULT_ADDRESS = "127.0.0.1:50051"
TOKEN_ENV = "RUNJOURNAL_TOKEN"
"""The bearer token the people's commands send, when the server has token auth on."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if args.command in ("serve", "migrate", "dev-nats"):
        return int(args.handler(args))
    from runjournal.errors import RunJournalError

    try:
        return int(args.handler(args))
    except RunJournalError as err:
        # People read the reason and the server's message; no traceback. The
        # message may quote journal text: escaped like everything shown.
        label = err.reason or err.code.name
        print(f"runjournal: {safe_text(label)}: {safe_text(err.message)}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="runjournal", description="Durable journals for AI-agent runs.")
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the gRPC journal server")
    config_module.add_arguments(serve)
    serve.set_defaults(handler=_serve)

    runs = commands.add_parser("runs", help="list and show runs on a server")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_commands.add_parser("list", help="list runs, newest first")
    _add_address(listing)
    listing.add_argument("--status", help="only runs with this status, e.g. open, suspended, corrupt")
    listing.add_argument(
        "--label", action="append", default=[], type=_label, metavar="KEY=VALUE", help="only runs with label"
    )
    listing.add_argument("--task", default="", metavar="TASK_ID", help="only runs serving this task")
    listing.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    listing.set_defaults(handler=_runs_list)
    show = runs_commands.add_parser("show", help="show a run's folded conversation")
    _add_address(show)
    show.add_argument("run_id")
    show.set_defaults(handler=_runs_show)

    answer = commands.add_parser("answer", help="answer a deferred tool call")
    _add_address(answer)
    answer.add_argument("run_id")
    answer.add_argument("call_id")
    source = answer.add_mutually_exclusive_group(required=True)
    source.add_argument("--result-file", type=Path, help="file holding the result text ('-' for stdin)")
    source.add_argument("--result", help="the result text")
    answer.add_argument("--error", action="store_true", help="the answer reports a failure")
    answer.set_defaults(handler=_answer)

    inbox = commands.add_parser("inbox", help="list the tool calls waiting for a person (an answer or a decision)")
    _add_address(inbox)
    inbox.add_argument(
        "--label", action="append", default=[], type=_label, metavar="KEY=VALUE", help="only runs with label"
    )
    inbox.add_argument("--task", default="", metavar="TASK_ID", help="only runs serving this task")
    inbox.set_defaults(handler=_inbox)

    approve = commands.add_parser("approve", help="approve or deny a tool call that waits for a decision")
    _add_address(approve)
    approve.add_argument("run_id")
    approve.add_argument("call_id")
    decision = approve.add_mutually_exclusive_group(required=True)
    decision.add_argument("--approve", dest="decision", action="store_const", const="approved", help="let it run")
    decision.add_argument("--deny", dest="decision", action="store_const", const="denied", help="refuse it")
    approve.add_argument("--reason", default="", help="why, for the record")
    approve.add_argument(
        "--approver", help=f'who decides (default: $USER, else "cli"; with ${TOKEN_ENV} set, the token\'s name)'
    )
    approve.set_defaults(handler=_approve)

    migrating = commands.add_parser(
        "migrate",
        help="copy runs and tasks from one store to another, byte for byte (file, jetstream)",
        description=migrate.DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate.add_arguments(migrating)
    migrating.set_defaults(handler=migrate.main)

    dev_nats = commands.add_parser(
        "dev-nats", help="run a local nats-server set up for the jetstream backend (for experiments)"
    )
    devnats.add_arguments(dev_nats)
    dev_nats.set_defaults(handler=devnats.main)
    return parser


def _add_address(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--address", default=DEFAULT_ADDRESS, help=f"server address (default {DEFAULT_ADDRESS})")


def _serve(args: argparse.Namespace) -> int:
    from runjournal_server.app import ServerStartError, serve

    try:
        config = config_module.load(args)
    except config_module.ConfigError as err:
        print(f"runjournal: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def ready(address: str) -> None:
        # One machine-readable line on stdout, for scripts and tests started with port 0.
        print(f"runjournal listening on {address}", flush=True)

    try:
        asyncio.run(serve(config, on_ready=ready))
    except ServerStartError as err:
        print(f"runjournal: {err}", file=sys.stderr)
        return 1
    return 0


def _runs_list(args: argparse.Namespace) -> int:
    from runjournal.v1 import state_pb2

    status = 0
    if args.status:
        name = "RUN_STATUS_" + args.status.upper()
        if name not in state_pb2.RunStatus.keys():  # noqa: SIM118 - an enum wrapper, not a dict
            print(f"runjournal: unknown status {args.status!r}", file=sys.stderr)
            return 2
        status = state_pb2.RunStatus.Value(name)
    labels = dict(args.label)
    with _client(args) as client:
        print(f"{'RUN':<40} {'STATUS':<15} {'LAST SEQ':>8}  CREATED")
        for count, run in enumerate(client.iter_runs(status=status, labels=labels, task_id=args.task)):
            if count >= args.limit:
                break
            state = state_pb2.RunStatus.Name(run.status).removeprefix("RUN_STATUS_").lower()
            created = run.created_at.ToJsonString() if run.HasField("created_at") else "-"
            print(f"{safe_text(run.run_id):<40} {state:<15} {run.last_seq:>8}  {created}")
            if run.corruption:
                print(f"    {safe_text(run.corruption)}")
    return 0


def _runs_show(args: argparse.Namespace) -> int:
    from runjournal_server.render import render_state

    with _client(args) as client:
        print(render_state(client.fold(args.run_id)))
    return 0


def _answer(args: argparse.Namespace) -> int:
    if args.result_file is not None:
        text = sys.stdin.read() if str(args.result_file) == "-" else args.result_file.read_text(encoding="utf-8")
    else:
        text = args.result
    with _client(args) as client:
        seq = client.answer(args.run_id, args.call_id, text=text, is_error=args.error)
    print(f"answered {safe_text(args.call_id)} in run {safe_text(args.run_id)} at seq {seq}")
    return 0


def _inbox(args: argparse.Namespace) -> int:
    from runjournal_server.render import render_inbox

    with _client(args) as client:
        print(render_inbox(client.inbox(labels=dict(args.label), task_id=args.task)))
    return 0


def _approve(args: argparse.Namespace) -> int:
    # With a token the server records the token's name as the approver (and
    # refuses any other), so only an explicit --approver is sent.
    default = "" if os.environ.get(TOKEN_ENV) else os.environ.get("USER") or "cli"
    approver = args.approver or default
    with _client(args) as client:
        seq = client.approve(args.run_id, args.call_id, args.decision, approver, args.reason)
    who = safe_text(approver or "the token holder")
    print(f"{args.decision} {safe_text(args.call_id)} in run {safe_text(args.run_id)} at seq {seq} (by {who})")
    return 0


def _client(args: argparse.Namespace) -> JournalClient:
    """A client of ``--address``, sending ``$RUNJOURNAL_TOKEN`` as its bearer token when set.

    The token comes from the environment only: a command-line flag would show
    it to every user of the machine in the process list.
    """
    from runjournal import JournalClient

    token = os.environ.get(TOKEN_ENV, "")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    return JournalClient(args.address, metadata=metadata)


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


if __name__ == "__main__":
    raise SystemExit(main())
