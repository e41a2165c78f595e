import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from runjournal.v1 import records_pb2 as _records_pb2
from runjournal.v1 import state_pb2 as _state_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppendRequest(_message.Message):
    __slots__ = ("run_id", "claim_token", "record")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    claim_token: int
    record: _records_pb2.JournalRecord
    def __init__(self, run_id: _Optional[str] = ..., claim_token: _Optional[int] = ..., record: _Optional[_Union[_records_pb2.JournalRecord, _Mapping]] = ...) -> None: ...

class AppendResponse(_message.Message):
    __slots__ = ("seq", "duplicate", "last_seq")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    duplicate: bool
    last_seq: int
    def __init__(self, seq: _Optional[int] = ..., duplicate: _Optional[bool] = ..., last_seq: _Optional[int] = ...) -> None: ...

class AppendBatchRequest(_message.Message):
    __slots__ = ("run_id", "claim_token", "records")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    claim_token: int
    records: _containers.RepeatedCompositeFieldContainer[_records_pb2.JournalRecord]
    def __init__(self, run_id: _Optional[str] = ..., claim_token: _Optional[int] = ..., records: _Optional[_Iterable[_Union[_records_pb2.JournalRecord, _Mapping]]] = ...) -> None: ...

class AppendBatchResponse(_message.Message):
    __slots__ = ("first_seq", "duplicates", "last_seq")
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    first_seq: int
    duplicates: int
    last_seq: int
    def __init__(self, first_seq: _Optional[int] = ..., duplicates: _Optional[int] = ..., last_seq: _Optional[int] = ...) -> None: ...

