"""The adapters run against every backend: ``journal_server`` is the API tests' fixture (file and JetStream)."""

from __future__ import annotations

from tests.api.conftest import journal_server

__all__ = ["journal_server"]
