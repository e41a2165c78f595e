import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from runjournal.v1 import records_pb2 as _records_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATUS_UNSPECIFIED: _ClassVar[RunStatus]
    RUN_STATUS_OPEN: _ClassVar[RunStatus]
    RUN_STATUS_COMPLETED: _ClassVar[RunStatus]
    RUN_STATUS_SUSPENDED: _ClassVar[RunStatus]
    RUN_STATUS_ERROR: _ClassVar[RunStatus]
    RUN_STATUS_BUDGET: _ClassVar[RunStatus]
    RUN_STATUS_MAX_ITERATIONS: _ClassVar[RunStatus]
    RUN_STATUS_CANCELLED: _ClassVar[RunStatus]
    RUN_STATUS_CORRUPT: _ClassVar[RunStatus]
    RUN_STATUS_UNAVAILABLE: _ClassVar[RunStatus]

class FieldClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FIELD_CLASS_UNSPECIFIED: _ClassVar[FieldClass]
    FIELD_CLASS_HARD: _ClassVar[FieldClass]
    FIELD_CLASS_BLOCKING: _ClassVar[FieldClass]
    FIELD_CLASS_TOOLS: _ClassVar[FieldClass]
    FIELD_CLASS_BUDGET: _ClassVar[FieldClass]

