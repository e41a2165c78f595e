"""Who may use the web inbox, and proof that a form was sent by its own page.

A browser signs in once with the access token and gets a session cookie
(``HttpOnly``, ``SameSite=Strict``). Every visitor, signed in or not, has a
session id; the cookie carries it with a flag "signed in" and an HMAC of both
under a secret that lives only in this process, so a cookie cannot be forged
or promoted, and a restart signs everyone out. The signed body also holds the
time the session began: a session ends ``session_seconds`` after it (12 hours
unless configured), even in a browser that keeps the cookie, so a cookie
copied off a shared machine stops working by itself.

Forms carry a synchronizer token, the HMAC of the session id under the same
secret (OWASP's HMAC-based token pattern): a page of another site can make the
browser post, but it cannot read the token from our page, and the
``SameSite=Strict`` cookie is not sent with its post at all. A post without the
right token is refused before anything reaches the journal server. Signing in
starts a new session id (no session fixation).

Two tokens sign in. The access token gives a session that may write (answer,
approve, fork, delete: what the journal token behind the web server may do).
An optional read token gives a read-only session: every page, no form that
writes, and every POST but signing out refused here, before the journal
server (``guards.forms``). The cookie's flag says which ("1" or "r"), under
the same signature, so a read-only cookie cannot be promoted.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

COOKIE_NAME = "runjournal_web_session"
CSRF_FIELD = "csrf_token"
DEFAULT_SESSION_SECONDS = 12 * 3600
"""How long a session lasts from its start: a working day, then the access token again."""
CLOCK_SKEW_SECONDS = 60
"""A session may seem to start this far in the future (the clock stepped back): more is forged or wrong."""
_FLAGS = {(False, False): "0", (True, False): "1", (True, True): "r"}
"""The cookie's flag for (signed in, read only); a visitor who has not signed in is never read only."""
_SESSION_OF_FLAG = {flag: key for key, flag in _FLAGS.items()}


@dataclass(frozen=True)
class Session:
    """A browser's session: its id and whether it signed in with the access token."""

    session_id: str
    signed_in: bool
    started_at: int = field(default_factory=lambda: int(time.time()))
    """Unix seconds when the session began; signed with the rest, so it cannot be moved forward."""
    read_only: bool = False
    """Signed in with the read token: it may look at everything and write nothing."""

    def __post_init__(self) -> None:
        if self.read_only and not self.signed_in:
            raise ValueError("only a signed-in session is read-only")

    @property
    def may_write(self) -> bool:
        """Signed in with the access token: the forms that write are shown and accepted."""
        return self.signed_in and not self.read_only


class Access:
    """The access token check, the session cookies and the form tokens of one web server."""

    def __init__(
        self,
        access_token: str,
        secret: bytes | None = None,
        *,
        session_seconds: int = DEFAULT_SESSION_SECONDS,
        read_token: str = "",
    ) -> None:
        if not access_token:
            raise ValueError("the web inbox needs an access token")
        if read_token == access_token:
            raise ValueError("the read token must differ from the access token (it signs in read-only)")
        if session_seconds < 1:
            raise ValueError("a session lasts at least a second")
        self.session_seconds = session_seconds
        self._access_digest = hashlib.sha256(access_token.encode()).digest()
        self._read_digest = hashlib.sha256(read_token.encode()).digest() if read_token else None
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    def token_matches(self, offered: str) -> bool:
        """True when ``offered`` is the access token (compared by digest in constant time)."""
        return hmac.compare_digest(hashlib.sha256(offered.encode()).digest(), self._access_digest)

    def read_token_matches(self, offered: str) -> bool:
        """True when a read token is set and ``offered`` is it."""
        if self._read_digest is None:
            return False
        return hmac.compare_digest(hashlib.sha256(offered.encode()).digest(), self._read_digest)

    def sign_in(self, offered: str) -> Session | None:
        """A new signed-in session for ``offered`` (read-only for the read token); None for any other token."""
        if self.token_matches(offered):
            return self.new_session(signed_in=True)
        if self.read_token_matches(offered):
            return self.new_session(signed_in=True, read_only=True)
        return None

    def new_session(self, *, signed_in: bool, read_only: bool = False) -> Session:
        return Session(secrets.token_urlsafe(18), signed_in, read_only=signed_in and read_only)

    def cookie_value(self, session: Session) -> str:
        body = f"{session.session_id}.{_FLAGS[session.signed_in, session.read_only]}.{session.started_at}"
        return f"{body}.{self._sign('session', body)}"

    def session_from_cookie(self, value: str | None, *, now: float | None = None) -> Session | None:
        """The session a cookie stands for; None when it is missing, malformed, not signed by us, or over."""
        if not value:
            return None
        body, _, signature = value.rpartition(".")
        parts = body.split(".")
        if len(parts) != 3:
            return None
        session_id, flag, started = parts
        if not session_id or flag not in _SESSION_OF_FLAG or not started.isdigit():
            return None
        if not hmac.compare_digest(signature, self._sign("session", body)):
            return None
        now = time.time() if now is None else now
        if not now - self.session_seconds < int(started) <= now + CLOCK_SKEW_SECONDS:
            return None
        signed_in, read_only = _SESSION_OF_FLAG[flag]
        return Session(session_id, signed_in, int(started), read_only)

    def csrf_token(self, session: Session) -> str:
        return self._sign("csrf", session.session_id)

    def csrf_matches(self, session: Session, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered, self.csrf_token(session))

    def _sign(self, purpose: str, text: str) -> str:
        # The purpose keeps a session signature from ever passing as a form token and back.
        return hmac.new(self._secret, f"{purpose}:{text}".encode(), hashlib.sha256).hexdigest()
