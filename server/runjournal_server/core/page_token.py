"""Pages of a newest-first listing: the sort key, the page sizes and the opaque page token.

ListRuns and ListTasks page the same way: by the position of the last item
listed, never by an offset, so a page stays stable while runs are created.
The token is that position, encoded; a token that does not decode is
INVALID_ARGUMENT, never INTERNAL.
"""

from __future__ import annotations

import base64
import binascii
import json

from runjournal_server.core.errors import InvalidArgumentError

SortKey = tuple[int, int, str]
"""(created seconds, created nanos, id): the newest-first order, ties broken by id."""

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def encode_page_token(key: SortKey | None) -> str:
    """An opaque token naming the last listed run's position (stable under concurrent creation)."""
    if key is None:
        return ""
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> SortKey | None:
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        seconds, nanos, run_id = json.loads(raw)
        if not (isinstance(seconds, int) and isinstance(nanos, int) and isinstance(run_id, str)):
            raise ValueError("wrong types")
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
        # RecursionError: a forged token of deeply nested JSON ("[[[[...") must be refused, not INTERNAL.
        raise InvalidArgumentError("page_token", "not a token from a previous ListRuns call") from err
    return (seconds, nanos, run_id)
