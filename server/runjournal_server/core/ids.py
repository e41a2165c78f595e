"""The run-id grammar, checked at every entry point with a full match; and the prefix match of tenants.

A run id becomes a file name and a NATS subject token, so it may hold only
``[A-Za-z0-9_-]``: a ``.``, ``*`` or ``>`` would widen a subject fence across
runs, and ``/`` or ``..`` would escape the data directory. ``re.fullmatch`` is
used because ``$`` alone would accept a trailing newline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runjournal_server.core.errors import InvalidArgumentError

MAX_RUN_ID_CHARS = 128
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def is_valid_run_id(run_id: str) -> bool:
    """True when ``run_id`` matches the grammar exactly."""
    return isinstance(run_id, str) and RUN_ID_PATTERN.fullmatch(run_id) is not None


def validate_run_id(run_id: str, field: str = "run_id") -> str:
    """Return ``run_id`` unchanged, or raise ``InvalidArgumentError`` naming ``field``."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidArgumentError(field, "a run id is required")
    if len(run_id) > MAX_RUN_ID_CHARS:
        raise InvalidArgumentError(field, f"a run id has at most {MAX_RUN_ID_CHARS} characters, got {len(run_id)}")
    if RUN_ID_PATTERN.fullmatch(run_id) is None:
        raise InvalidArgumentError(
            field,
            f"{run_id!r} is not a valid run id: use 1-{MAX_RUN_ID_CHARS} characters of [A-Za-z0-9_-], "
            "starting with a letter or digit",
        )
    return run_id


def has_prefix(run_id: str, prefixes: Sequence[str]) -> bool:
    """Whether ``run_id`` starts with one of ``prefixes``: the tenant boundary, and nothing else.

    The one statement of it, read by a token's access (``api/auth.py``),
    the listing's filter and its two walks (``listing/``) and WatchRuns: so
    what a token may touch, list and watch cannot drift apart. ``""`` covers
    every id; no prefixes cover none.
    """
    return run_id.startswith(tuple(prefixes))
