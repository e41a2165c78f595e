"""The server's packages import only downward, and the client's public surface is pinned.

A static check of every import in every file (module level, in functions and
under ``TYPE_CHECKING`` alike: a type-only import upward is still a coupling),
as the core purity test does for the core. The layers, lowest first::

    core  <-  backends, observability  <-  runs  <-  listing  <-  api  <-  app, cli

``config``, ``tasks``, ``retention`` and ``tools`` sit beside them, with what
each may read written below. A package that needs something from above it
has that thing in the wrong place: move the thing down, never the rule up.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import runjournal
import runjournal_server

SERVER_DIR = Path(runjournal_server.__file__).parent
CLIENT_DIR = Path(runjournal.__file__).parent

MAY_IMPORT: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "backends": frozenset({"core"}),
    "observability": frozenset({"core"}),
    "runs": frozenset({"core", "backends", "observability"}),
    "listing": frozenset({"core", "backends", "runs"}),
    "task_index": frozenset({"core", "backends"}),
    "tasks": frozenset({"core", "backends", "task_index"}),
    "config": frozenset({"core", "runs"}),
    "retention": frozenset({"core", "runs", "listing"}),
    "api": frozenset({"core", "backends", "observability", "runs", "listing", "tasks"}),
    "tools": frozenset({"core", "backends", "config"}),
    "app": frozenset({"core", "backends", "observability", "runs", "listing", "tasks", "config", "api", "retention"}),
    "cli": frozenset({"app", "config", "tools"}),
}
"""Per top-level package or module of ``runjournal_server``: the others it may import."""


def part_of(path: Path) -> str:
    """The top-level package or module a server file belongs to (``runs`` for ``runs/handles.py``)."""
    return path.relative_to(SERVER_DIR).parts[0].removesuffix(".py")


def imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "server modules import absolutely"
            module = node.module or ""
            names += [f"{module}.{alias.name}" for alias in node.names] if module == "runjournal_server" else [module]
    return names


def server_parts_imported(tree: ast.AST) -> set[str]:
    return {name.split(".")[1] for name in imported_modules(tree) if name.startswith("runjournal_server.")}


def server_files() -> list[Path]:
    return sorted(path for path in SERVER_DIR.rglob("*.py") if part_of(path) != "__init__")


def test_every_part_of_the_server_has_a_place_in_the_layers():
    assert {part_of(path) for path in server_files()} == set(MAY_IMPORT)


@pytest.mark.parametrize("path", server_files(), ids=lambda p: str(p.relative_to(SERVER_DIR)))
def test_a_server_module_imports_only_what_lies_below_it(path: Path):
    part = part_of(path)
    upward = server_parts_imported(ast.parse(path.read_text(), filename=str(path))) - MAY_IMPORT[part] - {part}
    assert upward == set(), f"{path.relative_to(SERVER_DIR)} ({part}) imports {sorted(upward)}, which lie above it"


def test_the_check_catches_a_backend_that_imports_a_feature():
    tree = ast.parse(
        "from runjournal_server.core.records import encode\n"
        "from runjournal_server.tasks import Tasks\n"
        "from runjournal_server import listing\n"
        "if TYPE_CHECKING:\n    from runjournal_server.runs.handles import RunHandles\n"
    )
    assert server_parts_imported(tree) - MAY_IMPORT["backends"] - {"backends"} == {"tasks", "listing", "runs"}


def test_the_command_lines_do_not_import_each_other_both_ways():
    """The client's ``runjournal`` hands the server's commands over (one lazy import); the server's reads only data."""
    server_cli = imported_modules(ast.parse((SERVER_DIR / "cli.py").read_text()))
    assert not [name for name in server_cli if name == "runjournal.cli" or name.startswith("runjournal.cli.")]
    client_cli = imported_modules(ast.parse((CLIENT_DIR / "cli.py").read_text()))
    assert [name for name in client_cli if name.startswith("runjournal_server")] == ["runjournal_server.cli"]


