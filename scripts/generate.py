"""Regenerate the generated code: the gRPC modules from proto/, the sync client from the asyncio one.

1. ``client/python/runjournal/v1`` from ``proto/runjournal/v1`` (protoc). The
   folder is wiped and rebuilt, so a stale file cannot survive a removed proto.
2. The sync client modules from their asyncio sources (``UNASYNC``): each line
   goes through the substitutions of ``UNASYNC_RULES``, except a line that ends
   with ``# unasync: <sync line>``, which becomes that sync line (``drop``
   removes it). The result is normalized by ruff (imports sorted, imports the
   sync code no longer needs dropped, formatted), so it is stable under
   ``ruff format`` and ``ruff check``.
3. ``testdata/error_metadata.json`` from ``runjournal.error_metadata``: every
   reason's ErrorInfo keys, their types, whether they are always present, and
   what the reason tells a client; and from that file the error classes of
   every client (``error_classes``): ``client/python/runjournal/_reason_errors.py``,
   ``client/go/reasons.go`` and ``client/ts/src/reasons.ts``.

CI runs this and fails when git sees any difference. Run it with
``.venv/bin/python scripts/generate.py``; ``--sync-only`` skips protoc.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "client" / "python"
CLIENT_DIR = OUT_DIR / "runjournal"
PACKAGE_DIR = CLIENT_DIR / "v1"
INIT_TEXT = '"""Generated from proto/runjournal/v1 by scripts/generate.py. Do not edit."""\n'

UNASYNC = {
    "_client_aio.py": "_client_sync.py",
    "_tasks_aio.py": "_tasks_sync.py",
    "aio.py": "client.py",
    "_run_aio.py": "_run_sync.py",
}
"""Asyncio source -> generated sync module, both in client/python/runjournal (a private one is ``_*_sync.py``)."""

UNASYNC_RULES: tuple[tuple[str, str], ...] = (
    # articles, before the names they stand with
    (r"\bAn ``AsyncTaskClient``", "A ``TaskClient``"),
    # keywords
    (r"\basync (def|with|for)\b", r"\1"),
    (r"\bawait\s+", ""),
    # names
    (r"\bgrpc\.aio\.", "grpc."),
    (r"\brunjournal\.aio\b", "runjournal.client"),
    (r"\brunjournal\._(\w+)_aio\b", r"runjournal._\1_sync"),
    (r"\b_AsyncClient\b", "_SyncClient"),
    (r"\bAsyncJournalClient\b", "JournalClient"),
    (r"\bAsyncTaskClient\b", "TaskClient"),
    (r"\bAsyncRun\b", "Run"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\.aclose\(\)", ".close()"),
    (r"\basyncio\.sleep\(", "time.sleep("),
    (r"\basyncio\.Lock\(", "threading.Lock("),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncGenerator\[(.+), None\]", r"Generator[\1, None, None]"),
    (r"\bAsyncGenerator\b", "Generator"),
    (r"\bAwaitable\[(\w+)\]", r"\1"),
    # words of docstrings and comments
    (r"\bAn asyncio\b", "A synchronous"),
    (r"\bThe asyncio\b", "The synchronous"),
    (r"\bthe asyncio\b", "the sync"),
)
"""(pattern, replacement) applied in order to every unmarked line; each must match somewhere."""

MARKER = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s+# unasync: (?P<sync>.+)$")
DROP = "drop"
LEFTOVER = re.compile(r"\b(async|await|asyncio|aio|Async\w*)\b|Awaitable\[")
"""What must not survive in sync code: a hit means a rule or a marker is missing.

(An ``Awaitable`` import may: ruff drops it once nothing uses it.)
"""


def generated_header(source: str) -> str:
    return (
        f"# GENERATED from client/python/runjournal/{source} by scripts/generate.py: do not edit by hand.\n"
        f"# Edit {source} and run `python scripts/generate.py`; CI fails when this file differs.\n"
    )


def unasync_line(line: str, used: set[int]) -> str | None:
    """The sync version of one source line (None: the line has no sync counterpart)."""
    marked = MARKER.match(line)
    if marked is not None:
        sync = marked["sync"].strip()
        return None if sync == DROP else marked["indent"] + sync
    for index, (pattern, replacement) in enumerate(UNASYNC_RULES):
        line, count = re.subn(pattern, replacement, line)
        if count:
            used.add(index)
    return line


def unasync_text(source: str, text: str, used: set[int]) -> str:
    """The sync module for the asyncio source ``text``, before ruff's normalization."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        sync = unasync_line(line, used)
        if sync is None:
            continue
        leftover = LEFTOVER.search(sync)
        if leftover is not None:
            raise SystemExit(
                f"{source}:{number}: {leftover[0]!r} survives in the sync code: add a rule or a '# unasync:' marker"
            )
        lines.append(sync)
    return generated_header(source) + "\n".join(lines) + "\n"


