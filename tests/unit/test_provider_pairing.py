"""Pairing rules the providers' APIs enforce, checked when a record is appended rather than at the next model call."""

from __future__ import annotations

import pytest

from runjournal.v1.records_pb2 import AssistantTurn, ContentBlock, JournalRecord, OpaqueBlock, StopReason
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.schema import validate
from tests.support import builders as b

REASONING = ContentBlock(opaque=OpaqueBlock(provider="openai", type="reasoning", json='{"id":"rs_1","summary":[]}'))


def turn(*content: ContentBlock) -> JournalRecord:
    return JournalRecord(
        seq=2, assistant=AssistantTurn(iteration=1, content=content, stop_reason=StopReason.STOP_REASON_TOOL_USE)
    )


def test_an_openai_reasoning_item_must_be_followed_by_what_it_produced() -> None:
    with pytest.raises(InvalidRecordError, match="followed by the item it produced") as caught:
        validate(turn(b.tool_use("call_1"), REASONING))
    assert caught.value.field == "assistant.content[1]"
    validate(turn(REASONING, b.tool_use("call_1")))
    validate(turn(REASONING, b.text("answer")))


def test_another_providers_block_of_that_name_is_not_bound_by_it() -> None:
    other = ContentBlock(opaque=OpaqueBlock(provider="anthropic", type="reasoning", json="{}"))
    validate(turn(b.text("x"), other))
