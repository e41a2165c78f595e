"""What the JetStream backend requires of the NATS server and the stream, checked at start.

Pure: these functions read a server version string and a stream configuration
(the JSON the JetStream API returns) and say what is wrong with them, each
problem with its fix. ``backend.py`` turns the list into one startup error.
See docs/jetstream-backend.md for why each rule exists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from runjournal_server.backends.base import BackendStartError
from runjournal_server.core.records import DEFAULT_MAX_RECORD_BYTES

MIN_SERVER_VERSION = (2, 12, 4)
"""Atomic batch publish, the last-subject-sequence fence on another subject, and their fixes; 2.12.3 cannot
open a stream after one truncated block (nats-server PR #7704), which a crash can leave."""
HEADER_ALLOWANCE_BYTES = 1024
"""Room for our headers (message id, fence, batch, expected stream) on top of a maximal record."""
MAX_ATOMIC_BATCH = 1000
"""The server's limit on messages in one atomic batch."""
MIN_RECORD_BYTES = 64 * 1024
"""Below this a derived record limit would refuse ordinary assistant turns: refuse to start instead."""

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_STREAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")


class StreamConfigError(BackendStartError):
    """The NATS server or the stream cannot keep run journals safely; the message names the fix."""


def parse_server_version(text: str) -> tuple[int, int, int, bool]:
    """``(major, minor, patch, is_release)`` of a semantic version such as ``2.12.3`` or ``2.13.0-beta.1``."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise StreamConfigError(f"the NATS server reports version {text!r}, which is not a semantic version")
    major, minor, patch, prerelease = match.groups()
    return int(major), int(minor), int(patch), prerelease is None


def check_server_version(text: str) -> None:
    """Refuse a server older than ``MIN_SERVER_VERSION``; a pre-release of the minimum is older."""
    major, minor, patch, is_release = parse_server_version(text)
    if (major, minor, patch, is_release) < (*MIN_SERVER_VERSION, True):
        minimum = ".".join(map(str, MIN_SERVER_VERSION))
        raise StreamConfigError(
            f"the NATS server is version {text}; the JetStream backend needs nats-server {minimum} or newer "
            "(atomic batch publish and the fixes it depends on; 2.12.3 cannot reopen a stream after a crash left a "
            "truncated block, nats-server PR #7704): upgrade the server"
        )


def record_limit(max_payload: int, configured: int | None) -> int:
    """The largest record the backend takes from a server accepting messages of ``max_payload`` bytes.

    A limit the user set is kept, and refused at start when the server cannot
    carry it (lowering it silently would refuse records the user was promised).
    Unset, it is the default capped by what the server carries, so a
    nats-server with its default ``max_payload`` (1 MiB) works out of the box
    with records a header allowance smaller than 1 MiB.
    """
    if configured is not None:
        check_max_payload(max_payload, configured)
        return configured
    room = max_payload - HEADER_ALLOWANCE_BYTES
    if room < MIN_RECORD_BYTES:
        raise StreamConfigError(
            f"the NATS server accepts messages of at most {max_payload} bytes (max_payload), too small for run "
            f"records: set max_payload to at least 1MB in the nats-server configuration"
        )
    return min(DEFAULT_MAX_RECORD_BYTES, room)


def check_max_payload(max_payload: int, max_record_bytes: int) -> None:
    """The server must accept a message holding a maximal record (or task document) and our headers."""
    need = max_record_bytes + HEADER_ALLOWANCE_BYTES
    if max_payload < need:
        raise StreamConfigError(
            f"the NATS server accepts messages of at most {max_payload} bytes (max_payload), but a record or task "
            f"may be {max_record_bytes} bytes plus {HEADER_ALLOWANCE_BYTES} bytes of headers: set max_payload to at "
            f"least {need} in the nats-server configuration (e.g. 'max_payload: 8MB'), or lower max_record_bytes"
        )


def validate_subject_prefix(prefix: str) -> str:
    """A prefix of literal subject tokens (``runjournal``, ``acme.journals``); no wildcards."""
    if not prefix or not all(_TOKEN.fullmatch(token) for token in prefix.split(".")):
        raise ValueError(
            f"subject prefix {prefix!r} must be dot-separated tokens of letters, digits, '_' and '-' (no wildcards)"
        )
    return prefix


def validate_stream_name(name: str) -> str:
    if _STREAM_NAME.fullmatch(name) is None:
        raise ValueError(f"stream name {name!r} must be 1-255 letters, digits, '_' and '-'")
    return name


def stream_config(name: str, prefix: str, *, replicas: int) -> dict[str, Any]:
    """The configuration ``--create-stream`` creates: the one ``stream_problems`` accepts with no remarks."""
    return {
        "name": name,
        "description": "runjournal run journals: one write-once message per record",
        "subjects": [f"{prefix}.>"],
        "retention": "limits",
        "storage": "file",
        "num_replicas": replicas,
        "max_msgs_per_subject": 1,
        "discard": "new",
        "discard_new_per_subject": True,
        "max_age": 0,
        "max_msgs": -1,
        "max_bytes": -1,
        "max_msg_size": -1,
        "max_consumers": -1,
        "allow_atomic": True,
        "allow_rollup_hdrs": False,
        "deny_delete": False,  # DeleteRun erases a run's messages; once set it can never be lifted
        "deny_purge": True,
        "duplicate_window": 120 * 1_000_000_000,
    }


def stream_problems(config: Mapping[str, Any], *, prefix: str, max_record_bytes: int) -> list[str]:
    """Everything about ``config`` that could lose, replace, expire or refuse records; each with its fix.

    A limit on messages or bytes is accepted: with discard ``new`` (required
    anyway) a full stream refuses new records, which the backend reports as
    STORAGE_FULL, and never drops a stored one.
    """
    name = str(config.get("name", "?"))
    edit = f"nats stream edit {name}"
    recreate = "recreate the stream (nats stream add) or let runjournal create one with --create-stream"
    problems: list[str] = []

    def need(ok: bool, problem: str) -> None:
        if not ok:
            problems.append(problem)

    subjects = [str(s) for s in config.get("subjects") or ()]
    need(
        any(subject_covers(s, f"{prefix}.>") for s in subjects),
        f"its subjects {subjects} do not capture {prefix}.> where the records live: "
        f"{edit} --subjects '{prefix}.>' (keeping the others)",
    )
    need(
        config.get("storage") == "file",
        f"storage is {config.get('storage')!r}: records would not survive a restart; {recreate} with file storage",
    )
    need(
        config.get("retention", "limits") == "limits",
        f"retention is {config.get('retention')!r}: the stream would remove records once consumers read them; "
        f"{recreate} with --retention limits",
    )
    need(
        config.get("max_msgs_per_subject") == 1,
        f"max_msgs_per_subject is {config.get('max_msgs_per_subject')}: a record subject must hold exactly one "
        f"message so a record is written once: {edit} --max-msgs-per-subject=1",
    )
    need(
        config.get("discard") == "new",
        f"discard is {config.get('discard')!r}: with discard old a full stream drops stored records: "
        f"{edit} --discard=new",
    )
    need(
        config.get("discard_new_per_subject") is True,
        f"discard_new_per_subject is off: a second write to a record subject would replace the record instead of "
        f"being refused: {edit} --discard-per-subject",
    )
    need(
        not config.get("max_age"),
        f"max_age is {config.get('max_age')} ns: stored runs would silently expire: {edit} --max-age=0 (no age limit)",
    )
    max_msg_size = config.get("max_msg_size", -1)
    need(
        max_msg_size in (-1, 0, None) or int(max_msg_size) >= max_record_bytes + HEADER_ALLOWANCE_BYTES,
        f"max_msg_size is {max_msg_size}: a record of up to {max_record_bytes} bytes plus headers would be "
        f"refused: {edit} --max-msg-size=-1",
    )
    need(
        config.get("allow_atomic") is True,
        f"atomic batch publish is off: a multi-record append could not be all-or-nothing: {edit} --allow-batch",
    )
    need(
        not config.get("allow_rollup_hdrs"),
        f"rollup headers are allowed: a publisher could purge records: {edit} --no-allow-rollup",
    )
    need(
        not config.get("allow_msg_ttl") and not config.get("subject_delete_marker_ttl"),
        f"per-message TTLs are allowed: a publisher could make records expire; {recreate} without --allow-msg-ttl",
    )
    need(
        not config.get("allow_msg_counter"),
        f"the stream is a counter stream, whose messages are not stored as published; {recreate}",
    )
    need(
        not config.get("allow_msg_schedules"),
        f"message schedules are allowed: scheduled messages could be written into record subjects: "
        f"{edit} --no-allow-schedules",
    )
    need(
        config.get("persist_mode", "default") in ("default", "", None),
        f"persist_mode is {config.get('persist_mode')!r}: the stream acknowledges before it writes; "
        f"{recreate} with the default persist mode",
    )
    need(
        not config.get("subject_transform"),
        f"a subject transform would store records under other subjects: {edit} --no-transform",
    )
    need(
        not config.get("mirror"),
        "the stream is a mirror and takes no direct writes; point runjournal at a stream of its own",
    )
    need(
        not config.get("sources"),
        "the stream has sources, which write into it without the record fence; point runjournal at a stream "
        "without sources",
    )
    need(
        not config.get("no_ack"),
        f"the stream does not acknowledge writes (no_ack), so no append could be confirmed; {recreate}",
    )
    need(not config.get("sealed"), "the stream is sealed and takes no writes; point runjournal at another stream")
    return problems


def subject_covers(pattern: str, subject: str) -> bool:
    """True when every subject matching ``subject`` also matches ``pattern`` (both may hold wildcards)."""
    want = subject.split(".")
    have = pattern.split(".")
    for index, token in enumerate(have):
        if token == ">":
            return index < len(want)
        if index >= len(want):
            return False
        if want[index] == ">":
            return False
        if token != "*" and (token != want[index] or want[index] == "*"):
            return False
    return len(have) == len(want)


def format_problems(stream: str, problems: Sequence[str]) -> str:
    lines = "\n".join(f"  - {problem}" for problem in problems)
    return f"stream {stream!r} cannot keep run journals safely:\n{lines}"
