"""What every people's command shares: the server address flag, the client it makes, and KEY=VALUE labels."""

from __future__ import annotations

import argparse
import os
import sys

from runjournal.client import JournalClient

DEFAULT_ADDRESS = "127.0.0.1:50051"
TOKEN_ENV = "RUNJOURNAL_TOKEN"
"""The bearer token the people's commands send, when the server has token auth on."""


def add_address(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--address", default=DEFAULT_ADDRESS, help=f"server address (default {DEFAULT_ADDRESS})")


def client_of(args: argparse.Namespace) -> JournalClient:
    """A client of ``--address``, sending ``$RUNJOURNAL_TOKEN`` as its bearer token when set.

    The token comes from the environment only: a command-line flag would show
    it to every user of the machine in the process list.
    """
    token = os.environ.get(TOKEN_ENV, "")
    metadata = [("authorization", f"Bearer {token}")] if token else []
    return JournalClient(args.address, metadata=metadata)


def label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def confirmed(question: str, *, yes: bool, what: str) -> bool:
    """True when the person agreed (``--yes``, or "y" at the prompt); a refusal says why on stderr.

    Without a terminal on stdin nobody can answer the prompt (a script, a pipe,
    cron): the command refuses rather than guess, and ``--yes`` says it on purpose.
    """
    if yes:
        return True
    if not sys.stdin.isatty():
        print(f"runjournal: refusing to {what} without --yes: stdin is not a terminal to confirm on", file=sys.stderr)
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print(f"runjournal: did not {what}", file=sys.stderr)
    return False
