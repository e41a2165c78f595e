"""A plain NATS connection for tests: what the backend must never do, or a stranger with publish rights can."""

from __future__ import annotations

import json
from typing import Any

import nats

from runjournal_server.backends.jetstream import JetStreamBackend
from tests.conftest import StreamTarget


class RawNats:
    """JetStream API calls and publishes straight to the stream (bad streams, stray messages, counts)."""

    def __init__(self, nc: nats.NATS) -> None:
        self.nc = nc

    async def api(self, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await self.nc.request(f"$JS.API.{subject}", json.dumps(body).encode() if body else b"", timeout=10)
        answer: dict[str, Any] = json.loads(reply.data)
        return answer

    async def publish(self, subject: str, data: bytes) -> dict[str, Any]:
        reply = await self.nc.request(subject, data, timeout=10)
        answer: dict[str, Any] = json.loads(reply.data)
        assert "error" not in answer, answer
        return answer

    async def message(self, stream: str, subject: str) -> dict[str, Any] | None:
        answer = await self.api(f"STREAM.MSG.GET.{stream}", {"last_by_subj": subject})
        return answer.get("message")

    async def count(self, stream: str, subjects: str) -> int:
        info = await self.api(f"STREAM.INFO.{stream}", {"subjects_filter": subjects})
        return sum((info["state"].get("subjects") or {}).values())


def backend_for(url: str, target: StreamTarget, **options: Any) -> JetStreamBackend:
    """A JetStream backend on ``target`` (not started)."""
    return JetStreamBackend([url], stream=target.name, subject_prefix=target.prefix, **options)
