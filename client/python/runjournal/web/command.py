"""``runjournal web``: serve the web inbox until SIGTERM or SIGINT.

Imported by ``runjournal.cli`` only when the command is asked for, so the
client works without the ``web`` extra; without it the command says what to
install and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import signal
import sys
from collections.abc import Sequence

from runjournal.web.access import DEFAULT_SESSION_SECONDS
from runjournal.web.settings import (
    ACCESS_TOKEN_ENV,
    DEFAULT_LISTEN,
    JOURNAL_TOKEN_ENV,
    READ_TOKEN_ENV,
    WebSettings,
    new_access_token,
)

READY_PREFIX = "runjournal web on "
WEB_EXTRA = "pip install 'runjournal[web]'"
NEEDS_EXTRA_EXIT_CODE = 2
BAD_SETTINGS_EXIT_CODE = 2


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        from runjournal.web.app import create_app  # aiohttp and Jinja2: the web extra
    except ModuleNotFoundError as err:
        print(f"runjournal: web needs the web extra: {WEB_EXTRA} (missing module {err.name!r})", file=sys.stderr)
        return NEEDS_EXTRA_EXIT_CODE
    host, _, port = args.listen.rpartition(":")
    generated = not os.environ.get(ACCESS_TOKEN_ENV)
    settings = WebSettings(
        journal_address=args.address,
        access_token=os.environ.get(ACCESS_TOKEN_ENV) or new_access_token(),
        journal_token=os.environ.get(JOURNAL_TOKEN_ENV, ""),
        approver=args.approver or os.environ.get("USER") or "web",
        secure_cookies=args.secure_cookies,
        session_seconds=round(args.session_hours * 3600),
        read_token=os.environ.get(READ_TOKEN_ENV, ""),
    )
    if settings.read_token and settings.read_token == settings.access_token:
        print(f"runjournal web: ${READ_TOKEN_ENV} must differ from ${ACCESS_TOKEN_ENV}", file=sys.stderr)
        return BAD_SETTINGS_EXIT_CODE
    if not _is_loopback(host) and not args.secure_cookies:
        print(
            f"runjournal web: listening on {host}, beyond loopback: put TLS in front and pass --secure-cookies",
            file=sys.stderr,
        )
    return asyncio.run(_serve(create_app(settings), host.strip("[]"), int(port), settings, generated))


async def _serve(app: object, host: str, port: int, settings: WebSettings, generated: bool) -> int:
    from aiohttp import web

    assert isinstance(app, web.Application)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=5)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_host, bound_port = runner.addresses[0][:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"{READY_PREFIX}http://{shown_host}:{bound_port}/", flush=True)
    if generated:
        print(f"access token (set ${ACCESS_TOKEN_ENV} to choose it): {settings.access_token}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await runner.cleanup()
    return 0


def _positive_hours(text: str) -> float:
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not 1 / 3600 <= hours <= 24 * 365:
        raise argparse.ArgumentTypeError("a session lasts from a second (1/3600) to a year (8760) hours")
    return hours


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runjournal web",
        description=(
            "Serve the web inbox: the runs waiting for a person, each run's pending calls and last turns, "
            "and forms to answer, approve and deny. Talks gRPC to the journal server, sending "
            f"${JOURNAL_TOKEN_ENV} as its bearer token when set; people sign in with ${ACCESS_TOKEN_ENV} "
            f"(generated and printed when unset), or read-only with ${READ_TOKEN_ENV} when set."
        ),
    )
    parser.add_argument("--address", default="127.0.0.1:50051", help="journal server (default 127.0.0.1:50051)")
    parser.add_argument(
        "--listen", default=DEFAULT_LISTEN, help=f"HTTP address (default {DEFAULT_LISTEN}; port 0 picks a free port)"
    )
    parser.add_argument(
        "--approver",
        help=f'the approver recorded while the journal server has auth off (default $USER, else "web"); '
        f"with ${JOURNAL_TOKEN_ENV} set the server records the token's name",
    )
    parser.add_argument(
        "--secure-cookies", action="store_true", help="mark cookies Secure (when a TLS proxy is in front)"
    )
    parser.add_argument(
        "--session-hours",
        type=_positive_hours,
        default=DEFAULT_SESSION_SECONDS / 3600,
        help="how long a sign-in lasts before the access token is asked again "
        f"(default {DEFAULT_SESSION_SECONDS // 3600})",
    )
    return parser
