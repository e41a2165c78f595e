"""Pages of a newest-first listing: the sort key, the page sizes and the opaque page token.

ListRuns and ListTasks page the same way: by the position of the last item
listed, never by an offset, so a page stays stable while runs are created.
The token is that position and a digest of the filters that made it,
encoded. A token that does not decode is INVALID_ARGUMENT, never INTERNAL;
so is a token sent with other filters than the call that made it (AIP-158:
its position is a place in *that* listing, and continuing another listing
from it would skip or repeat items without a word). The page size is not
part of the digest: a caller may change it between pages.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping

from runjournal_server.core.errors import InvalidArgumentError

SortKey = tuple[int, int, str]
"""(created seconds, created nanos, id): the newest-first order, ties broken by id."""

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
_DIGEST_CHARS = 16
"""64 bits of SHA-256: a check against a caller's mistake, not a secret (the filters are the caller's own)."""


def filters_digest(filters: Mapping[str, object]) -> str:
    """A short digest of a listing's filters (JSON values), the same for the same filters in any key order."""
    canonical = json.dumps(filters, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=list)
    return hashlib.sha256(canonical.encode()).hexdigest()[:_DIGEST_CHARS]


def encode_page_token(key: SortKey | None, digest: str) -> str:
    """An opaque token naming the last listed item's position in the listing ``digest`` names ("": no next page)."""
    if key is None:
        return ""
    raw = json.dumps([*key, digest], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, digest: str) -> SortKey | None:
    """The position a token names (None for ""), refused unless it was made by a listing with the same filters."""
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        seconds, nanos, item_id, made_by = json.loads(raw)
        if not all(isinstance(v, t) for v, t in ((seconds, int), (nanos, int), (item_id, str), (made_by, str))):
            raise ValueError("wrong types")
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
        # RecursionError: a forged token of deeply nested JSON ("[[[[...") must be refused, not INTERNAL.
        raise InvalidArgumentError("page_token", "not a token from a previous call of this listing") from err
    if made_by != digest:
        raise InvalidArgumentError(
            "page_token",
            "was made by a call with other filters; send the same filters as the call that returned it "
            "(only page_size may change), or start again without a page_token",
        )
    return (seconds, nanos, item_id)
