"""Hostile input for every RPC of JournalService, sent as raw bytes to a real server.

Requests are drawn by hypothesis from the request descriptors themselves (so
a new RPC or field is fuzzed without touching this file): random strings in
every field, huge and negative numbers, unknown enum values, missing oneofs,
deeply nested content and JSON, mixed with plausible parts (valid records and
fingerprints, the ids of existing runs) to get past the first checks. Each
request is serialised and sent through a generic byte-level call, so it can
also be tampered with: string fields carrying invalid UTF-8, truncated or
malformed wire bytes, messages nested past the parser's limit, and messages
past the server's gRPC size limit.

Every answer must be a clear status with an ErrorInfo whose reason matches the
code (only gRPC's own size limit answers without one), never INTERNAL or
UNKNOWN; the server must stay up; and a refused request must not change a byte
of the data directory.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2
from runjournal_server.api.status import STATUS_CODES
from runjournal_server.core.errors import Reason
from tests.durability.harness import CALL_TIMEOUT_SECONDS, LaunchedServer, error_info, memory_data_dir, snapshot
from tests.support import builders as b
from tests.support import strategies as valid

SERVICE = pb.DESCRIPTOR.services_by_name["JournalService"]
METHODS = [method.name for method in SERVICE.methods]
MAX_MESSAGE_BYTES = 256 << 10
MAX_RECORD_BYTES = 32 << 10
STRUCTURED_EXAMPLES = 220
RAW_EXAMPLES = 90
ALLOWED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.DATA_LOSS,
}
GRPC_SIZE_LIMIT = "larger than max"
"""What gRPC itself says when a message exceeds the limit (the one answer without an ErrorInfo)."""

# ---------------------------------------------------------------- the runs that must not change

VICTIMS = {
    # run id -> (records, deferred call ids)
    "victim-open": [b.meta(run_id="victim-open"), b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1")],
    "victim-deferred": [b.meta(run_id="victim-deferred"), b.assistant(2, 1, ["d1"]), b.deferral(3, "d1")],
    "victim-done": [b.meta(run_id="victim-done"), b.assistant(2, 1), b.terminal(3)],
}
CALL_IDS = ["c1", "c2", "d1", "x"]
MARK = "\u2603MARK\u2603"
"""A string the generator may put in any string field; on the wire it becomes invalid UTF-8 of the same length."""
INVALID_UTF8 = [
    b"\xffMARK\xfe\xfe\xfe\xfe\xfe",  # bytes that never occur in UTF-8
    b"\xc0\xafMARK\xed\xa0\x80\xed\xa0",  # an overlong encoding, then a UTF-16 surrogate
    b"\xe2\x98MARK\x80\x80\x80\x80\xe2",  # a cut sequence, stray continuation bytes, a cut start
]


def deep_json(depth: int, closed: bool = True) -> str:
    return "[" * depth + ("]" * depth if closed else "")


SPECIAL_STRINGS = [
    "",
    " ",
    "\x00",
    "../../etc/passwd",
    "a" * 129,
    "run.with.dots",
    "run*",
    ">",
    "-leading-dash",
    "é🙂",
    "null",
    "{",
    '{"a":',
    "[]",
    "1e999999",
    "NaN",
    "9" * 5000,
    deep_json(64),
    deep_json(65),
    deep_json(100_000),
    deep_json(100_000, closed=False),
    '{"a":' * 70 + "1" + "}" * 70,
    "\ud7ff\ue000\uffff",
    "x" * 40_000,
    MARK,
]


def page_tokens() -> st.SearchStrategy[str]:
    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    shapes = st.sampled_from(
        [b"[", b"[1,2]", b"[1,2,3,4]", b'[1,2,"x"]', b'["a","b","c"]', b'{"a":1,"b":2,"c":3}', b"\xff\xfe",
         deep_json(100_000).encode(), b"[1e999,0,\"x\"]", b'[9999999999999999999999,-1,""]']
    )  # fmt: skip
    return st.one_of(shapes.map(b64), st.binary(max_size=40).map(b64), st.text(max_size=40))


def strings() -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=24), st.sampled_from(SPECIAL_STRINGS), st.text(min_size=100, max_size=2000))


def numbers(low: int, high: int) -> st.SearchStrategy[int]:
    edges = sorted({low, high, 0, 1, max(low, -1), high // 2, low // 2})
    return st.one_of(st.integers(low, high), st.sampled_from(edges), st.integers(max(low, -3), min(high, 12)))


_INT_RANGES = {
    FieldDescriptor.CPPTYPE_INT32: (-(1 << 31), (1 << 31) - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(1 << 63), (1 << 63) - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, (1 << 32) - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, (1 << 64) - 1),
}
MAX_DEPTH = 4


@st.composite
def consecutive_records(draw: st.DrawFn) -> list[records_pb2.JournalRecord]:
    """Valid records (each on its own) at consecutive seqs, as a batch must be."""
    start = draw(st.integers(1, 6))
    return [draw(valid.records(seq=start + i)) for i in range(draw(st.integers(1, 4)))]


def hinted(field: FieldDescriptor) -> st.SearchStrategy[Any] | None:
    """Plausible values for fields known by name, to get past the first checks."""
    name = field.name
    if name in ("run_id", "task_id") and field.type == FieldDescriptor.TYPE_STRING:
        return st.sampled_from([*VICTIMS, "victim-new", "absent-run"])
    if name in ("tool_use_id", "id") and field.type == FieldDescriptor.TYPE_STRING:
        return st.sampled_from(CALL_IDS)
    if name in ("seq", "claim_token", "as_of_seq", "from_seq"):
        return st.integers(0, 6)
    if name in ("input_json", "json", "data_json"):
        return st.one_of(valid.json_value_texts, st.sampled_from(SPECIAL_STRINGS[12:23]))
    if name == "page_token":
        return page_tokens()
    if name == "record":
        return valid.records(seq=st.integers(1, 6))
    if name == "records":
        return consecutive_records()
    if name == "fingerprint":
        return st.one_of(valid.fingerprints(), st.just(b.fingerprint()))
    if name == "content" and field.message_type is not None:
        return st.lists(valid.plain_blocks, max_size=3)
    if name == "decision":
        return st.sampled_from([records_pb2.DECISION_APPROVED, records_pb2.DECISION_DENIED])
    if name in ("worker_id", "approver"):
        return valid.nonempty_text
    return None


def field_values(field: FieldDescriptor, depth: int, plausible: bool = False) -> st.SearchStrategy[Any]:
    """Any value of the field's type, or a plausible one (only plausible ones where known, if ``plausible``)."""
    hint = hinted(field)
    if plausible and hint is not None:
        return hint
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return st.dictionaries(field_values(key, depth), field_values(value, depth), max_size=4)
    if field.message_type is not None:
        one = messages(field.message_type, depth + 1, plausible)
    elif field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        one = st.binary(max_size=40) if field.type == FieldDescriptor.TYPE_BYTES else strings()
    elif field.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        one = st.booleans()
    elif field.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        known = [v.number for v in field.enum_type.values]
        one = st.one_of(st.sampled_from(known), numbers(-(1 << 31), (1 << 31) - 1))
    elif field.cpp_type in _INT_RANGES:
        one = numbers(*_INT_RANGES[field.cpp_type])
    else:
        one = st.floats()
    wild = st.lists(one, max_size=4) if field.is_repeated else one
    return wild if hint is None else st.one_of(hint, wild)


