"""Run ids for keys the server does not choose: an SDK's session ids, project keys and subpaths.

A key becomes ``<namespace>_<tag><part>[_<tag><part>...]``: letters, digits and
``-`` stay, every other character is written ``_`` + two lower-case hex digits
per UTF-8 byte. A tag is a letter that is not a hex digit (``p``, ``s``,
``k``, ...), so ``_`` + tag can never be read as an escape, and no two keys
share a run id. An id longer than the server allows (128 characters) becomes
``<namespace>_h<sha256 of the long id, hex>``; the key itself is kept verbatim
in the run's labels, so listing still finds it. The TypeScript adapters keep
the same rule (client/ts/src/adapters/run-ids.ts), so both languages reach one
run for one key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

MAX_RUN_ID_CHARS = 128
MAX_NAMESPACE_CHARS = 40
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_ALNUM = _KEPT - {"-"}


def check_namespace(namespace: str) -> str:
    """``namespace`` unchanged, or ``ValueError``: 1-40 of ``[A-Za-z0-9-]``, starting with a letter or digit."""
    if not (
        isinstance(namespace, str)
        and 1 <= len(namespace) <= MAX_NAMESPACE_CHARS
        and namespace[0] in _ALNUM
        and set(namespace) <= _KEPT
    ):
        raise ValueError(
            f"namespace {namespace!r} must be 1-{MAX_NAMESPACE_CHARS} characters of [A-Za-z0-9-], "
            "starting with a letter or digit (it begins every run id and holds no '_')"
        )
    return namespace


def escape(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9-]`` written as ``_`` + hex per UTF-8 byte."""
    return "".join(ch if ch in _KEPT else "".join(f"_{byte:02x}" for byte in ch.encode("utf-8")) for ch in text)


def run_id_of(namespace: str, parts: Sequence[tuple[str, str]]) -> str:
    """The run id of a key: ``parts`` are ``(tag, value)`` pairs, tags being letters that are not hex digits."""
    long_id = namespace + "".join(f"_{tag}{escape(value)}" for tag, value in parts)
    if len(long_id) <= MAX_RUN_ID_CHARS:
        return long_id
    return f"{namespace}_h{hashlib.sha256(long_id.encode('ascii')).hexdigest()}"
