"""The checks every request passes before a handler runs: security headers, the session, the form token.

In order: the security headers (a Content-Security-Policy that runs only our
own script file, so even a string that escaped escaping could not run; no
framing, so a one-click approve cannot be clickjacked), the session (a signed
cookie; everything but signing in needs a signed-in one), and for every POST
the Origin and the form token (see ``access``), and that the session may
write (a read-only sign-in may only sign out), so a refused post never
reaches the journal server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from runjournal.web.access import COOKIE_NAME, CSRF_FIELD, Session
from runjournal.web.keys import ACCESS, SETTINGS

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: with no-referrer the browser sends "Origin: null" on our own forms.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
OPEN_PATHS = ("/login", "/static/", "/favicon.ico")
"""Reachable without signing in."""
READ_ONLY_POSTS = ("/login", "/logout")
"""The only posts a read-only session may send: they change the session, never a journal."""
READ_ONLY_REFUSAL = "this sign-in may only read (the read token): nothing was written"

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def headers(request: web.Request, handler: _Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as err:
        _secure(err)
        raise
    if not response.prepared:  # an event stream sent its headers already (and has its own)
        _secure(response)
    return response


def _secure(response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


@web.middleware
async def sessions(request: web.Request, handler: _Handler) -> web.StreamResponse:
    access = request.app[ACCESS]
    session = access.session_from_cookie(request.cookies.get(COOKIE_NAME))
    fresh = session is None
    if session is None:
        session = access.new_session(signed_in=False)
    request["session"] = session
    if session.signed_in or request.path.startswith(OPEN_PATHS):
        response = await handler(request)
    elif request.method == "GET" and _is_page(request.path):
        response = see_other("/login")
    else:
        response = web.Response(status=401, text="sign in first: open /login")
    if fresh and "new_session" not in request:
        set_session_cookie(request, response, session)
    return response


def _is_page(path: str) -> bool:
    return path in ("/", "/runs") or (path.startswith("/runs/") and not path.endswith(("/fragment", "/events")))


@web.middleware
async def forms(request: web.Request, handler: _Handler) -> web.StreamResponse:
    if request.method != "POST":
        return await handler(request)
    origin = request.headers.get("Origin")
    # The host only: behind a TLS proxy the browser's origin is https while this server sees http.
    if origin is not None and urlsplit(origin).netloc != request.host:
        return web.Response(status=403, text="this form was sent from another site; nothing was written")
    form = await request.post()
    offered = form.get(CSRF_FIELD)
    if not isinstance(offered, str) or not request.app[ACCESS].csrf_matches(request["session"], offered):
        return web.Response(status=403, text="the form's token is missing or wrong: reload the page and send it again")
    session: Session = request["session"]
    if session.signed_in and not session.may_write and request.path not in READ_ONLY_POSTS:
        return web.Response(status=403, text=READ_ONLY_REFUSAL)
    return await handler(request)


def see_other(location: str) -> web.Response:
    """A 303 to ``location``: after a form, the browser asks for the page with a GET."""
    return web.Response(status=303, headers={"Location": location})


def set_session_cookie(request: web.Request, response: web.StreamResponse, session: Session) -> None:
    response.set_cookie(
        COOKIE_NAME,
        request.app[ACCESS].cookie_value(session),
        max_age=request.app[ACCESS].session_seconds,  # the browser forgets it when the server would refuse it
        httponly=True,
        samesite="Strict",
        secure=request.app[SETTINGS].secure_cookies,
        path="/",
    )


async def no_content(_: web.Request) -> web.Response:
    return web.Response(status=204)
