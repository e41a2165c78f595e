"""``ToolUseBlock.provider_json``: the provider's own call kept beside the typed fields, and held to agree with them.

The typed fields are what the journal acts on; the provider's text is what a client sends back to the model.
A block whose two halves describe different calls is refused at Append, so no worker can run one call and send
the model another.
"""

from __future__ import annotations

import pytest

from runjournal.v1.records_pb2 import AssistantTurn, ContentBlock, JournalRecord, StopReason, ToolUseBlock, Usage
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.fold import JournalRuleError, fold_stored
from runjournal_server.core.schema import validate
from tests.support import builders as b

OPENAI_CALL = (
    '{\n  "id": "fc_68a0",\n  "type": "function_call",\n  "status": "completed",\n'
    '  "arguments": "{\\"city\\": \\"Paris\\"}",\n  "call_id": "call_9x",\n  "name": "weather"\n}'
)
ANTHROPIC_CALL = (
    '{"type":"tool_use","id":"toolu_01","name":"weather","input":{"city":"Paris","days":1},"caller":{"type":"direct"}}'
)


def turn_with(use: ToolUseBlock, stop_reason: StopReason = StopReason.STOP_REASON_TOOL_USE) -> JournalRecord:
    return JournalRecord(
        seq=2,
        assistant=AssistantTurn(
            iteration=1, content=[ContentBlock(tool_use=use)], stop_reason=stop_reason, usage=Usage()
        ),
    )


def test_an_openai_function_call_item_is_kept_beside_its_typed_call() -> None:
    validate(
        turn_with(ToolUseBlock(id="call_9x", name="weather", input_json='{"city": "Paris"}', provider_json=OPENAI_CALL))
    )


def test_an_anthropic_tool_use_with_more_fields_is_kept_beside_its_typed_call() -> None:
    use = ToolUseBlock(
        id="toolu_01", name="weather", input_json='{"days": 1, "city": "Paris"}', provider_json=ANTHROPIC_CALL
    )
    validate(turn_with(use))


@pytest.mark.parametrize(
    ("use", "problem"),
    [
        (
            ToolUseBlock(id="call_9x", name="forecast", input_json='{"city": "Paris"}', provider_json=OPENAI_CALL),
            "name",
        ),
        (
            ToolUseBlock(id="fc_68a0", name="weather", input_json='{"city": "Paris"}', provider_json=OPENAI_CALL),
            "call_id",
        ),
        # The same value as other text: OpenAI's arguments are a string the model wrote, kept as written.
        (
            ToolUseBlock(id="call_9x", name="weather", input_json='{"city":"Paris"}', provider_json=OPENAI_CALL),
            "arguments",
        ),
        (
            ToolUseBlock(
                id="toolu_02", name="weather", input_json='{"city":"Paris","days":1}', provider_json=ANTHROPIC_CALL
            ),
            "id",
        ),
        # 1 and true are one value to Python's ==, never to a tool.
        (
            ToolUseBlock(
                id="toolu_01", name="weather", input_json='{"city":"Paris","days":true}', provider_json=ANTHROPIC_CALL
            ),
            "input",
        ),
        (
            ToolUseBlock(
                id="toolu_01", name="weather", input_json='{"city":"Paris","days":1.0}', provider_json=ANTHROPIC_CALL
            ),
            "input",
        ),
        (
            ToolUseBlock(id="t1", name="weather", input_json="{}", provider_json='{"id":"t1","name":"weather"}'),
            "neither",
        ),
        (ToolUseBlock(id="t1", name="weather", input_json="{}", provider_json='["t1"]'), "JSON object"),
        (ToolUseBlock(id="t1", name="weather", input_json="{}", provider_json='{"id":'), "not valid JSON"),
    ],
)
def test_a_provider_call_that_disagrees_with_the_typed_fields_is_refused(use: ToolUseBlock, problem: str) -> None:
    with pytest.raises(InvalidRecordError) as caught:
        validate(turn_with(use))
    assert caught.value.field == "assistant.content[0].tool_use.provider_json"
    assert problem in str(caught.value)


def format_1_run() -> list[b.Stored]:
    return [b.stored(b.meta(format_version=1))]


@pytest.mark.parametrize(
    "record",
    [
        turn_with(
            ToolUseBlock(id="call_9x", name="weather", input_json='{"city": "Paris"}', provider_json=OPENAI_CALL)
        ),
        b.assistant(2, 1, stop_reason=StopReason.STOP_REASON_COMPACTION),
        b.assistant(2, 1, stop_reason=StopReason.STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED),
    ],
    ids=["provider_json", "stop-compaction", "stop-context-window"],
)
def test_a_format_1_run_refuses_what_its_readers_never_knew_and_a_format_2_run_takes_it(record: JournalRecord) -> None:
    validate(record)
    with pytest.raises(JournalRuleError, match="needs journal format 2 or later"):
        fold_stored(format_1_run()).apply(record)
    folded = fold_stored([b.stored(b.meta(format_version=2))])
    folded.apply(record)
    assert folded.state().last_seq == 2
