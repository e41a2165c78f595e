"""Every test here runs once per backend: the API tests' server fixture, a file server and a JetStream server.

``journal_server`` is ``tests/api/conftest.py``'s, parametrised over the two
backends; importing it here makes it override the file-only session server of
``tests/conftest.py`` for this folder too. Each provider's tool loop is
appended once per backend (``anthropic_loop``, ``openai_loop``, module scope)
and the tests look at what came back.
"""

from __future__ import annotations

import pytest

from tests.api.conftest import journal_server
from tests.provider_content import loops
from tests.provider_content.roundtrip import RoundTrip, round_trip
from tests.servers import ServerProcess

__all__ = ["journal_server"]


@pytest.fixture(scope="module")
def anthropic_loop(journal_server: ServerProcess) -> RoundTrip:
    return round_trip(journal_server, "anthropic-loop", loops.anthropic_records)


@pytest.fixture(scope="module")
def openai_loop(journal_server: ServerProcess) -> RoundTrip:
    return round_trip(journal_server, "openai-loop", loops.openai_records)
