"""The flavour fixture really swaps the code under test: the generated sync classes, or their asyncio source."""

from __future__ import annotations

from runjournal import AsyncJournalClient, AsyncRun, JournalClient, Run
from runjournal.v1 import records_pb2
from tests.client.fake_journal import FakeServer
from tests.client.flavours import Flavour

EXPECTED = {"sync": (JournalClient, Run), "asyncio": (AsyncJournalClient, AsyncRun)}


def _behind(face: object) -> type:
    return type(getattr(face, "_target", face))


def test_the_sync_style_faces_are_the_flavours_own_classes(fake: FakeServer, flavour: Flavour) -> None:
    with flavour.JournalClient(fake.address) as client:
        run = flavour.Run.create(client, "r1", records_pb2.Fingerprint(), "go")
        assert run.note("n") == 2
    assert (_behind(client), _behind(run)) == EXPECTED[flavour.name]
    assert _behind(run.client) is EXPECTED[flavour.name][0]


async def test_the_asyncio_style_faces_are_the_flavours_own_classes(fake: FakeServer, flavour: Flavour) -> None:
    async with flavour.AsyncJournalClient(fake.address) as client:
        run = await flavour.AsyncRun.create(client, "r1", records_pb2.Fingerprint(), "go")
        assert await run.note("n") == 2
    assert (_behind(client), _behind(run)) == EXPECTED[flavour.name]
