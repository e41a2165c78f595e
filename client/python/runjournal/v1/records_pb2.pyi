import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]

class StopReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STOP_REASON_UNSPECIFIED: _ClassVar[StopReason]
    STOP_REASON_END_TURN: _ClassVar[StopReason]
    STOP_REASON_TOOL_USE: _ClassVar[StopReason]
    STOP_REASON_MAX_TOKENS: _ClassVar[StopReason]
    STOP_REASON_STOP_SEQUENCE: _ClassVar[StopReason]
    STOP_REASON_PAUSE_TURN: _ClassVar[StopReason]
    STOP_REASON_REFUSAL: _ClassVar[StopReason]
    STOP_REASON_COMPACTION: _ClassVar[StopReason]
    STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED: _ClassVar[StopReason]

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_UNSPECIFIED: _ClassVar[Decision]
    DECISION_APPROVED: _ClassVar[Decision]
    DECISION_DENIED: _ClassVar[Decision]

class TerminalReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERMINAL_REASON_UNSPECIFIED: _ClassVar[TerminalReason]
    TERMINAL_REASON_COMPLETED: _ClassVar[TerminalReason]
    TERMINAL_REASON_SUSPENDED: _ClassVar[TerminalReason]
    TERMINAL_REASON_ERROR: _ClassVar[TerminalReason]
    TERMINAL_REASON_BUDGET: _ClassVar[TerminalReason]
    TERMINAL_REASON_MAX_ITERATIONS: _ClassVar[TerminalReason]
    TERMINAL_REASON_CANCELLED: _ClassVar[TerminalReason]