@st.composite
def messages(draw: st.DrawFn, descriptor: Descriptor, depth: int = 0, plausible: bool = False) -> Message:
    """A message of ``descriptor`` with random fields set (oneofs: none or one member)."""
    message = GetMessageClass(descriptor)()
    if depth > MAX_DEPTH:
        return message
    skipped = set()
    for oneof in descriptor.oneofs:
        chosen = draw(st.sampled_from([None, *oneof.fields]))
        skipped.update(f.name for f in oneof.fields if f is not chosen)
    for item in descriptor.fields:
        if item.name in skipped:
            continue
        # Plausible requests set every field they know a plausible value for, and most others.
        known = plausible and hinted(item) is not None
        if item.containing_oneof is None and not known and draw(st.integers(0, 4 if plausible else 1)) == 0:
            continue
        value = draw(field_values(item, depth, plausible))
        target = getattr(message, item.name)
        if item.message_type is not None and item.message_type.GetOptions().map_entry:
            target.update(value)
        elif item.is_repeated and item.message_type is not None:
            for element in value:
                target.add().CopyFrom(element)
        elif item.is_repeated:
            target.extend(value)
        elif item.message_type is not None:
            target.CopyFrom(value)
        else:
            setattr(message, item.name, value)
    return message


def request_type(method: str) -> Descriptor:
    return SERVICE.methods_by_name[method].input_type