class WaitingFor(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WAITING_FOR_UNSPECIFIED: _ClassVar[WaitingFor]
    WAITING_FOR_ANSWER: _ClassVar[WaitingFor]
    WAITING_FOR_DECISION: _ClassVar[WaitingFor]
    WAITING_FOR_WORKER: _ClassVar[WaitingFor]
    WAITING_FOR_NOTHING: _ClassVar[WaitingFor]
    WAITING_FOR_CHILD: _ClassVar[WaitingFor]
RUN_STATUS_UNSPECIFIED: RunStatus
RUN_STATUS_OPEN: RunStatus
RUN_STATUS_COMPLETED: RunStatus
RUN_STATUS_SUSPENDED: RunStatus
RUN_STATUS_ERROR: RunStatus
RUN_STATUS_BUDGET: RunStatus
RUN_STATUS_MAX_ITERATIONS: RunStatus
RUN_STATUS_CANCELLED: RunStatus
RUN_STATUS_CORRUPT: RunStatus
RUN_STATUS_UNAVAILABLE: RunStatus
FIELD_CLASS_UNSPECIFIED: FieldClass
FIELD_CLASS_HARD: FieldClass
FIELD_CLASS_BLOCKING: FieldClass
FIELD_CLASS_TOOLS: FieldClass
FIELD_CLASS_BUDGET: FieldClass
WAITING_FOR_UNSPECIFIED: WaitingFor
WAITING_FOR_ANSWER: WaitingFor
WAITING_FOR_DECISION: WaitingFor
WAITING_FOR_WORKER: WaitingFor
WAITING_FOR_NOTHING: WaitingFor
WAITING_FOR_CHILD: WaitingFor

class Counters(_message.Message):
    __slots__ = ("llm_calls", "tool_calls", "remote_tool_calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "deferrals")
    LLM_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DEFERRALS_FIELD_NUMBER: _ClassVar[int]
    llm_calls: int
    tool_calls: int
    remote_tool_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    deferrals: int
    def __init__(self, llm_calls: _Optional[int] = ..., tool_calls: _Optional[int] = ..., remote_tool_calls: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., deferrals: _Optional[int] = ...) -> None: ...

class PendingCall(_message.Message):
    __slots__ = ("tool_use", "answered", "result_seq", "result", "deferred", "deferral_seq", "deferral", "decision", "approval_seq", "approval", "waiting_for_person", "waiting_for", "child_run_id", "child_status")
    TOOL_USE_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    RESULT_SEQ_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_FIELD_NUMBER: _ClassVar[int]
    DEFERRAL_SEQ_FIELD_NUMBER: _ClassVar[int]
    DEFERRAL_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_SEQ_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_PERSON_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_FIELD_NUMBER: _ClassVar[int]
    CHILD_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_STATUS_FIELD_NUMBER: _ClassVar[int]
    tool_use: _records_pb2.ToolUseBlock
    answered: bool
    result_seq: int
    result: _records_pb2.ToolResult
    deferred: bool
    deferral_seq: int
    deferral: _records_pb2.Deferral
    decision: _records_pb2.Decision
    approval_seq: int
    approval: _records_pb2.Approval
    waiting_for_person: bool
    waiting_for: WaitingFor
    child_run_id: str
    child_status: RunStatus
    def __init__(self, tool_use: _Optional[_Union[_records_pb2.ToolUseBlock, _Mapping]] = ..., answered: _Optional[bool] = ..., result_seq: _Optional[int] = ..., result: _Optional[_Union[_records_pb2.ToolResult, _Mapping]] = ..., deferred: _Optional[bool] = ..., deferral_seq: _Optional[int] = ..., deferral: _Optional[_Union[_records_pb2.Deferral, _Mapping]] = ..., decision: _Optional[_Union[_records_pb2.Decision, str]] = ..., approval_seq: _Optional[int] = ..., approval: _Optional[_Union[_records_pb2.Approval, _Mapping]] = ..., waiting_for_person: _Optional[bool] = ..., waiting_for: _Optional[_Union[WaitingFor, str]] = ..., child_run_id: _Optional[str] = ..., child_status: _Optional[_Union[RunStatus, str]] = ...) -> None: ...

class PendingBatch(_message.Message):
    __slots__ = ("assistant_seq", "iteration", "assistant", "calls")
    ASSISTANT_SEQ_FIELD_NUMBER: _ClassVar[int]
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    assistant_seq: int
    iteration: int
    assistant: _records_pb2.ConversationMessage
    calls: _containers.RepeatedCompositeFieldContainer[PendingCall]
    def __init__(self, assistant_seq: _Optional[int] = ..., iteration: _Optional[int] = ..., assistant: _Optional[_Union[_records_pb2.ConversationMessage, _Mapping]] = ..., calls: _Optional[_Iterable[_Union[PendingCall, _Mapping]]] = ...) -> None: ...

class RunState(_message.Message):
    __slots__ = ("run_id", "meta", "conversation", "counters", "next_iteration", "last_stop_reason", "pending", "terminal", "status", "effective_fingerprint", "last_seq", "claim_token", "claimed_by", "conversation_offset", "conversation_size", "compaction_seq", "compacted_upto_seq", "uncompacted")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ITERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_BY_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_SIZE_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_SEQ_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_UPTO_SEQ_FIELD_NUMBER: _ClassVar[int]
    UNCOMPACTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    meta: _records_pb2.Meta
    conversation: _containers.RepeatedCompositeFieldContainer[_records_pb2.ConversationMessage]
    counters: Counters
    next_iteration: int
    last_stop_reason: _records_pb2.StopReason
    pending: PendingBatch
    terminal: _records_pb2.Terminal
    status: RunStatus
    effective_fingerprint: _records_pb2.Fingerprint
    last_seq: int
    claim_token: int
    claimed_by: str
    conversation_offset: int
    conversation_size: int
    compaction_seq: int
    compacted_upto_seq: int
    uncompacted: bool
    def __init__(self, run_id: _Optional[str] = ..., meta: _Optional[_Union[_records_pb2.Meta, _Mapping]] = ..., conversation: _Optional[_Iterable[_Union[_records_pb2.ConversationMessage, _Mapping]]] = ..., counters: _Optional[_Union[Counters, _Mapping]] = ..., next_iteration: _Optional[int] = ..., last_stop_reason: _Optional[_Union[_records_pb2.StopReason, str]] = ..., pending: _Optional[_Union[PendingBatch, _Mapping]] = ..., terminal: _Optional[_Union[_records_pb2.Terminal, _Mapping]] = ..., status: _Optional[_Union[RunStatus, str]] = ..., effective_fingerprint: _Optional[_Union[_records_pb2.Fingerprint, _Mapping]] = ..., last_seq: _Optional[int] = ..., claim_token: _Optional[int] = ..., claimed_by: _Optional[str] = ..., conversation_offset: _Optional[int] = ..., conversation_size: _Optional[int] = ..., compaction_seq: _Optional[int] = ..., compacted_upto_seq: _Optional[int] = ..., uncompacted: _Optional[bool] = ...) -> None: ...

class FieldDifference(_message.Message):
    __slots__ = ("field", "field_class", "stored", "requested", "blocks")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    FIELD_CLASS_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    field: str
    field_class: FieldClass
    stored: str
    requested: str
    blocks: bool
    def __init__(self, field: _Optional[str] = ..., field_class: _Optional[_Union[FieldClass, str]] = ..., stored: _Optional[str] = ..., requested: _Optional[str] = ..., blocks: _Optional[bool] = ...) -> None: ...

class GateReport(_message.Message):
    __slots__ = ("allowed", "differences", "forced", "reconfigured")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCES_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURED_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    differences: _containers.RepeatedCompositeFieldContainer[FieldDifference]
    forced: bool
    reconfigured: bool
    def __init__(self, allowed: _Optional[bool] = ..., differences: _Optional[_Iterable[_Union[FieldDifference, _Mapping]]] = ..., forced: _Optional[bool] = ..., reconfigured: _Optional[bool] = ...) -> None: ...

class RunSummary(_message.Message):
    __slots__ = ("run_id", "status", "created_at", "labels", "task_id", "model", "last_seq", "terminal_message", "corruption", "waiting_calls", "updated_at", "parent_run_id", "spawned_by_run_id", "root_run_id")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CORRUPTION_FIELD_NUMBER: _ClassVar[int]
    WAITING_CALLS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    PARENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAWNED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    status: RunStatus
    created_at: _timestamp_pb2.Timestamp
    labels: _containers.ScalarMap[str, str]
    task_id: str
    model: str
    last_seq: int
    terminal_message: str
    corruption: str
    waiting_calls: _containers.RepeatedCompositeFieldContainer[WaitingCall]
    updated_at: _timestamp_pb2.Timestamp
    parent_run_id: str
    spawned_by_run_id: str
    root_run_id: str
    def __init__(self, run_id: _Optional[str] = ..., status: _Optional[_Union[RunStatus, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., task_id: _Optional[str] = ..., model: _Optional[str] = ..., last_seq: _Optional[int] = ..., terminal_message: _Optional[str] = ..., corruption: _Optional[str] = ..., waiting_calls: _Optional[_Iterable[_Union[WaitingCall, _Mapping]]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., parent_run_id: _Optional[str] = ..., spawned_by_run_id: _Optional[str] = ..., root_run_id: _Optional[str] = ...) -> None: ...

class WaitingCall(_message.Message):
    __slots__ = ("tool_use_id", "tool_name", "waiting_for", "deferral_seq", "reason", "expected_answerer")
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FOR_FIELD_NUMBER: _ClassVar[int]
    DEFERRAL_SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_ANSWERER_FIELD_NUMBER: _ClassVar[int]
    tool_use_id: str
    tool_name: str
    waiting_for: WaitingFor
    deferral_seq: int
    reason: str
    expected_answerer: str
    def __init__(self, tool_use_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., waiting_for: _Optional[_Union[WaitingFor, str]] = ..., deferral_seq: _Optional[int] = ..., reason: _Optional[str] = ..., expected_answerer: _Optional[str] = ...) -> None: ...
