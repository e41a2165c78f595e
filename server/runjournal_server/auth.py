"""Bearer-token access: who may call, and which runs each token may touch.

Tokens live in a TOML file (``auth_tokens_file``), one table per token:

    [[tokens]]
    name = "team-a"                      # appears in logs and errors; the token never does
    sha256 = "<hex SHA-256 of the token>"
    run_id_prefixes = ["team-a-"]        # "" allows every run

Only the SHA-256 of each token is kept, in the file and in memory, and the
presented token's digest is compared against every entry with
``hmac.compare_digest`` so the comparison takes the same time whether or not
(or where) it matches. A token sees and writes only the runs whose ids start
with one of its prefixes: that is the tenant boundary.
"""

from __future__ import annotations

import hashlib
import hmac
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runjournal_server.errors import PermissionDeniedError, UnauthenticatedError

AUTHORIZATION_HEADER = "authorization"
BEARER_PREFIX = "bearer "
_HEX_DIGITS = frozenset("0123456789abcdef")


class TokenFileError(ValueError):
    """The tokens file is unreadable or malformed; the message says where."""


@dataclass(frozen=True)
class Access:
    """What one caller may touch."""

    name: str
    run_id_prefixes: tuple[str, ...]

    def allows(self, run_id: str) -> bool:
        return any(run_id.startswith(prefix) for prefix in self.run_id_prefixes)

    def check_run(self, run_id: str) -> None:
        if not self.allows(run_id):
            raise PermissionDeniedError(self.name, run_id=run_id)

    def check_task(self, task_id: str) -> None:
        """Task ids share the run-id prefixes: a tenant's tasks are named like its runs."""
        if not self.allows(task_id):
            raise PermissionDeniedError(self.name, task_id=task_id)


UNRESTRICTED = Access(name="anonymous", run_id_prefixes=("",))


@dataclass(frozen=True)
class _Token:
    digest: bytes
    access: Access


class TokenTable:
    """The configured tokens; ``authenticate`` turns request metadata into an ``Access``."""

    def __init__(self, tokens: Sequence[_Token]) -> None:
        self._tokens = tuple(tokens)

    @classmethod
    def from_file(cls, path: Path) -> TokenTable:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise TokenFileError(f"cannot read tokens file {path}: {err.strerror}") from err
        except tomllib.TOMLDecodeError as err:
            raise TokenFileError(f"tokens file {path} is not valid TOML: {err}") from err
        entries = data.get("tokens")
        if not isinstance(entries, list) or not entries or set(data) != {"tokens"}:
            raise TokenFileError(f"tokens file {path}: expected one or more [[tokens]] tables and nothing else")
        return cls([_parse_entry(path, index, entry) for index, entry in enumerate(entries)])

    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]]) -> Access:
        presented = _bearer_token(metadata)
        if presented is None:
            raise UnauthenticatedError()
        digest = hashlib.sha256(presented.encode("utf-8")).digest()
        found: Access | None = None
        for token in self._tokens:  # no early exit: every entry is compared
            if hmac.compare_digest(digest, token.digest):
                found = token.access
        if found is None:
            raise UnauthenticatedError()
        return found


def _bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    for key, value in metadata:
        is_bearer = isinstance(value, str) and value[: len(BEARER_PREFIX)].lower() == BEARER_PREFIX
        if key.lower() == AUTHORIZATION_HEADER and is_bearer:
            assert isinstance(value, str)
            return value[len(BEARER_PREFIX) :].strip() or None
    return None


def _parse_entry(path: Path, index: int, entry: object) -> _Token:
    where = f"tokens file {path}, token #{index + 1}"
    if not isinstance(entry, dict) or set(entry) - {"name", "sha256", "run_id_prefixes"}:
        raise TokenFileError(f"{where}: allowed keys are name, sha256 and run_id_prefixes")
    name, digest, prefixes = entry.get("name"), entry.get("sha256"), entry.get("run_id_prefixes")
    if not isinstance(name, str) or not name:
        raise TokenFileError(f"{where}: 'name' is required")
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX_DIGITS:
        raise TokenFileError(f"{where} ({name}): 'sha256' must be 64 lower-case hex digits")
    if not isinstance(prefixes, list) or not prefixes or not all(isinstance(p, str) for p in prefixes):
        raise TokenFileError(f"{where} ({name}): 'run_id_prefixes' must be a non-empty list of strings")
    return _Token(bytes.fromhex(digest), Access(name=name, run_id_prefixes=tuple(prefixes)))


def token_sha256(token: str) -> str:
    """The digest to put in the tokens file for ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