def ruff(target: Path, text: str, *args: str) -> str:
    """``text`` after ``ruff <args>`` as if it were the file ``target`` (so the project's settings apply)."""
    command = [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(target), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ruff {' '.join(args)} failed on the generated {target.name}:\n{done.stderr}{done.stdout}")
    return done.stdout


def sync_modules() -> dict[Path, str]:
    """Every sync module of ``UNASYNC``, by path, as generated from its asyncio source."""
    used: set[int] = set()
    modules = {}
    for source, target in UNASYNC.items():
        text = unasync_text(source, (CLIENT_DIR / source).read_text(), used)
        path = CLIENT_DIR / target
        text = ruff(path, text, "check", "--fix", "--quiet", "--select", "I001,F401")
        modules[path] = ruff(path, text, "format", "--quiet")
    unused = [pattern for index, (pattern, _) in enumerate(UNASYNC_RULES) if index not in used]
    if unused:
        raise SystemExit(f"unasync rules that match nothing (remove them): {unused}")
    return modules


def generate_sync() -> None:
    for path, text in sync_modules().items():
        path.write_text(text)


def generate_protos() -> int:
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "runjournal" / "v1").glob("*.proto"))
    if PACKAGE_DIR.exists():
        shutil.rmtree(PACKAGE_DIR)
    PACKAGE_DIR.mkdir(parents=True)
    well_known = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={OUT_DIR}",
        f"--pyi_out={OUT_DIR}",
        f"--grpc_python_out={OUT_DIR}",
        *protos,
    ]
    code = protoc.main(args)
    if code != 0:
        print(f"protoc failed with exit code {code}", file=sys.stderr)
        return code
    (PACKAGE_DIR / "__init__.py").write_text(INIT_TEXT)
    (PACKAGE_DIR / "py.typed").write_text("")
    return 0


ERROR_METADATA_JSON = ROOT / "testdata" / "error_metadata.json"
REASON_ERRORS_PY = CLIENT_DIR / "_reason_errors.py"
REASONS_GO = ROOT / "client" / "go" / "reasons.go"
REASONS_TS = ROOT / "client" / "ts" / "src" / "reasons.ts"


def error_metadata_text() -> str:
    """The error-metadata table as JSON text: the one table every client's error classes are written from."""
    sys.path.insert(0, str(OUT_DIR))
    from runjournal.error_metadata import ERROR_METADATA, REASON_DOCS

    if set(REASON_DOCS) != set(ERROR_METADATA):
        raise SystemExit(f"REASON_DOCS and ERROR_METADATA differ in {sorted(set(REASON_DOCS) ^ set(ERROR_METADATA))}")
    table = {
        reason: {key: {"type": spec.type.__name__, "always": spec.always} for key, spec in sorted(keys.items())}
        for reason, keys in sorted(ERROR_METADATA.items())
    }
    document = {
        "description": (
            "GENERATED by scripts/generate.py from client/python/runjournal/error_metadata.py: every ErrorInfo "
            "reason, its metadata keys, their types (int: decimal text; str; list: comma-joined) and whether "
            "every refusal with that reason carries the key (reasons), and what each reason tells a client (docs). "
            "Do not edit."
        ),
        "docs": dict(sorted(REASON_DOCS.items())),
        "reasons": table,
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def error_class_files(table_text: str) -> dict[Path, str]:
    """Every client's error classes, by path, as written from the table's JSON text (see ``error_classes``)."""
    sys.path.insert(0, str(OUT_DIR))
    sys.path.insert(0, str(ROOT / "scripts"))
    import error_classes

    from runjournal._error_base import RunJournalError

    table = json.loads(table_text)
    inherited = frozenset(name for name, value in vars(RunJournalError).items() if isinstance(value, property))
    python = ruff(REASON_ERRORS_PY, error_classes.python_module(table, inherited), "format", "--quiet")
    return {
        REASON_ERRORS_PY: python,
        REASONS_GO: error_classes.go_file(table),
        REASONS_TS: error_classes.ts_module(table),
    }


def generate_errors() -> None:
    """``testdata/error_metadata.json``, then every client's error classes from that file."""
    ERROR_METADATA_JSON.write_text(error_metadata_text(), encoding="utf-8")
    for path, text in error_class_files(ERROR_METADATA_JSON.read_text(encoding="utf-8")).items():
        path.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sync-only", action="store_true", help="only the sync client modules (no protoc)")
    if not parser.parse_args().sync_only:
        code = generate_protos()
        if code != 0:
            return code
    generate_sync()
    generate_errors()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
