"""Fixtures for the client tests: a scripted fake server, and clients of both flavours bound to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runjournal import JournalClient, RetryPolicy
from tests.client.fake_journal import FakeServer, start_fake_server
from tests.client.flavours import FLAVOURS, Flavour, flavour_named

FAST_RETRY = RetryPolicy(max_attempts=3, initial_backoff_seconds=0.001, max_backoff_seconds=0.002)
"""Three attempts with millisecond backoff: the retry logic, without the waiting."""


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = start_fake_server()
    yield server
    server.server.stop(None)


@pytest.fixture(params=FLAVOURS)
def flavour(request: pytest.FixtureRequest) -> Iterator[Flavour]:
    """Each client test that takes it (or ``client``) runs with the sync client and with the asyncio one."""
    yield from flavour_named(request.param)


@pytest.fixture
def client(fake: FakeServer, flavour: Flavour) -> Iterator[JournalClient]:
    """A journal client of the fake, sync-style, of each flavour in turn."""
    with flavour.JournalClient(fake.address, retry=FAST_RETRY, timeout=5.0) as journal_client:
        yield journal_client