PROVIDER_SDKS = ("anthropic", "openai", "claude_agent_sdk", "agents")
"""The SDKs the adapters speak: optional extras, so only ``runjournal.adapters.*`` may import them."""
TS_PROVIDER_SDKS = ("@anthropic-ai/sdk", "openai", "@anthropic-ai/claude-agent-sdk", "@openai/agents")


def test_only_the_adapters_import_a_provider_sdk():
    """``pip install runjournal`` and ``@runjournal/client`` work without any provider SDK installed."""
    offenders = []
    for path in sorted(CLIENT_DIR.rglob("*.py")):
        if "adapters" in path.relative_to(CLIENT_DIR).parts:
            continue
        for name in imported_modules(ast.parse(path.read_text())):
            if name.split(".")[0] in PROVIDER_SDKS:
                offenders.append(f"{path.relative_to(CLIENT_DIR)} imports {name}")
    ts_src = CLIENT_DIR.parents[1] / "ts" / "src"
    imports = re.compile(r"""(?:from|import)\s*["']([^"']+)["']""")
    for path in sorted(ts_src.rglob("*.ts")):
        if "adapters" in path.relative_to(ts_src).parts:
            continue
        for spec in imports.findall(path.read_text()):
            if any(spec == sdk or spec.startswith(sdk + "/") for sdk in TS_PROVIDER_SDKS) or "/adapters/" in spec:
                offenders.append(f"client/ts/src/{path.relative_to(ts_src)} imports {spec}")
    assert offenders == []


PUBLIC_CLIENT_NAMES = frozenset(
    {
        "AlreadyAnsweredError",
        "AlreadyCompletedError",
        "AlreadyDecidedError",
        "AsyncJournalClient",
        "AsyncRun",
        "AsyncTaskClient",
        "CallNotPendingError",
        "CaughtUp",
        "CorruptJournalError",
        "DEFAULT_TIMEOUT_SECONDS",
        "DeadlineExceededError",
        "FORMAT_VERSION",
        "InvalidArgumentError",
        "InvalidRecordError",
        "JournalClient",
        "LastSeqMismatchError",
        "MAX_MESSAGE_BYTES",
        "NO_RETRY",
        "NotDeferredError",
        "PermissionDeniedError",
        "RecordTooLargeError",
        "ResponseTooLargeError",
        "ResumeRefusedError",
        "RetryPolicy",
        "Run",
        "RunClaimedError",
        "RunDeletedError",
        "RunExistsError",
        "RunJournalError",
        "RunLockedError",
        "RunNotFoundError",
        "SeqConflictError",
        "SeqGapError",
        "StatusError",
        "StorageFullError",
        "StorageUnavailableError",
        "TaskClient",
        "TaskConflictError",
        "TaskDeletedError",
        "TaskNotFoundError",
        "TooManyCallsError",
        "UnauthenticatedError",
        "UnavailableError",
        "UnknownReasonError",
        "VersionMismatchError",
        "WatchedRecord",
        "approval_record",
        "assistant_record",
        "canonical_json",
        "compaction_record",
        "deferral_record",
        "from_rpc_error",
        "make_fingerprint",
        "meta_record",
        "note_record",
        "opaque_block",
        "redacted_thinking_block",
        "system_prompt_sha256",
        "terminal_record",
        "text_block",
        "thinking_block",
        "tool_result_record",
        "tool_use_block",
        "tools_sha256",
        "user_record",
    }
)
"""What ``import runjournal`` promises. A change here is an API change: add on purpose, remove never lightly."""


def test_the_client_package_exports_exactly_its_public_names():
    assert sorted(runjournal.__all__) == sorted(PUBLIC_CLIENT_NAMES)
    assert len(runjournal.__all__) == len(set(runjournal.__all__))
    missing = [name for name in runjournal.__all__ if not hasattr(runjournal, name)]
    assert missing == []
