"""The Python conformance runner: replay one scenario file against one server.

The format is conformance/FORMAT.md. Only the raw generated stubs
(``runjournal.v1.*_pb2_grpc``), ``google.protobuf.json_format`` and
``grpc_status`` are used, so a scenario pins what goes over the wire.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import jsonschema
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from runjournal.v1 import journal_service_pb2, journal_service_pb2_grpc, task_service_pb2, task_service_pb2_grpc

CONFORMANCE_DIR = Path(__file__).resolve().parents[2] / "conformance"
SCENARIOS_DIR = CONFORMANCE_DIR / "scenarios"


def scenarios_to_replay() -> Path:
    """The folder the conformance file of ``$RUNJOURNAL_CONFORMANCE`` names, else conformance/scenarios."""
    conformance_file = os.environ.get("RUNJOURNAL_CONFORMANCE")
    if not conformance_file:
        return SCENARIOS_DIR
    return Path(json.loads(Path(conformance_file).read_text())["scenarios_dir"])


SCHEMA_PATH = CONFORMANCE_DIR / "format.schema.json"
DOMAIN = "runjournal.dev"
CALL_TIMEOUT_SECONDS = 10.0
ANY = "${any}"
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_DEFAULTS: tuple[object, ...] = (False, 0, "0", "", [], {})


class Mismatch(AssertionError):
    """A step's answer differs from its expectation; the message says where and how."""


@dataclass(frozen=True)
class Target:
    """One server of the conformance file, with the tokens of the auth-on servers."""

    name: str
    backend: str
    auth: bool
    address: str
    tokens: dict[str, str]


@dataclass(frozen=True)
class Method:
    full_name: str
    request_type: type[Message]
    streaming: bool
    stub: Callable[[grpc.Channel], Any]
    attribute: str


@cache
def methods() -> dict[str, Method]:
    """Every method of both services, by full name and by short name."""
    found: dict[str, Method] = {}
    for module, stub in (
        (journal_service_pb2, journal_service_pb2_grpc.JournalServiceStub),
        (task_service_pb2, task_service_pb2_grpc.TaskServiceStub),
    ):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                entry = Method(
                    full_name=f"{service.full_name}/{method.name}",
                    request_type=getattr(module, method.input_type.name),
                    streaming=method.server_streaming,
                    stub=stub,
                    attribute=method.name,
                )
                assert method.name not in found, f"method name {method.name} is not unique"
                found[method.name] = found[entry.full_name] = entry
    return found


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())  # type: ignore[no-any-return]


