"""The server's commands of ``runjournal``: ``serve``, ``migrate`` and ``dev-nats``.

``runjournal serve`` runs the server (file backend in ./runjournal-data on
127.0.0.1:50051 with no flags). ``migrate`` copies runs and tasks between
stores (``tools/migrate.py``), and ``dev-nats`` runs a local nats-server for the
JetStream backend (``tools/devnats.py``). The ``runjournal`` command itself is
``runjournal.cli`` in the client package, which hands these three over to
``main`` here; the commands for people live there and need no server extra.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from runjournal_server import config as config_module

COMMANDS = ("serve", "migrate", "dev-nats")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one of the server's commands (``argv`` starts with its name); its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(words[0] if words else None)
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return int(args.handler(args))


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or only the parser of ``command`` when it is one of ours.

    The other commands' modules are then not imported: a server start does
    not load the migration, the dev nats-server or the client's command line
    (their one-line help, shown only by ``--help`` here), which every server
    process the tests start spent about a tenth of its start on.
    """
    parser = argparse.ArgumentParser(prog="runjournal", description="Durable journals for AI-agent runs.")
    commands = parser.add_subparsers(dest="command")
    if command in COMMANDS:
        for name in COMMANDS:
            if name == command:
                _add_command(commands, name, None)
            else:
                commands.add_parser(name)  # named in the usage line of an error, as when all are there
        return parser
    from runjournal.server_commands import SERVER_COMMANDS

    for name in COMMANDS:
        _add_command(commands, name, SERVER_COMMANDS[name])
    return parser


def _add_command(commands: argparse._SubParsersAction, name: str, help_line: str | None) -> None:
    if name == "serve":
        serve = commands.add_parser("serve", help=help_line)
        config_module.add_arguments(serve)
        serve.set_defaults(handler=_serve)
    elif name == "migrate":
        from runjournal_server.tools import migrate

        migrating = commands.add_parser(
            "migrate",
            help=help_line,
            description=migrate.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        migrate.add_arguments(migrating)
        migrating.set_defaults(handler=migrate.main)
    else:
        from runjournal_server.tools import devnats

        dev_nats = commands.add_parser("dev-nats", help=help_line)
        devnats.add_arguments(dev_nats)
        dev_nats.set_defaults(handler=devnats.main)


def _serve(args: argparse.Namespace) -> int:
    from runjournal_server.app import ServerStartError, event_loop_factory, serve

    try:
        config = config_module.load(args)
    except config_module.ConfigError as err:
        print(f"runjournal: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def ready(address: str) -> None:
        # One machine-readable line on stdout, for scripts and tests started with port 0.
        print(f"runjournal listening on {address}", flush=True)

    def metrics_ready(address: str) -> None:
        # A second such line when metrics are served (the port, too, may have been 0).
        print(f"runjournal metrics on {address}", flush=True)

    try:
        with asyncio.Runner(loop_factory=event_loop_factory(config.event_loop)) as runner:
            runner.run(serve(config, on_ready=ready, on_metrics_ready=metrics_ready))
    except ServerStartError as err:
        print(f"runjournal: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
