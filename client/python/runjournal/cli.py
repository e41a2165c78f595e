"""``runjournal``: the commands for people, and the door to the server's commands.

``runs list``, ``runs show``, ``inbox``, ``answer`` and ``approve`` talk to a
running server through ``JournalClient``, sending ``$RUNJOURNAL_TOKEN`` as the
bearer token when it is set; they need only ``pip install runjournal``. So do
the run-lifecycle commands of ``lifecycle_cli`` (``runs watch``, ``runs fork``,
``runs delete``, ``gc``, ``inbox --watch``), registered here. ``export otel``
(``export_otel``) also needs the otel extra, and says so when it is missing.

``serve``, ``migrate`` and ``dev-nats`` belong to the server package
(``runjournal_server.cli``). ``main`` hands them over whole, their flags
included, and it is the only place the client imports the server: lazily, so
without the server extra installed they say what to install and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from runjournal import export_otel, lifecycle_cli
from runjournal._cli_support import TOKEN_ENV
from runjournal._cli_support import add_address as _add_address
from runjournal._cli_support import client_of as _client
from runjournal._cli_support import label as _label
from runjournal.errors import RunJournalError
from runjournal.render import render_inbox, render_state, render_tree, safe_text
from runjournal.server_commands import SERVER_COMMANDS
from runjournal.v1 import state_pb2

SERVER_EXTRA = "pip install 'runjournal[server]'"
NEEDS_SERVER_EXIT_CODE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``runjournal`` command; its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    # The top level takes no option but -h, so a server command is always the first word.
    if words and words[0] in SERVER_COMMANDS:
        return _server_command(words)
    if words and words[0] == "web":
        from runjournal.web.command import main as web_main  # imports the web extra only when it runs

        return web_main(words[1:])
    parser = _parser()
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args))
    except RunJournalError as err:
        # People read the reason and the server's message; no traceback. The
        # message may quote journal text: escaped like everything shown.
        label = err.reason or err.code.name
        print(f"runjournal: {safe_text(label)}: {safe_text(err.message)}", file=sys.stderr)
        return 1


def _server_command(words: list[str]) -> int:
    """``words`` run by the server package's ``main``, or what to install when it cannot run.

    ``runjournal_server`` itself missing, or a module outside our packages (a
    dependency only the server extra brings), means the extra is not
    installed; a module of ours missing inside a package that is there is a
    bug and is raised.
    """
    try:
        from runjournal_server.cli import main as server_main  # the client's one import of the server

        return server_main(words)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if missing != "runjournal_server" and missing.partition(".")[0] in ("runjournal", "runjournal_server"):
            raise
        print(
            f"runjournal: {words[0]} needs the server: {SERVER_EXTRA} (missing module {missing!r})",
            file=sys.stderr,
        )
        return NEEDS_SERVER_EXIT_CODE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="runjournal", description="Durable journals for AI-agent runs.")
    commands = parser.add_subparsers(dest="command")
    # The server's commands are listed here for --help only: main hands them over before parsing.
    commands.add_parser("serve", help=SERVER_COMMANDS["serve"], add_help=False)

    runs = commands.add_parser("runs", help="list and show runs on a server")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_commands.add_parser("list", help="list runs, newest first")
    _add_address(listing)
    listing.add_argument("--status", help="only runs with this status, e.g. open, suspended, corrupt")
    listing.add_argument(
        "--label", action="append", default=[], type=_label, metavar="KEY=VALUE", help="only runs with label"
    )
    listing.add_argument("--task", default="", metavar="TASK_ID", help="only runs serving this task")
    listing.add_argument("--parent", default="", metavar="RUN_ID", help="only runs forked from this run")
    listing.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    listing.set_defaults(handler=_runs_list)
    show = runs_commands.add_parser("show", help="show a run's folded conversation")
    _add_address(show)
    show.add_argument("run_id")
    show.add_argument(
        "--uncompacted", action="store_true", help="every message since the prompt, as if no compaction had happened"
    )
    show.set_defaults(handler=_runs_show)
    lifecycle_cli.add_runs_commands(runs_commands)

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
    inbox.add_argument("--watch", action="store_true", help="keep the inbox live: print each change (Ctrl-C stops)")
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
    lifecycle_cli.add_gc_command(commands)
    export_otel.add_export_command(commands)

    commands.add_parser("web", help="serve the web inbox in a browser (needs the web extra)", add_help=False)
    commands.add_parser("migrate", help=SERVER_COMMANDS["migrate"], add_help=False)
    commands.add_parser("dev-nats", help=SERVER_COMMANDS["dev-nats"], add_help=False)
    return parser


def _runs_list(args: argparse.Namespace) -> int:
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
        runs = client.iter_runs(status=status, labels=labels, task_id=args.task, parent_run_id=args.parent)
        for count, run in enumerate(runs):
            if count >= args.limit:
                break
            state = state_pb2.RunStatus.Name(run.status).removeprefix("RUN_STATUS_").lower()
            created = run.created_at.ToJsonString() if run.HasField("created_at") else "-"
            print(f"{safe_text(run.run_id):<40} {state:<15} {run.last_seq:>8}  {created}")
            if run.corruption:
                print(f"    {safe_text(run.corruption)}")
    return 0


def _runs_show(args: argparse.Namespace) -> int:
    with _client(args) as client:
        state = client.fold(args.run_id, uncompacted=args.uncompacted)
        print(render_state(state))
        root = state.meta.spawned_by.root_run_id or args.run_id
        tree = render_tree(args.run_id, client.iter_runs(root_run_id=root))
        if tree:
            print()
            print(tree)
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
    if args.watch:
        return lifecycle_cli.watch_inbox(args)
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