class CompactionTrigger(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPACTION_TRIGGER_UNSPECIFIED: _ClassVar[CompactionTrigger]
    COMPACTION_TRIGGER_MANUAL: _ClassVar[CompactionTrigger]
    COMPACTION_TRIGGER_AUTO: _ClassVar[CompactionTrigger]
    COMPACTION_TRIGGER_PROVIDER: _ClassVar[CompactionTrigger]
ROLE_UNSPECIFIED: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
STOP_REASON_UNSPECIFIED: StopReason
STOP_REASON_END_TURN: StopReason
STOP_REASON_TOOL_USE: StopReason
STOP_REASON_MAX_TOKENS: StopReason
STOP_REASON_STOP_SEQUENCE: StopReason
STOP_REASON_PAUSE_TURN: StopReason
STOP_REASON_REFUSAL: StopReason
STOP_REASON_COMPACTION: StopReason
STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED: StopReason
DECISION_UNSPECIFIED: Decision
DECISION_APPROVED: Decision
DECISION_DENIED: Decision
TERMINAL_REASON_UNSPECIFIED: TerminalReason
TERMINAL_REASON_COMPLETED: TerminalReason
TERMINAL_REASON_SUSPENDED: TerminalReason
TERMINAL_REASON_ERROR: TerminalReason
TERMINAL_REASON_BUDGET: TerminalReason
TERMINAL_REASON_MAX_ITERATIONS: TerminalReason
TERMINAL_REASON_CANCELLED: TerminalReason
COMPACTION_TRIGGER_UNSPECIFIED: CompactionTrigger
COMPACTION_TRIGGER_MANUAL: CompactionTrigger
COMPACTION_TRIGGER_AUTO: CompactionTrigger
COMPACTION_TRIGGER_PROVIDER: CompactionTrigger

class JournalRecord(_message.Message):
    __slots__ = ("seq", "optional", "meta", "assistant", "user", "tool_result", "deferral", "approval", "claim", "terminal", "reconfigure", "note", "compaction")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    DEFERRAL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURE_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_FIELD_NUMBER: _ClassVar[int]
    seq: int
    optional: bool
    meta: Meta
    assistant: AssistantTurn
    user: UserFollowUp
    tool_result: ToolResult
    deferral: Deferral
    approval: Approval
    claim: ClaimNotice
    terminal: Terminal
    reconfigure: Reconfigure
    note: Note
    compaction: Compaction
    def __init__(self, seq: _Optional[int] = ..., optional: _Optional[bool] = ..., meta: _Optional[_Union[Meta, _Mapping]] = ..., assistant: _Optional[_Union[AssistantTurn, _Mapping]] = ..., user: _Optional[_Union[UserFollowUp, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., deferral: _Optional[_Union[Deferral, _Mapping]] = ..., approval: _Optional[_Union[Approval, _Mapping]] = ..., claim: _Optional[_Union[ClaimNotice, _Mapping]] = ..., terminal: _Optional[_Union[Terminal, _Mapping]] = ..., reconfigure: _Optional[_Union[Reconfigure, _Mapping]] = ..., note: _Optional[_Union[Note, _Mapping]] = ..., compaction: _Optional[_Union[Compaction, _Mapping]] = ...) -> None: ...

class ConversationMessage(_message.Message):
    __slots__ = ("role", "content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: Role
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    def __init__(self, role: _Optional[_Union[Role, str]] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ...) -> None: ...

class ContentBlock(_message.Message):
    __slots__ = ("text", "thinking", "tool_use", "tool_result", "opaque")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    THINKING_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_FIELD_NUMBER: _ClassVar[int]
    text: TextBlock
    thinking: ThinkingBlock
    tool_use: ToolUseBlock
    tool_result: ToolResultBlock
    opaque: OpaqueBlock
    def __init__(self, text: _Optional[_Union[TextBlock, _Mapping]] = ..., thinking: _Optional[_Union[ThinkingBlock, _Mapping]] = ..., tool_use: _Optional[_Union[ToolUseBlock, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResultBlock, _Mapping]] = ..., opaque: _Optional[_Union[OpaqueBlock, _Mapping]] = ...) -> None: ...

class TextBlock(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ThinkingBlock(_message.Message):
    __slots__ = ("thinking", "signature", "redacted", "data")
    THINKING_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    thinking: str
    signature: str
    redacted: bool
    data: str
    def __init__(self, thinking: _Optional[str] = ..., signature: _Optional[str] = ..., redacted: _Optional[bool] = ..., data: _Optional[str] = ...) -> None: ...

class ToolUseBlock(_message.Message):
    __slots__ = ("id", "name", "input_json", "provider_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    input_json: str
    provider_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., input_json: _Optional[str] = ..., provider_json: _Optional[str] = ...) -> None: ...

class ToolResultBlock(_message.Message):
    __slots__ = ("tool_use_id", "content", "is_error")
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    tool_use_id: str
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    is_error: bool
    def __init__(self, tool_use_id: _Optional[str] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., is_error: _Optional[bool] = ...) -> None: ...

class OpaqueBlock(_message.Message):
    __slots__ = ("provider", "type", "json")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    provider: str
    type: str
    json: str
    def __init__(self, provider: _Optional[str] = ..., type: _Optional[str] = ..., json: _Optional[str] = ...) -> None: ...

class Fingerprint(_message.Message):
    __slots__ = ("provider", "model", "system_prompt_sha256", "thinking_mode", "tools_sha256", "max_tokens", "max_iterations")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_SHA256_FIELD_NUMBER: _ClassVar[int]
    THINKING_MODE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_SHA256_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    system_prompt_sha256: str
    thinking_mode: str
    tools_sha256: str
    max_tokens: int
    max_iterations: int
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., system_prompt_sha256: _Optional[str] = ..., thinking_mode: _Optional[str] = ..., tools_sha256: _Optional[str] = ..., max_tokens: _Optional[int] = ..., max_iterations: _Optional[int] = ...) -> None: ...

class Meta(_message.Message):
    __slots__ = ("format_version", "run_id", "created_at", "fingerprint", "prompt", "interactive", "labels", "task_id", "forked_from", "spawned_by")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    FORKED_FROM_FIELD_NUMBER: _ClassVar[int]
    SPAWNED_BY_FIELD_NUMBER: _ClassVar[int]
    format_version: int
    run_id: str
    created_at: _timestamp_pb2.Timestamp
    fingerprint: Fingerprint
    prompt: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    interactive: bool
    labels: _containers.ScalarMap[str, str]
    task_id: str
    forked_from: ForkOrigin
    spawned_by: SpawnOrigin
    def __init__(self, format_version: _Optional[int] = ..., run_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., fingerprint: _Optional[_Union[Fingerprint, _Mapping]] = ..., prompt: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., interactive: _Optional[bool] = ..., labels: _Optional[_Mapping[str, str]] = ..., task_id: _Optional[str] = ..., forked_from: _Optional[_Union[ForkOrigin, _Mapping]] = ..., spawned_by: _Optional[_Union[SpawnOrigin, _Mapping]] = ...) -> None: ...

class SpawnOrigin(_message.Message):
    __slots__ = ("run_id", "tool_use_id", "seq", "root_run_id")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ROOT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    tool_use_id: str
    seq: int
    root_run_id: str
    def __init__(self, run_id: _Optional[str] = ..., tool_use_id: _Optional[str] = ..., seq: _Optional[int] = ..., root_run_id: _Optional[str] = ...) -> None: ...

class ForkOrigin(_message.Message):
    __slots__ = ("run_id", "seq", "prefix_sha256")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    PREFIX_SHA256_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    seq: int
    prefix_sha256: str
    def __init__(self, run_id: _Optional[str] = ..., seq: _Optional[int] = ..., prefix_sha256: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ...) -> None: ...

class AssistantTurn(_message.Message):
    __slots__ = ("iteration", "content", "stop_reason", "usage")
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    iteration: int
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    stop_reason: StopReason
    usage: Usage
    def __init__(self, iteration: _Optional[int] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., stop_reason: _Optional[_Union[StopReason, str]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class UserFollowUp(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    def __init__(self, content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("tool_use_id", "content", "is_error", "remote", "answered_by", "answered_by_run_id")
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_BY_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_BY_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    tool_use_id: str
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    is_error: bool
    remote: bool
    answered_by: str
    answered_by_run_id: str
    def __init__(self, tool_use_id: _Optional[str] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., is_error: _Optional[bool] = ..., remote: _Optional[bool] = ..., answered_by: _Optional[str] = ..., answered_by_run_id: _Optional[str] = ...) -> None: ...

class Deferral(_message.Message):
    __slots__ = ("tool_use_id", "reason", "expected_answerer", "needs_approval", "child_run_id")
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_ANSWERER_FIELD_NUMBER: _ClassVar[int]
    NEEDS_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CHILD_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    tool_use_id: str
    reason: str
    expected_answerer: str
    needs_approval: bool
    child_run_id: str
    def __init__(self, tool_use_id: _Optional[str] = ..., reason: _Optional[str] = ..., expected_answerer: _Optional[str] = ..., needs_approval: _Optional[bool] = ..., child_run_id: _Optional[str] = ...) -> None: ...

class Approval(_message.Message):
    __slots__ = ("tool_use_id", "decision", "approver", "reason")
    TOOL_USE_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    tool_use_id: str
    decision: Decision
    approver: str
    reason: str
    def __init__(self, tool_use_id: _Optional[str] = ..., decision: _Optional[_Union[Decision, str]] = ..., approver: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ClaimNotice(_message.Message):
    __slots__ = ("worker_id", "host", "pid", "reason")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    host: str
    pid: int
    reason: str
    def __init__(self, worker_id: _Optional[str] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class Terminal(_message.Message):
    __slots__ = ("reason", "message")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: TerminalReason
    message: str
    def __init__(self, reason: _Optional[_Union[TerminalReason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class Reconfigure(_message.Message):
    __slots__ = ("fingerprint", "changed_fields")
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    fingerprint: Fingerprint
    changed_fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fingerprint: _Optional[_Union[Fingerprint, _Mapping]] = ..., changed_fields: _Optional[_Iterable[str]] = ...) -> None: ...

class Note(_message.Message):
    __slots__ = ("text", "data_json")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    text: str
    data_json: str
    def __init__(self, text: _Optional[str] = ..., data_json: _Optional[str] = ...) -> None: ...

class Compaction(_message.Message):
    __slots__ = ("upto_seq", "summary", "provider", "model", "trigger", "tokens_before", "usage")
    UPTO_SEQ_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    upto_seq: int
    summary: _containers.RepeatedCompositeFieldContainer[ConversationMessage]
    provider: str
    model: str
    trigger: CompactionTrigger
    tokens_before: int
    usage: Usage
    def __init__(self, upto_seq: _Optional[int] = ..., summary: _Optional[_Iterable[_Union[ConversationMessage, _Mapping]]] = ..., provider: _Optional[str] = ..., model: _Optional[str] = ..., trigger: _Optional[_Union[CompactionTrigger, str]] = ..., tokens_before: _Optional[int] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...
