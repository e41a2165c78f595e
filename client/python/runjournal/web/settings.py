"""What ``runjournal web`` is configured with: where the journal server is, where to listen, and the two tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from runjournal.web.access import DEFAULT_SESSION_SECONDS

DEFAULT_LISTEN = "127.0.0.1:8080"
"""Loopback by default: the inbox decides for people; reaching it from elsewhere is a choice made on purpose."""
JOURNAL_TOKEN_ENV = "RUNJOURNAL_TOKEN"
"""The bearer token the web server sends to the journal server (as the CLI does): its name is the approver."""
ACCESS_TOKEN_ENV = "RUNJOURNAL_WEB_TOKEN"
"""The token a person types once to sign in to the web inbox; generated and printed when unset."""
READ_TOKEN_ENV = "RUNJOURNAL_WEB_READ_TOKEN"
"""An optional second token that signs in read-only: every page, no form that writes."""
POLL_SECONDS = 2.0
"""How often the inbox is listed again while the journal server cannot be watched (no WatchRuns)."""


@dataclass(frozen=True)
class WebSettings:
    """One web inbox's configuration.

    ``journal_token`` is sent to the journal server as ``authorization: Bearer``
    (empty: none). ``access_token`` is what a browser must present once to get
    a session cookie. ``approver`` is the name recorded when the journal server
    has auth off (with auth on it records the token's name and refuses any
    other, so none is sent). ``secure_cookies`` marks cookies ``Secure`` (set it
    when a TLS proxy is in front). A sign-in lasts ``session_seconds``.
    ``read_token`` (empty: none) signs in read-only.
    """

    journal_address: str
    access_token: str
    journal_token: str = ""
    approver: str = "web"
    secure_cookies: bool = False
    poll_seconds: float = POLL_SECONDS
    session_seconds: int = DEFAULT_SESSION_SECONDS
    read_token: str = ""

    @property
    def journal_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.journal_token}"),) if self.journal_token else ()


def new_access_token() -> str:
    """A random access token for a start without ``$RUNJOURNAL_WEB_TOKEN``."""
    return secrets.token_urlsafe(24)