def refuse_lone_surrogates(value: object, where: str) -> None:
    """FORMAT.md, "Strings": a string that is not valid UTF-16 (a lone surrogate ``\\ud800``) is refused."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f'{where}: a string with a lone surrogate (FORMAT.md, "Strings")') from err
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_lone_surrogates(item, f"{where}.{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_lone_surrogates(key, where)
            refuse_lone_surrogates(item, f"{where}.{key}")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f'the key {key!r} appears twice in one object (FORMAT.md, "Strict JSON")')
        seen[key] = value
    return seen


def _refuse_number(text: str) -> Any:
    raise ValueError(f'the number {text} is not an integer written in plain digits (FORMAT.md, "Strict JSON")')


def parse_scenario_text(text: str) -> Any:
    """Strict RFC 8259 JSON (FORMAT.md, "Strict JSON"): no NaN/Infinity, no duplicate key, integers only."""
    return json.loads(
        text,
        object_pairs_hook=_refuse_duplicate_keys,
        parse_constant=_refuse_number,
        parse_float=_refuse_number,
    )


def load(path: Path) -> dict[str, Any]:
    """A scenario file (strict UTF-8 JSON, integers exact, no lone surrogate), checked by the schema and its name."""
    scenario: dict[str, Any] = parse_scenario_text(path.read_text(encoding="utf-8"))
    refuse_lone_surrogates(scenario, path.name)
    jsonschema.validate(scenario, schema())
    if scenario["name"] != path.stem:
        raise ValueError(f"{path}: name {scenario['name']!r} is not the file name")
    return scenario


def applies(scenario: dict[str, Any], backend: str, auth: bool) -> bool:
    requires = scenario.get("requires", {})
    return requires.get("auth", auth) == auth and backend in requires.get("backends", [backend])


def new_run_id() -> str:
    return f"cf-{uuid.uuid4().hex[:16]}"


# ---------------------------------------------------------------- substitution


def substitute(value: Any, variables: dict[str, Any], where: str) -> Any:
    if isinstance(value, dict):
        return {substitute(k, variables, where): substitute(v, variables, where) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables, where) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def lookup(name: str) -> Any:
        if name not in variables:
            raise Mismatch(f"{where}: unknown placeholder ${{{name}}} (known: {', '.join(sorted(variables))})")
        return variables[name]

    whole = _PLACEHOLDER.fullmatch(value)
    if whole is not None:
        return value if whole.group(1) == "any" else lookup(whole.group(1))

    def text(match: re.Match[str]) -> str:
        if match.group(1) == "any":
            return match.group(0)
        found = lookup(match.group(1))
        # FORMAT.md, "Substitution": compact JSON text, non-ASCII as itself (as Go, TS and Java write it)
        return found if isinstance(found, str) else json.dumps(found, separators=(",", ":"), ensure_ascii=False)

    return _PLACEHOLDER.sub(text, value)


# ---------------------------------------------------------------- the subset rule


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


def match(expected: Any, actual: Any, path: str) -> None:
    """Raise Mismatch at the first place where ``actual`` does not match ``expected`` (FORMAT.md)."""

    def fail(why: str = "") -> None:
        shown = actual if actual is ABSENT else json.dumps(actual)
        raise Mismatch(f"at {path or '(top)'}: expected {json.dumps(expected)}, got {shown}{why}")

    if expected is None:
        if actual is not ABSENT and actual is not None:
            fail(" (expected absent)")
        return
    if expected == ANY:
        if actual is ABSENT or actual is None:
            fail(" (expected present)")
        return
    if actual is ABSENT:
        if not any(type(expected) is type(d) and expected == d for d in _DEFAULTS):
            fail()
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            fail()
        for key, value in expected.items():
            match(value, actual.get(key, ABSENT), f"{path}.{key}" if path else key)
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            fail(f" (expected {len(expected)} items)")
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            match(e, a, f"{path}[{index}]")
        return
    if isinstance(expected, bool) or isinstance(actual, bool):
        if type(expected) is not type(actual) or expected != actual:
            fail()
        return
    if isinstance(expected, int | float):
        if isinstance(actual, int | float) and actual == expected:
            return
        if isinstance(actual, str) and isinstance(expected, int) and actual == str(expected):
            return
        fail()
    if type(expected) is not type(actual) or expected != actual:
        fail()


def lookup_path(document: Any, path: str, where: str) -> Any:
    value = document
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise Mismatch(f"{where}: save path {path!r} finds nothing in {json.dumps(document)}")
    return value


# ---------------------------------------------------------------- replay


def _error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


def _metadata(step: dict[str, Any], target: Target) -> tuple[tuple[str, str], ...]:
    token = step.get("metadata", {}).get("token", "worker")
    if not target.auth or token == "none":
        return ()
    return (("authorization", f"Bearer {target.tokens[token]}"),)


def _to_json(message: Message) -> Any:
    return json_format.MessageToDict(message)


def replay(scenario: dict[str, Any], target: Target, run_id: str | None = None) -> None:
    """Replay every step; raise Mismatch naming the scenario, step and place of the first difference."""
    variables: dict[str, Any] = {"run": run_id or new_run_id()}
    with grpc.insecure_channel(target.address) as channel:
        for index, step in enumerate(scenario["steps"]):
            where = f"scenario {scenario['name']} on {target.name}, step {index} ({step['rpc']})"
            try:
                _replay_step(channel, step, target, variables, where)
            except Mismatch as err:
                message = str(err)
                raise Mismatch(message if message.startswith(where) else f"{where}: {message}") from None


def _replay_step(
    channel: grpc.Channel, step: dict[str, Any], target: Target, variables: dict[str, Any], where: str
) -> None:
    method = methods()[step["rpc"]]
    if "error" in step["expect"] and "save" in step:
        raise Mismatch(f"{where}: save is allowed only on a step that expects a response or a stream")
    request_json = substitute(step["request"], variables, where)
    expect = substitute(step["expect"], variables, where)
    try:
        request = json_format.ParseDict(request_json, method.request_type())
    except json_format.ParseError as err:
        raise Mismatch(f"{where}: the request is not valid proto3 JSON for {method.full_name}: {err}") from None
    call = getattr(method.stub(channel), method.attribute)
    metadata = _metadata(step, target)
    take = expect.get("stream", {}).get("take")
    during = _during(channel, step, take, target, variables, where)
    answer: Any
    try:
        if method.streaming:
            answer = _stream(call(request, metadata=metadata, timeout=CALL_TIMEOUT_SECONDS), take, during)
        else:
            answer = _to_json(call(request, metadata=metadata, timeout=CALL_TIMEOUT_SECONDS))
    except _TakeCut as cut:
        raise Mismatch(
            f"{where}: expected {take} stream messages before cancelling, the stream "
            f"{cut.why} after {len(cut.taken)}: {json.dumps(cut.taken)}"
        ) from None
    except grpc.RpcError as err:
        _check_error(err, expect, where)
        return
    if "error" in expect:
        raise Mismatch(
            f"{where}: expected error {expect['error']['code']} {expect['error']['reason']}, "
            f"got success {json.dumps(answer)}"
        )
    if "stream" in expect:
        if not method.streaming:
            raise Mismatch(f"{where}: expect.stream on a unary method")
        items, exact = expect["stream"]["items"], expect["stream"].get("exact", False)
        if take is not None and take < len(items):
            raise Mismatch(f"{where}: expect.stream.take {take} is fewer than its {len(items)} items")
        if len(answer) < len(items) or (exact and len(answer) != len(items)):
            raise Mismatch(
                f"{where}: expected {'exactly' if exact else 'at least'} {len(items)} stream messages, "
                f"got {len(answer)}: {json.dumps(answer)}"
            )
        for i, item in enumerate(items):
            _match(item, answer[i], f"[{i}]", where)
    else:
        if method.streaming:
            raise Mismatch(f"{where}: expect.response on a streaming method")
        _match(expect["response"], answer, "", where)
    for name, path in step.get("save", {}).items():
        variables[f"save.{name}"] = lookup_path(answer, path, where)


def _during(
    channel: grpc.Channel,
    step: dict[str, Any],
    take: int | None,
    target: Target,
    variables: dict[str, Any],
    where: str,
) -> tuple[int, Callable[[], None]] | None:
    """FORMAT.md, "Concurrent steps": after how many messages, and what, the steps of ``during`` replay."""
    during = step.get("during")
    if during is None:
        return None
    after = during["after"]
    if take is None or not 1 <= after < take:
        raise Mismatch(f"{where}: during needs expect.stream.take, and 1 <= during.after < take")

    def run() -> None:
        for index, inner in enumerate(during["steps"]):
            inner_where = f"{where}, during step {index} ({inner['rpc']})"
            if "during" in inner:
                raise Mismatch(f"{inner_where}: a step of during has no during of its own")
            try:
                _replay_step(channel, inner, target, variables, inner_where)
            except Mismatch as err:
                message = str(err)
                raise Mismatch(message if message.startswith(inner_where) else f"{inner_where}: {message}") from None

    return after, run


class _TakeCut(Exception):
    """A stream read with ``take`` that ended, or failed, before sending that many messages."""

    def __init__(self, taken: list[Any], why: str) -> None:
        super().__init__(why)
        self.taken = taken
        self.why = why


def _stream(call: Any, take: int | None, during: tuple[int, Callable[[], None]] | None = None) -> list[Any]:
    """A streaming call's messages as JSON: all of them, or (``take``) the first N, then the call is cancelled.

    A stream that never ends by itself (Watch, WatchRuns) is read with ``take``.
    A failure before the first message is the call's error, so an error
    expectation still applies; one after it, or an end before N, cuts the take.
    With ``during`` (after, run), ``run`` replays its steps once ``after``
    messages have arrived, the stream still open.
    """
    if take is None:
        return [_to_json(m) for m in call]
    taken: list[Any] = []
    try:
        for message in call:
            taken.append(_to_json(message))
            if during is not None and len(taken) == during[0]:
                during[1]()
            if len(taken) == take:
                return taken
    except grpc.RpcError as err:
        if not taken:
            raise
        raise _TakeCut(taken, f"failed {err.code().name}") from None  # type: ignore[attr-defined]
    finally:
        call.cancel()
    raise _TakeCut(taken, "ended")


def _match(expected: Any, actual: Any, path: str, where: str) -> None:
    try:
        match(expected, actual, path)
    except Mismatch as err:
        raise Mismatch(f"{where}: {err} (whole answer: {json.dumps(actual)})") from None


def _check_error(err: grpc.RpcError, expect: dict[str, Any], where: str) -> None:
    code = err.code().name  # type: ignore[attr-defined]
    info = _error_info(err)
    got = f"{code} {info.reason if info else '(no ErrorInfo)'} {dict(info.metadata) if info else {}}: {err.details()}"  # type: ignore[attr-defined]
    if "error" not in expect:
        raise Mismatch(f"{where}: expected success, got error {got}")
    wanted = expect["error"]
    if code != wanted["code"]:
        raise Mismatch(f"{where}: at code: expected {wanted['code']}, got {got}")
    if info is None:
        raise Mismatch(f"{where}: the error carries no google.rpc.ErrorInfo: {got}")
    if info.domain != DOMAIN:
        raise Mismatch(f"{where}: at domain: expected {DOMAIN}, got {info.domain!r}")
    if info.reason != wanted["reason"]:
        raise Mismatch(f"{where}: at reason: expected {wanted['reason']}, got {got}")
    try:
        match(wanted.get("metadata", {}), dict(info.metadata), "metadata")
    except Mismatch as mismatch:
        raise Mismatch(f"{where}: {mismatch}") from None