class ClaimRequest(_message.Message):
    __slots__ = ("run_id", "worker_id", "host", "pid", "reason", "fingerprint", "force", "conversation_from", "uncompacted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FROM_FIELD_NUMBER: _ClassVar[int]
    UNCOMPACTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    worker_id: str
    host: str
    pid: int
    reason: str
    fingerprint: _records_pb2.Fingerprint
    force: bool
    conversation_from: int
    uncompacted: bool
    def __init__(self, run_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., reason: _Optional[str] = ..., fingerprint: _Optional[_Union[_records_pb2.Fingerprint, _Mapping]] = ..., force: _Optional[bool] = ..., conversation_from: _Optional[int] = ..., uncompacted: _Optional[bool] = ...) -> None: ...

class ClaimResponse(_message.Message):
    __slots__ = ("claim_token", "last_seq", "state", "gate", "resume_reminder")
    CLAIM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    GATE_FIELD_NUMBER: _ClassVar[int]
    RESUME_REMINDER_FIELD_NUMBER: _ClassVar[int]
    claim_token: int
    last_seq: int
    state: _state_pb2.RunState
    gate: _state_pb2.GateReport
    resume_reminder: str
    def __init__(self, claim_token: _Optional[int] = ..., last_seq: _Optional[int] = ..., state: _Optional[_Union[_state_pb2.RunState, _Mapping]] = ..., gate: _Optional[_Union[_state_pb2.GateReport, _Mapping]] = ..., resume_reminder: _Optional[str] = ...) -> None: ...

class FoldRequest(_message.Message):
    __slots__ = ("run_id", "as_of_seq", "conversation_from", "uncompacted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AS_OF_SEQ_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FROM_FIELD_NUMBER: _ClassVar[int]
    UNCOMPACTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    as_of_seq: int
    conversation_from: int
    uncompacted: bool
    def __init__(self, run_id: _Optional[str] = ..., as_of_seq: _Optional[int] = ..., conversation_from: _Optional[int] = ..., uncompacted: _Optional[bool] = ...) -> None: ...

class FoldResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: _state_pb2.RunState
    def __init__(self, state: _Optional[_Union[_state_pb2.RunState, _Mapping]] = ...) -> None: ...

class AnswerRequest(_message.Message):
    __slots__ = ("run_id", "tool_use_id", "content", "is_error")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_use_id: str
    content: _containers.RepeatedCompositeFieldContainer[_records_pb2.ContentBlock]
    is_error: bool
    def __init__(self, run_id: _Optional[str] = ..., tool_use_id: _Optional[str] = ..., content: _Optional[_Iterable[_Union[_records_pb2.ContentBlock, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class AnswerResponse(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...

class ApproveRequest(_message.Message):
    __slots__ = ("run_id", "tool_use_id", "decision", "approver", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_use_id: str
    decision: _records_pb2.Decision
    approver: str
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., tool_use_id: _Optional[str] = ..., decision: _Optional[_Union[_records_pb2.Decision, str]] = ..., approver: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ApproveResponse(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "status", "labels", "waiting_for_person", "task_id", "parent_run_id", "stopped_before", "spawned_by_run_id", "root_run_id")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_PERSON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STOPPED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    SPAWNED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    status: _state_pb2.RunStatus
    labels: _containers.ScalarMap[str, str]
    waiting_for_person: bool
    task_id: str
    parent_run_id: str
    stopped_before: _timestamp_pb2.Timestamp
    spawned_by_run_id: str
    root_run_id: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., status: _Optional[_Union[_state_pb2.RunStatus, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., waiting_for_person: _Optional[bool] = ..., task_id: _Optional[str] = ..., parent_run_id: _Optional[str] = ..., stopped_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., spawned_by_run_id: _Optional[str] = ..., root_run_id: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[_state_pb2.RunSummary]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[_state_pb2.RunSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ReadRequest(_message.Message):
    __slots__ = ("run_id", "from_seq")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    from_seq: int
    def __init__(self, run_id: _Optional[str] = ..., from_seq: _Optional[int] = ...) -> None: ...

class ReadResponse(_message.Message):
    __slots__ = ("record", "stored_line", "seq")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    STORED_LINE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    record: _records_pb2.JournalRecord
    stored_line: bytes
    seq: int
    def __init__(self, record: _Optional[_Union[_records_pb2.JournalRecord, _Mapping]] = ..., stored_line: _Optional[bytes] = ..., seq: _Optional[int] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("run_id", "after_seq")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    after_seq: int
    def __init__(self, run_id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("record", "caught_up")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    record: ReadResponse
    caught_up: CaughtUp
    def __init__(self, record: _Optional[_Union[ReadResponse, _Mapping]] = ..., caught_up: _Optional[_Union[CaughtUp, _Mapping]] = ...) -> None: ...

class CaughtUp(_message.Message):
    __slots__ = ("head_seq",)
    HEAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    head_seq: int
    def __init__(self, head_seq: _Optional[int] = ...) -> None: ...

class WatchRunsRequest(_message.Message):
    __slots__ = ("status", "labels", "waiting_for_person", "task_id", "parent_run_id", "spawned_by_run_id", "root_run_id")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_PERSON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAWNED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    status: _state_pb2.RunStatus
    labels: _containers.ScalarMap[str, str]
    waiting_for_person: bool
    task_id: str
    parent_run_id: str
    spawned_by_run_id: str
    root_run_id: str
    def __init__(self, status: _Optional[_Union[_state_pb2.RunStatus, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., waiting_for_person: _Optional[bool] = ..., task_id: _Optional[str] = ..., parent_run_id: _Optional[str] = ..., spawned_by_run_id: _Optional[str] = ..., root_run_id: _Optional[str] = ...) -> None: ...

class WatchRunsResponse(_message.Message):
    __slots__ = ("run", "caught_up", "left")
    RUN_FIELD_NUMBER: _ClassVar[int]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    run: _state_pb2.RunSummary
    caught_up: CaughtUp
    left: RunLeft
    def __init__(self, run: _Optional[_Union[_state_pb2.RunSummary, _Mapping]] = ..., caught_up: _Optional[_Union[CaughtUp, _Mapping]] = ..., left: _Optional[_Union[RunLeft, _Mapping]] = ...) -> None: ...

class RunLeft(_message.Message):
    __slots__ = ("run_id", "deleted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    deleted: bool
    def __init__(self, run_id: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

class ForkRunRequest(_message.Message):
    __slots__ = ("run_id", "at_seq", "new_run_id")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AT_SEQ_FIELD_NUMBER: _ClassVar[int]
    NEW_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    at_seq: int
    new_run_id: str
    def __init__(self, run_id: _Optional[str] = ..., at_seq: _Optional[int] = ..., new_run_id: _Optional[str] = ...) -> None: ...

class ForkRunResponse(_message.Message):
    __slots__ = ("run_id", "last_seq", "forked_from")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    FORKED_FROM_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    last_seq: int
    forked_from: _records_pb2.ForkOrigin
    def __init__(self, run_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., forked_from: _Optional[_Union[_records_pb2.ForkOrigin, _Mapping]] = ...) -> None: ...

class DeleteRunRequest(_message.Message):
    __slots__ = ("run_id", "expected_last_seq", "with_children")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    WITH_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    expected_last_seq: int
    with_children: bool
    def __init__(self, run_id: _Optional[str] = ..., expected_last_seq: _Optional[int] = ..., with_children: _Optional[bool] = ...) -> None: ...

class DeleteRunResponse(_message.Message):
    __slots__ = ("last_seq", "deleted", "erased")
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    ERASED_FIELD_NUMBER: _ClassVar[int]
    last_seq: int
    deleted: bool
    erased: bool
    def __init__(self, last_seq: _Optional[int] = ..., deleted: _Optional[bool] = ..., erased: _Optional[bool] = ...) -> None: ...

class SpawnRunRequest(_message.Message):
    __slots__ = ("run_id", "tool_use_id", "new_run_id", "meta", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_use_id: str
    new_run_id: str
    meta: _records_pb2.Meta
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., tool_use_id: _Optional[str] = ..., new_run_id: _Optional[str] = ..., meta: _Optional[_Union[_records_pb2.Meta, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class SpawnRunResponse(_message.Message):
    __slots__ = ("run_id", "last_seq", "spawned_by", "deferral_seq", "duplicate")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    SPAWNED_BY_FIELD_NUMBER: _ClassVar[int]
    DEFERRAL_SEQ_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    last_seq: int
    spawned_by: _records_pb2.SpawnOrigin
    deferral_seq: int
    duplicate: bool
    def __init__(self, run_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., spawned_by: _Optional[_Union[_records_pb2.SpawnOrigin, _Mapping]] = ..., deferral_seq: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...