@st.composite
def structured(draw: st.DrawFn, method: str) -> bytes:
    # Half the requests are plausible where the field is known (an existing run, a valid record), to get
    # past the first checks; the other fields, and every field of the other half, are anything at all.
    wire = draw(messages(request_type(method), plausible=draw(st.booleans()))).SerializeToString()
    if MARK.encode() in wire:
        wire = wire.replace(MARK.encode(), draw(st.sampled_from(INVALID_UTF8)))
    return wire


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def nested_blocks(depth: int) -> bytes:
    """A ContentBlock holding a tool_result holding a ContentBlock ... ``depth`` times."""
    block = _field(1, _field(1, b"deep"))  # ContentBlock.text
    for _ in range(depth):
        block = _field(4, _field(2, block))  # ContentBlock.tool_result -> ToolResultBlock.content
    return block


def deeply_nested(method: str, depth: int) -> bytes:
    """A request of ``method`` whose first repeated ContentBlock field, wherever it is, nests ``depth`` deep."""
    run = _field(1, b"victim-open")
    if method == "Answer":
        return run + _field(3, nested_blocks(depth))
    if method in ("Append", "AppendBatch"):
        record = _varint(1 << 3) + _varint(2) + _field(12, _field(1, nested_blocks(depth)))  # Record.user.content
        return run + _field(3, record)
    return run + _field(15, nested_blocks(depth))  # an unknown field: parsed (and nested) all the same


MALFORMED = [
    b"\x0a",  # a length-delimited field with no length
    b"\x0a\x05ab",  # a length past the end
    b"\x0a\xff\xff\xff\xff\x0f",  # a length of 4 GiB
    b"\x08" + b"\xff" * 10 + b"\x01",  # an 11-byte varint
    b"\x0b",  # a group start that never ends
    b"\x0c",  # a group end with no start
    b"\x00",  # field number 0
    b"\x0f",  # wire type 7
    b"\x0a\x02\xc3\x28",  # field 1 (a string everywhere here) with invalid UTF-8
    b"\x10\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02",  # a varint past 64 bits
]


