"""Bearer-token access: who may call, and which runs each token may touch.

Tokens live in a TOML file (``auth_tokens_file``), one table per token:

    [[tokens]]
    name = "team-a"                      # appears in logs and errors; the token never does
    sha256 = "<hex SHA-256 of the token>"
    run_id_prefixes = ["team-a-"]        # "" allows every run
    scopes = ["worker"]                  # optional; "worker" and/or "operator"

A ``worker`` token appends, claims and submits/completes tasks; an
``operator`` token answers deferred calls and approves or denies them; either
may fold, read and list (an operator must see what it decides). A token
without ``scopes`` is a worker only: least privilege, because the hole scopes
close is a worker approving its own calls, and a token file written before
scopes existed cannot have meant any token to be trusted with that. An
operator token is marked so explicitly; the refusal names the missing scope.

Only the SHA-256 of each token is kept, in the file and in memory, and the
presented token's digest is compared against every entry with
``hmac.compare_digest`` so the comparison takes the same time whether or not
(or where) it matches. A token sees and writes only the runs whose ids start
with one of its prefixes: that is the tenant boundary.

The two refusals of token access, ``UnauthenticatedError`` and
``PermissionDeniedError``, are defined here beside the checks that raise them
(their reasons are in ``core/errors.py`` with every other).
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runjournal.v1 import records_pb2
from runjournal_server.core.authorship import server_written
from runjournal_server.core.errors import JournalError, Reason
from runjournal_server.core.ids import has_prefix

AUTHORIZATION_HEADER = "authorization"
BEARER_PREFIX = "bearer "
_HEX_DIGITS = frozenset("0123456789abcdef")


class TokenFileError(ValueError):
    """The tokens file is unreadable or malformed; the message says where."""


class UnauthenticatedError(JournalError):
    """No token, or one the tokens file does not hold (the refusal never says which)."""

    reason = Reason.UNAUTHENTICATED

    def __init__(self) -> None:
        super().__init__("this server requires a bearer token: send 'authorization: Bearer <token>' metadata")


class PermissionDeniedError(JournalError):
    """The token may not do this: an id outside its prefixes, or a call that needs a scope it lacks."""

    reason = Reason.PERMISSION_DENIED

    def __init__(
        self,
        token_name: str,
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        scope: str | None = None,
        problem: str | None = None,
    ) -> None:
        named = f"run {run_id!r}" if run_id is not None else f"task {task_id!r}"
        if problem is None and scope is not None:
            problem = f"this call needs the {scope!r} scope, which the token lacks; use a token with that scope"
        elif problem is None:
            problem = f"{named} is outside the token's id prefixes"
        super().__init__(
            f"token {token_name!r} may not do this to {named}: {problem}",
            principal=token_name,
            run_id=run_id,
            task_id=task_id,
            scope=scope,
        )


class Scope(enum.StrEnum):
    """What a token may do, beyond reading (see the module docstring)."""

    WORKER = "worker"
    OPERATOR = "operator"


DEFAULT_SCOPES = frozenset({Scope.WORKER})
"""The scopes of a token whose entry names none: a worker, never an operator."""

ANY_SCOPE = frozenset(Scope)
"""What reading needs: any one scope."""


@dataclass(frozen=True)
class Access:
    """What one caller may touch and do; ``authenticated`` is False only with auth off."""

    name: str
    run_id_prefixes: tuple[str, ...]
    scopes: frozenset[Scope] = DEFAULT_SCOPES
    authenticated: bool = True

    @property
    def principal(self) -> str | None:
        """The token's name, to record as who answered or decided; None with auth off."""
        return self.name if self.authenticated else None

    def check_scope(self, needed: frozenset[Scope], run_id: str | None = None) -> None:
        """Refuse unless the token holds one of ``needed``."""
        if not self.scopes & needed:
            raise PermissionDeniedError(self.name, run_id=run_id or None, scope=",".join(sorted(needed)))

    def approver(self, requested: str, run_id: str) -> str:
        """Who an approval names: the token's name with auth on (refusing any other), else the request's."""
        if not self.authenticated:
            return requested
        if requested not in ("", self.name):
            raise PermissionDeniedError(
                self.name,
                run_id=run_id,
                problem=f"it may not decide in the name of {requested!r}; leave approver empty to record {self.name!r}",
            )
        return self.name

    def check_appended(self, records: Iterable[records_pb2.JournalRecord], run_id: str) -> None:
        """With auth on, refuse the records that name their caller, which only the server writes, whatever the scopes.

        Which parts those are and why: ``core/authorship.py``. With auth off
        they pass: nobody is authenticated, so nobody's name is forged.
        """
        if not self.authenticated:
            return
        for record in records:
            part = server_written(record)
            if part is not None and part.names_caller:
                raise PermissionDeniedError(self.name, run_id=run_id, problem=part.refusal)

    def allows(self, run_id: str) -> bool:
        return has_prefix(run_id, self.run_id_prefixes)

    def check_run(self, run_id: str) -> None:
        if not self.allows(run_id):
            raise PermissionDeniedError(self.name, run_id=run_id)

    def check_task(self, task_id: str) -> None:
        """Task ids share the run-id prefixes: a tenant's tasks are named like its runs."""
        if not self.allows(task_id):
            raise PermissionDeniedError(self.name, task_id=task_id)


UNRESTRICTED = Access(name="anonymous", run_id_prefixes=("",), scopes=ANY_SCOPE, authenticated=False)


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
    if not isinstance(entry, dict) or set(entry) - {"name", "sha256", "run_id_prefixes", "scopes"}:
        raise TokenFileError(f"{where}: allowed keys are name, sha256, run_id_prefixes and scopes")
    name, digest, prefixes = entry.get("name"), entry.get("sha256"), entry.get("run_id_prefixes")
    if not isinstance(name, str) or not name:
        raise TokenFileError(f"{where}: 'name' is required")
    if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX_DIGITS:
        raise TokenFileError(f"{where} ({name}): 'sha256' must be 64 lower-case hex digits")
    if not isinstance(prefixes, list) or not prefixes or not all(isinstance(p, str) for p in prefixes):
        raise TokenFileError(f"{where} ({name}): 'run_id_prefixes' must be a non-empty list of strings")
    scopes = _parse_scopes(f"{where} ({name})", entry.get("scopes"))
    return _Token(bytes.fromhex(digest), Access(name=name, run_id_prefixes=tuple(prefixes), scopes=scopes))


def _parse_scopes(where: str, scopes: object) -> frozenset[Scope]:
    if scopes is None:
        return DEFAULT_SCOPES
    known = ", ".join(repr(str(s)) for s in Scope)
    if not isinstance(scopes, list) or not scopes or not all(isinstance(s, str) for s in scopes):
        raise TokenFileError(f"{where}: 'scopes' must be a non-empty list of {known}")
    unknown = sorted(set(scopes) - set(Scope))
    if unknown:
        raise TokenFileError(f"{where}: unknown scopes {unknown}; use {known}")
    return frozenset(Scope(s) for s in scopes)


def token_sha256(token: str) -> str:
    """The digest to put in the tokens file for ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
