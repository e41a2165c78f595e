"""The pure core imports no grpc, nats, asyncio, file system or network: a static check of every core module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import runjournal_server.core

CORE_DIR = Path(runjournal_server.core.__file__).parent
ALLOWED_ROOTS = frozenset(
    {
        "__future__",
        "array",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "dataclasses",
        "enum",
        "functools",
        "hashlib",
        "json",
        "orjson",
        "re",
        "types",
        "typing",
        "zlib",
        "google.protobuf",
        "runjournal.v1",
        "runjournal.error_metadata",
        "runjournal_server.core",
    }
)
"""What a core module may import: pure standard modules, orjson (canonical JSON, ``core/records.py``), protobuf,
the generated messages, the client's table of error metadata (the one vocabulary the server and every client
read)."""
FORBIDDEN_CALLS = frozenset({"open", "print", "input", "exec", "eval", "__import__"})


def core_modules() -> list[Path]:
    return sorted(CORE_DIR.glob("*.py"))


def imported_names(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "core modules import absolutely"
            names.append(node.module or "")
    return names


def allowed(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in ALLOWED_ROOTS)


def test_the_core_has_the_modules_the_layout_names():
    names = {path.stem for path in core_modules()}
    assert {"ids", "records", "schema", "sequence", "fold", "gate", "summary", "inbox"} <= names


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: p.stem)
def test_a_core_module_imports_nothing_impure(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    impure = [name for name in imported_names(tree) if not allowed(name)]
    assert impure == [], f"{path.name} imports {impure}; the core does no I/O"
    calls = [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS
    ]
    assert calls == [], f"{path.name} calls {calls}"


def test_the_check_catches_an_impure_import():
    tree = ast.parse("import asyncio\nfrom runjournal_server.backends.base import Backend\nfrom os import path\n")
    assert [name for name in imported_names(tree) if not allowed(name)] == [
        "asyncio",
        "runjournal_server.backends.base",
        "os",
    ]
