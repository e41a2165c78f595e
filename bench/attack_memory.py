"""Server memory under the hostile loads of the hardening issue, against the idle server's RSS.

``python -m bench.attack_memory [--scale F]`` starts real servers and samples
their VmRSS (``/proc/PID/status``) while a hostile load runs; each figure is
the peak growth over the RSS just before the load:

- 16 readers start a ``Read`` of a 48 MiB run and stop consuming (target:
  under 100 MiB), once for a run of maximal (1 MiB) records and once for 16
  KiB records. The server must stream under flow control, not hold the run
  per reader; a second figure is what stays after the readers cancel.
- 16 unauthenticated 63 MiB Appends at once (target: under 100 MiB): with
  auth on, the admission interceptor refuses a call without a valid token
  UNAUTHENTICATED before its body is read (without auth, the receive limit,
  which follows the record limit, refuses it RESOURCE_EXHAUSTED).
- One Append of 60 MiB of control characters (target: refused, under 50 MiB),
  while another client appends small records in a loop: its slowest append
  is reported (target: under 100 ms). The same again for a text just inside
  the receive limit, which reaches the server and must be refused by
  ``records.encode`` from its wire size, never escaped six-fold.

``--scale`` shrinks every size (the smoke test runs at 1/64); the targets
are for scale 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from bench import processes
from bench.harness import LOWER, QUICK, Context, Row, figure_target, table
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1 import records_pb2 as rpb
from runjournal_server.api.auth import token_sha256

SECTION = 9
MIB = 1024 * 1024
READERS = 16
RUN_MIB = 48
ATTACKERS = 16
OVERSIZED_MIB = 63
ESCAPED_MIB = 60
RECORD_CHARS = 1000 * 1024  # just under the default 1 MiB record limit, as a line
SMALL_RECORD_CHARS = 16 * 1024
BATCH_BYTES = 3 * MIB  # within the default 4 MiB batch limit
SAMPLE_SECONDS = 0.02
SETTLE_SECONDS = 1.0
"""How long the RSS is sampled after a load is in place (the server's memory, not a condition we can await)."""
GROWTH_TARGET_MIB = 100.0
ESCAPED_TARGET_MIB = 50.0
STALL_TARGET_MS = 100.0
TOKEN = "bench-attack-memory-token"
CHANNEL_OPTIONS = [("grpc.max_send_message_length", 256 * MIB), ("grpc.max_receive_message_length", 256 * MIB)]
CALL_TIMEOUT_SECONDS = 120.0


@dataclass
class RssSampler:
    """Samples a process's VmRSS on a thread; ``peak`` is the largest value seen."""

    process: processes.Process
    peak: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self.peak = self.process.rss_bytes()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.peak = max(self.peak, self.process.rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.peak = max(self.peak, self.process.rss_bytes())


@dataclass
class SmallAppender:
    """Another client appending small records to its own run in a loop; keeps its slowest call."""

    stub: journal_service_pb2_grpc.JournalServiceStub
    run_id: str
    metadata: tuple[tuple[str, str], ...]
    slowest_seconds: float = 0.0
    appends: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> SmallAppender:
        _append(self.stub, self.run_id, _meta(self.run_id), self.metadata)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        seq = 2
        while not self._stop.is_set():
            began = time.perf_counter()
            _append(self.stub, self.run_id, _note(seq, 100), self.metadata)
            self.slowest_seconds = max(self.slowest_seconds, time.perf_counter() - began)
            self.appends += 1
            seq += 1

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()


@dataclass
class Bystander:
    """A ``SmallAppender`` in a process of its own, so the attacker's client-side work (building
    and sending 60 MiB) cannot stall it through this process's GIL: only the server can."""

    address: str
    slowest_seconds: float = 0.0
    appends: int = 0
    _process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Bystander:
        command = [sys.executable, "-m", "bench.attack_memory", "--bystander", self.address]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        ready = self._process.stdout.readline()  # after its first append
        if ready.strip() != "ready":
            self._process.kill()
            raise RuntimeError(f"the bystander did not start: {ready!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        out, _ = self._process.communicate(timeout=CALL_TIMEOUT_SECONDS)  # closing stdin stops it
        slowest, appends = out.split()
        self.slowest_seconds, self.appends = float(slowest), int(appends)


def _bystander_main(address: str) -> int:
    """The bystander process: append until stdin closes, then print the slowest append and the count."""
    with grpc.insecure_channel(address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        metadata = (("authorization", f"Bearer {TOKEN}"),)
        with SmallAppender(stub, "bystander-run", metadata) as appender:
            print("ready", flush=True)
            sys.stdin.read()
    print(f"{appender.slowest_seconds} {appender.appends}", flush=True)
    return 0


def _meta(run_id: str) -> rpb.JournalRecord:
    meta = rpb.Meta(format_version=1, run_id=run_id, fingerprint=rpb.Fingerprint(provider="p", model="m"))
    meta.prompt.add().text.text = "hello"
    meta.created_at.FromSeconds(1_700_000_000)
    return rpb.JournalRecord(seq=1, meta=meta)


def _note(seq: int, chars: int, char: str = "n") -> rpb.JournalRecord:
    return rpb.JournalRecord(seq=seq, optional=True, note=rpb.Note(text=char * chars))


def _append(stub, run_id: str, record: rpb.JournalRecord, metadata: Sequence[tuple[str, str]] = ()) -> None:
    stub.Append(
        pb.AppendRequest(run_id=run_id, claim_token=1, record=record),
        metadata=tuple(metadata),
        timeout=CALL_TIMEOUT_SECONDS,
    )


def _settle(sampler: RssSampler) -> None:
    """Let the sampler watch the load in place for a moment (the figure is a peak over time)."""
    threading.Event().wait(SETTLE_SECONDS)
    sampler.peak = max(sampler.peak, sampler.process.rss_bytes())


@contextmanager
def _server(ctx: Context, label: str, data_dir: Path, *args: str) -> Iterator[processes.Process]:
    with processes.runjournal(data_dir, ctx.work_dir, extra_args=args, label=label) as server:
        yield server


def _stub(server: processes.Process) -> tuple[grpc.Channel, journal_service_pb2_grpc.JournalServiceStub]:
    channel = grpc.insecure_channel(server.address, options=CHANNEL_OPTIONS)
    return channel, journal_service_pb2_grpc.JournalServiceStub(channel)


def _growth_row(name: str, idle: int, peak: int, target_mib: float, note: str = "") -> Row:
    row = Row(SECTION, name, (peak - idle) / MIB, "MiB", "idle RSS", idle / MIB, LOWER, note=note)
    return figure_target(row, "<", target_mib)


# ------------------------------------------------------------------ scenarios


def stalled_readers(ctx: Context, scale: float) -> list[Row]:
    """Both ends of the record sizes: maximal records (the worst case per reader) and small ones."""
    return [*_stalled_readers(ctx, scale, RECORD_CHARS), *_stalled_readers(ctx, scale, SMALL_RECORD_CHARS)]


def _build_run(ctx: Context, data_dir: Path, run_id: str, records: int, chars: int) -> None:
    per_batch = max(1, (BATCH_BYTES // chars))
    with _server(ctx, "readers-build", data_dir) as server:
        channel, stub = _stub(server)
        with channel:
            _append(stub, run_id, _meta(run_id))
            for first in range(2, records + 2, per_batch):
                batch = [_note(seq, chars) for seq in range(first, min(first + per_batch, records + 2))]
                stub.AppendBatch(
                    pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch), timeout=CALL_TIMEOUT_SECONDS
                )


def _stalled_readers(ctx: Context, scale: float, chars: int) -> list[Row]:
    data_dir = ctx.new_dir("attack-readers")
    records = max(2, round(RUN_MIB * MIB * scale / chars))
    run_id = "stalled-read-run"
    _build_run(ctx, data_dir, run_id, records, chars)
    size = f"{records * chars / MIB:.0f} MiB run of {chars // 1024} KiB records"
    ctx.log(f"attack_memory: a {size} built; {READERS} readers stall on it")
    # A fresh server: the run is cold, as a reader of an old run finds it.
    with _server(ctx, "readers", data_dir) as server:
        channel, stub = _stub(server)
        with channel:
            idle = server.rss_bytes()
            with RssSampler(server) as during:
                readers = []
                for _ in range(READERS):
                    stream = stub.Read(pb.ReadRequest(run_id=run_id), timeout=CALL_TIMEOUT_SECONDS)
                    next(stream)  # the stream is running; it is never consumed further
                    readers.append(stream)
                _settle(during)
            for stream in readers:
                stream.cancel()
            with RssSampler(server) as after:
                _settle(after)
            held = server.rss_bytes()
    return [
        _growth_row(f"RSS growth, {READERS} stalled readers of a {size}", idle, during.peak, GROWTH_TARGET_MIB),
        _growth_row("RSS growth left 1 s after those readers cancel", idle, held, GROWTH_TARGET_MIB),
    ]


def _tokens_file(ctx: Context) -> Path:
    path = ctx.new_dir("attack-tokens") / "tokens.toml"
    path.write_text(f'[[tokens]]\nname = "bench"\nsha256 = "{token_sha256(TOKEN)}"\nrun_id_prefixes = [""]\n')
    return path


def oversized_appends(ctx: Context, scale: float) -> list[Row]:
    size = max(int(OVERSIZED_MIB * MIB * scale), 5 * MIB)  # always over the default receive limit (~4 MiB)
    request = pb.AppendRequest(run_id="anonymous", claim_token=1, record=_note(2, size)).SerializeToString()
    with _server(ctx, "oversized", ctx.new_dir("attack-oversized"), "--auth-tokens-file", str(_tokens_file(ctx))) as s:
        channel = grpc.insecure_channel(s.address, options=CHANNEL_OPTIONS)
        with channel:
            # Raw bytes: one serialised request shared by every call, so the client holds it once.
            append = channel.unary_unary(
                "/runjournal.v1.JournalService/Append", request_serializer=bytes, response_deserializer=bytes
            )
            idle = s.rss_bytes()
            with RssSampler(s) as sampler:
                calls = [append.future(request, timeout=CALL_TIMEOUT_SECONDS) for _ in range(ATTACKERS)]
                codes = [_code_of(call) for call in calls]
    note = "answers: " + ", ".join(sorted({code.name for code in codes}))
    name = f"RSS growth, {ATTACKERS} unauthenticated {size / MIB:.0f} MiB Appends at once"
    return [_growth_row(name, idle, sampler.peak, GROWTH_TARGET_MIB, note=note)]


def _code_of(call: grpc.Future) -> grpc.StatusCode:
    try:
        call.result()
    except grpc.RpcError as err:
        return err.code()  # type: ignore[attr-defined, no-any-return]
    return grpc.StatusCode.OK


def escaped_text(ctx: Context, scale: float) -> list[Row]:
    tokens = _tokens_file(ctx)
    huge = max(int(ESCAPED_MIB * MIB * scale), 5 * MIB)  # always over the default receive limit (~4 MiB)
    return [
        *_escaped_case(ctx, tokens, f"{huge / MIB:.0f} MiB", huge),
        *_escaped_case(ctx, tokens, "4 MiB (inside the receive limit)", 4 * MIB - 4096),
    ]


def _escaped_case(ctx: Context, tokens: Path, label: str, chars: int) -> list[Row]:
    """One Append of ``chars`` control characters (6 JSON bytes each) while a bystander appends."""
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    record = _note(2, chars, "\x01")
    with _server(ctx, "escaped", ctx.new_dir("attack-escaped"), "--auth-tokens-file", str(tokens)) as server:
        channel, stub = _stub(server)
        with channel:
            _append(stub, "escaped-run", _meta("escaped-run"), metadata)
            idle = server.rss_bytes()
            with Bystander(server.address) as bystander, RssSampler(server) as sampler:
                code = _append_code(stub, "escaped-run", record, metadata)
    note = f"answer {code.name}; a bystander made {bystander.appends} appends meanwhile"
    growth = _growth_row(
        f"RSS growth, one {label} control-character Append", idle, sampler.peak, ESCAPED_TARGET_MIB, note
    )
    stall_ms = bystander.slowest_seconds * 1000
    stall = Row(SECTION, f"slowest bystander append during the {label} one", stall_ms, "ms", "", None, LOWER)
    return [growth, figure_target(stall, "<", STALL_TARGET_MS)]


def _append_code(stub, run_id: str, record: rpb.JournalRecord, metadata: Sequence[tuple[str, str]]) -> grpc.StatusCode:
    try:
        _append(stub, run_id, record, metadata)
    except grpc.RpcError as err:
        return err.code()  # type: ignore[attr-defined, no-any-return]
    return grpc.StatusCode.OK


def run(ctx: Context, scale: float = 1.0) -> list[Row]:
    return [*stalled_readers(ctx, scale), *oversized_appends(ctx, scale), *escaped_text(ctx, scale)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.attack_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink every size by this factor (default 1)")
    parser.add_argument("--bystander", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bystander:
        return _bystander_main(args.bystander)
    with tempfile.TemporaryDirectory(prefix="runjournal-attack-") as scratch:
        rows = run(Context(QUICK, Path(scratch)), args.scale)
    print(f"\nserver memory under hostile loads (scale {args.scale:g}; targets are for scale 1)\n")
    print(table(rows))
    for row in rows:
        if row.note:
            print(f"- {row.name}: {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