@st.composite
def raw(draw: st.DrawFn, method: str) -> bytes:
    kind = draw(st.sampled_from(["bytes", "cut", "suffix", "nested"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "nested":
        return deeply_nested(method, draw(st.sampled_from([30, 99, 100, 101, 150, 1000, 5000])))
    wire = draw(structured(method))
    if kind == "cut":
        return wire[: draw(st.integers(0, max(0, len(wire) - 1)))]
    return wire + draw(st.sampled_from(MALFORMED))


# ---------------------------------------------------------------- the server and the check


@dataclass
class Target:
    server: LaunchedServer
    channel: grpc.Channel
    calls: dict[str, Callable[[bytes], object]]
    baseline: dict[str, bytes]
    counts: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    def send(self, method: str, payload: bytes, category: str) -> None:
        """Send one request and check the answer, the server and the data directory."""
        self.counts[method, category] += 1
        try:
            self.calls[method](payload)
        except grpc.RpcError as err:
            check_refusal(err, method, payload)
            after = snapshot(self.server.data_dir)
            assert after == self.baseline, f"{method} refused ({err.code()}) but the data directory changed"
            self.outcomes[method, err.code().name] += 1
        else:
            # Accepted (a valid record at the right seq, a read): journals may only have grown, but for
            # the files of a run an accepted DeleteRun deleted (one the fuzzing itself created).
            after = snapshot(self.server.data_dir)
            deleted = deleted_run(method, payload)
            for name, data in self.baseline.items():
                if deleted is not None and name.startswith(deleted + "."):
                    continue
                assert after.get(name, b"").startswith(data), f"{method} rewrote {name}"
            self.baseline = after
            self.outcomes[method, "OK"] += 1
        assert self.server.alive(), f"the server died on {method} {payload[:200]!r}:\n{self.server.log()[-3000:]}"


def check_refusal(err: grpc.RpcError, method: str, payload: bytes) -> None:
    code = err.code()  # type: ignore[attr-defined]
    where = f"{method} {payload[:120]!r}... ({len(payload)} bytes): {code} {err.details()}"  # type: ignore[attr-defined]
    assert code in ALLOWED, where
    info = error_info(err)
    if info is None:
        # Only gRPC's own message size limit answers without the server's ErrorInfo.
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and GRPC_SIZE_LIMIT in err.details(), where  # type: ignore[attr-defined]
        return
    assert STATUS_CODES[Reason(info.reason)] == code, where


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with memory_data_dir(tmp_path_factory.mktemp("hostile")) as data_dir:
        limits = ("--max-message-bytes", str(MAX_MESSAGE_BYTES), "--max-record-bytes", str(MAX_RECORD_BYTES))
        server = LaunchedServer(data_dir, extra_args=limits).start()
        try:
            with grpc.insecure_channel(server.address) as channel:
                stub = journal_service_pb2_grpc.JournalServiceStub(channel)
                for run_id, batch in VICTIMS.items():
                    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, records=batch), timeout=CALL_TIMEOUT_SECONDS)
                calls = {}
                for method in SERVICE.methods:
                    path = f"/{SERVICE.full_name}/{method.name}"
                    factory = channel.unary_stream if method.server_streaming else channel.unary_unary
                    call = factory(path, request_serializer=bytes, response_deserializer=bytes)
                    if method.name in ENDLESS_STREAMS:
                        calls[method.name] = lambda payload, call=call, name=method.name: read_until_caught_up(
                            call, payload, ENDLESS_STREAMS[name]
                        )
                    elif method.server_streaming:
                        calls[method.name] = lambda payload, call=call: list(
                            call(payload, timeout=CALL_TIMEOUT_SECONDS)
                        )
                    else:
                        calls[method.name] = lambda payload, call=call: call(payload, timeout=CALL_TIMEOUT_SECONDS)
                fuzz = Target(server, channel, calls, snapshot(data_dir))
                yield fuzz
                per_method: Counter[str] = Counter()
                for (method, _), count in fuzz.counts.items():
                    per_method[method] += count
                print(f"hostile input: {sum(per_method.values())} requests, per RPC {dict(per_method)}")
                for method in METHODS:
                    answers = {code: n for (m, code), n in fuzz.outcomes.items() if m == method}
                    print(f"hostile input, {method} answers: {answers}")
                # Still up and healthy, and the runs it had still read the same.
                health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
                assert health.status == health_pb2.HealthCheckResponse.SERVING
                assert stub.Fold(pb.FoldRequest(run_id="victim-deferred")).state.last_seq >= 3
            assert server.stop() == 0, server.log()
        finally:
            if server.alive():
                server.kill()


ENDLESS_STREAMS: dict[str, Any] = {"Watch": pb.WatchResponse, "WatchRuns": pb.WatchRunsResponse}
"""Streams that never end by themselves: an accepted request is read up to its caught_up item, then cancelled."""


def read_until_caught_up(call: Any, payload: bytes, response_class: Any) -> None:
    """Send one request of an endless stream; return at its caught_up item (a refusal raises as any call's)."""
    stream = call(payload, timeout=CALL_TIMEOUT_SECONDS)
    try:
        for item in stream:
            if response_class.FromString(item).HasField("caught_up"):
                return
    finally:
        stream.cancel()
    raise AssertionError("the stream ended without caught_up and without a refusal")


def deleted_run(method: str, payload: bytes) -> str | None:
    """The run a DeleteRun request names (None for any other request, or bytes that do not parse)."""
    if method != "DeleteRun":
        return None
    try:
        return pb.DeleteRunRequest.FromString(payload).run_id
    except DecodeError:
        return None


def deletes_a_victim(method: str, payload: bytes) -> bool:
    """A well-formed DeleteRun of a victim run: a legitimate deletion (this server has no auth), not hostile input.

    The victims must outlive the fuzzing (their journals are what "changes
    nothing" is checked against), and ``victim-open``'s last seq is 1, which
    a generated ``expected_last_seq`` often is.
    """
    return deleted_run(method, payload) in VICTIMS


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


@pytest.mark.parametrize("method", METHODS)
def test_generated_requests_get_clear_refusals_and_change_nothing(target, method):
    @fuzz_settings(STRUCTURED_EXAMPLES)
    @given(payload=structured(method))
    def structured_requests(payload: bytes) -> None:
        assume(not deletes_a_victim(method, payload))
        target.send(method, payload, "structured")

    @fuzz_settings(RAW_EXAMPLES)
    @given(payload=raw(method))
    def malformed_requests(payload: bytes) -> None:
        assume(not deletes_a_victim(method, payload))
        target.send(method, payload, "malformed wire")

    structured_requests()
    malformed_requests()
    # The corpus every run sends, whatever hypothesis draws.
    for payload in corpus(method):
        target.send(method, payload, "corpus")
    counts = {category: n for (m, category), n in target.counts.items() if m == method}
    print(f"hostile input, {method}: {counts}")
    assert counts["structured"] >= STRUCTURED_EXAMPLES // 2 and counts["malformed wire"] >= RAW_EXAMPLES // 2


def corpus(method: str) -> Iterator[bytes]:
    """Fixed hostile requests: past the gRPC size limit, nested past the parser's, each bad string."""
    request = GetMessageClass(request_type(method))
    string_fields = [f for f in request_type(method).fields if f.type == FieldDescriptor.TYPE_STRING]
    for item in string_fields:
        for text in SPECIAL_STRINGS:
            yield request(**{item.name: text}).SerializeToString().replace(MARK.encode(), INVALID_UTF8[0])
        yield request(**{item.name: "z" * (MAX_MESSAGE_BYTES + 1)}).SerializeToString()
    yield b"\x00" * (MAX_MESSAGE_BYTES + 1)
    for depth in (63, 64, 100, 101, 10_000):
        yield deeply_nested(method, depth)
    yield from MALFORMED
    if method in ("Append", "AppendBatch"):
        for depth in (64, 65, 100_000):
            call = b.tool_use("t1", input_json=deep_json(depth))
            record = records_pb2.JournalRecord(seq=4, assistant=records_pb2.AssistantTurn(iteration=2, content=[call]))
            record.assistant.stop_reason = records_pb2.STOP_REASON_TOOL_USE
            field_name = "records" if method == "AppendBatch" else "record"
            value: Any = [record] if method == "AppendBatch" else record
            yield request(run_id="victim-done", claim_token=1, **{field_name: value}).SerializeToString()
    if method == "ListRuns":
        for token in ("[" * 100_000, json.dumps([1, 2, "x" * 100_000])):
            yield pb.ListRunsRequest(page_token=base64.urlsafe_b64encode(token.encode()).decode()).SerializeToString()
