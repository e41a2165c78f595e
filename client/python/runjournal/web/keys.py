"""What the web inbox's application holds, by typed key (set by ``app.create_app`` and its startup)."""

from __future__ import annotations

import asyncio

import jinja2
from aiohttp import web
from aiohttp_sse import EventSourceResponse

from runjournal.aio import AsyncJournalClient
from runjournal.web.access import Access
from runjournal.web.live import InboxFeed
from runjournal.web.settings import WebSettings
from runjournal.web.usage import UsageCache


class OpenStreams:
    """The event streams open now: an event stream never ends by itself, so shutdown stops each."""

    def __init__(self) -> None:
        self.open: set[EventSourceResponse] = set()


SETTINGS = web.AppKey("settings", WebSettings)
ACCESS = web.AppKey("access", Access)
TEMPLATES = web.AppKey("templates", jinja2.Environment)
CLIENT = web.AppKey("client", AsyncJournalClient)
FEED = web.AppKey("feed", InboxFeed)
STREAMS = web.AppKey("streams", OpenStreams)
FOLLOWING = web.AppKey("following", asyncio.Task[None])
USAGE = web.AppKey("usage", UsageCache)
