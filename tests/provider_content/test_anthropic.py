"""Anthropic Messages API content through Append, the stored line, Fold and back to a request, on both backends.

The tool loop (``loops.anthropic_records``) is appended once per backend; each
test looks at one kind of block where it landed. Typed blocks (thinking,
redacted thinking, tool_use) keep every value exactly; every other kind is an
opaque block whose ``json`` is the provider's text. See
``docs/provider-content.md`` for the table. The conversion back to a request
is the client's: ``runjournal.adapters.anthropic`` (``message_params`` block for
block, ``request_messages`` with the API's rules), its request blocks written
as the SDK writes a request body.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from runjournal.adapters import anthropic as adapter
from runjournal.v1.state_pb2 import RunState, RunStatus
from tests.provider_content.checks import assert_opaque_kept, assert_stored_as_read
from tests.provider_content.fixtures import provider_json, provider_value, raw_member
from tests.provider_content.loops import ANTHROPIC_PLACES as PLACES
from tests.provider_content.loops import Place
from tests.provider_content.roundtrip import RoundTrip

PROVIDER = "anthropic"


def sent(loop: RoundTrip, place: Place) -> str:
    """The block at ``place`` of the folded conversation, as the adapter's request holds it, as JSON text."""
    block: Any = adapter.message_params(list(loop.state.conversation))[place.message]["content"][place.block]
    if place.inner is not None:
        block = block["content"][place.inner]
    return dumps(block)


def dumps(value: Any) -> str:
    """JSON text as the ``anthropic`` SDK writes a request body (compact, non-ASCII as itself)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_the_store_holds_the_lines_read_returns(anthropic_loop: RoundTrip) -> None:
    assert_stored_as_read(anthropic_loop)
    assert len(anthropic_loop.store) == 10
    assert anthropic_loop.state.status == RunStatus.RUN_STATUS_OPEN


def test_thinking_keeps_its_text_and_signature(anthropic_loop: RoundTrip) -> None:
    want = provider_value(PROVIDER, "thinking")
    [place] = PLACES["thinking"]
    for block in (anthropic_loop.read_block(place), anthropic_loop.folded_block(place)):
        assert (block.thinking.thinking, block.thinking.signature) == (want["thinking"], want["signature"])
        assert not block.thinking.redacted
    assert anthropic_loop.line_block(place) == {
        "thinking": {"thinking": want["thinking"], "signature": want["signature"]}
    }
    assert sent(anthropic_loop, place) == provider_json(PROVIDER, "thinking")


def test_omitted_thinking_keeps_its_signature_and_its_empty_text(anthropic_loop: RoundTrip) -> None:
    want = provider_value(PROVIDER, "thinking_omitted")
    assert want["thinking"] == ""
    [place] = PLACES["thinking_omitted"]
    for block in (anthropic_loop.read_block(place), anthropic_loop.folded_block(place)):
        assert (block.thinking.thinking, block.thinking.signature) == ("", want["signature"])
        assert not block.thinking.redacted
    # proto3 JSON leaves the empty text out; it reads back as "" and is sent as "thinking":"".
    assert anthropic_loop.line_block(place) == {"thinking": {"signature": want["signature"]}}
    assert sent(anthropic_loop, place) == provider_json(PROVIDER, "thinking_omitted")


def test_redacted_thinking_keeps_its_data(anthropic_loop: RoundTrip) -> None:
    want = provider_value(PROVIDER, "redacted_thinking")
    [place] = PLACES["redacted_thinking"]
    for block in (anthropic_loop.read_block(place), anthropic_loop.folded_block(place)):
        assert (block.thinking.redacted, block.thinking.data) == (True, want["data"])
        assert (block.thinking.thinking, block.thinking.signature) == ("", "")
    assert anthropic_loop.line_block(place) == {"thinking": {"redacted": True, "data": want["data"]}}
    assert sent(anthropic_loop, place) == provider_json(PROVIDER, "redacted_thinking")


def test_tool_use_keeps_its_id_name_and_input_text(anthropic_loop: RoundTrip) -> None:
    for name in ("tool_use", "tool_use_chart"):
        text = provider_json(PROVIDER, name)
        want = provider_value(PROVIDER, name)
        input_text = raw_member(text, "input")
        [place] = PLACES[name]
        for block in (anthropic_loop.read_block(place), anthropic_loop.folded_block(place)):
            use = block.tool_use
            assert (use.id, use.name, use.input_json) == (want["id"], want["name"], input_text)
        assert anthropic_loop.line_block(place) == {
            "tool_use": {"id": want["id"], "name": want["name"], "input_json": input_text}
        }
        assert sent(anthropic_loop, place) == text
    # The input keeps the provider's key order (base, quote, date), which sorted JSON would not.
    assert raw_member(provider_json(PROVIDER, "tool_use"), "input").startswith('{"base"')


def test_server_tool_use_is_kept_and_opens_no_call(anthropic_loop: RoundTrip) -> None:
    for name in ("server_tool_use", "server_tool_use_again"):
        assert_opaque_kept(anthropic_loop, PROVIDER, name, PLACES[name])
    state = anthropic_loop.state
    assert not state.HasField("pending")
    assert state.counters.tool_calls == 2  # the two client tools; the server tools ran at the provider


def test_web_search_result_keeps_its_encrypted_content(anthropic_loop: RoundTrip) -> None:
    text = assert_opaque_kept(anthropic_loop, PROVIDER, "web_search_tool_result", PLACES["web_search_tool_result"])
    results = provider_value(PROVIDER, "web_search_tool_result")["content"]
    assert all(result["encrypted_content"] in text for result in results)
    assert '"page_age":null' in text


def test_web_search_error_result_is_kept(anthropic_loop: RoundTrip) -> None:
    places = PLACES["web_search_tool_result_error"]
    text = assert_opaque_kept(anthropic_loop, PROVIDER, "web_search_tool_result_error", places)
    assert '"error_code":"max_uses_exceeded"' in text


def test_cited_text_blocks_keep_their_citations_and_boundaries(anthropic_loop: RoundTrip) -> None:
    assert_opaque_kept(anthropic_loop, PROVIDER, "text_citations_web", PLACES["text_citations_web"])
    assert_opaque_kept(anthropic_loop, PROVIDER, "text_citations_document", PLACES["text_citations_document"])
    # Four text blocks in a row stay four blocks: cited, plain, cited, plain.
    message = anthropic_loop.state.conversation[3]
    tail = [(block.WhichOneof("block"), block.opaque.type) for block in message.content[6:]]
    assert tail == [("opaque", "text"), ("text", ""), ("opaque", "text"), ("text", "")]
    assert [block.text.text for block in message.content[7::2]] == [", so ", " is about USD 4.55M."]


def test_a_block_with_cache_control_is_kept(anthropic_loop: RoundTrip) -> None:
    text = assert_opaque_kept(anthropic_loop, PROVIDER, "text_cache_control", PLACES["text_cache_control"])
    assert '"cache_control":{"type":"ephemeral","ttl":"1h"}' in text


def test_an_image_is_kept_in_a_tool_result_and_in_a_follow_up(anthropic_loop: RoundTrip) -> None:
    text = assert_opaque_kept(anthropic_loop, PROVIDER, "image", PLACES["image"])
    assert provider_value(PROVIDER, "image")["source"]["data"].startswith("iVBORw0KGgo")  # a PNG
    assert text in sent(anthropic_loop, Place(4, "content", 0, 2, 1))  # inside the tool_result


def test_a_document_is_kept_in_the_prompt(anthropic_loop: RoundTrip) -> None:
    assert_opaque_kept(anthropic_loop, PROVIDER, "document", PLACES["document"])
    assert provider_value(PROVIDER, "document")["source"]["data"].startswith("JVBERi0")  # a PDF


def test_compaction_blocks_are_kept(anthropic_loop: RoundTrip) -> None:
    text = assert_opaque_kept(anthropic_loop, PROVIDER, "compaction", PLACES["compaction"])
    assert '"encrypted_content":' in text
    null = assert_opaque_kept(anthropic_loop, PROVIDER, "compaction_null", PLACES["compaction_null"])
    assert null == '{"type":"compaction","content":null}'


def test_the_conversation_converts_back_to_the_request_byte_for_byte(anthropic_loop: RoundTrip) -> None:
    messages = adapter.message_params(list(anthropic_loop.state.conversation))
    assert [message["role"] for message in messages] == ["user", "assistant"] * 4
    for name, places in PLACES.items():
        for place in places:
            if place.inner is None:
                assert dumps(messages[place.message]["content"][place.block]) == provider_json(PROVIDER, name), name
    image, caption = provider_json(PROVIDER, "image"), '{"type":"text","text":"Q3 revenue by month, EUR"}'
    chart_id = provider_value(PROVIDER, "tool_use_chart")["id"]
    assert dumps(messages[2]["content"][1]) == (
        f'{{"type":"tool_result","tool_use_id":"{chart_id}","content":[{image},{caption}]}}'
    )
    # The next request starts at the newest compaction block with content (seq 8's): the API refuses
    # anything before it. The later null compaction is a no-op and stays where it was.
    records = [item.record for item in anthropic_loop.items]
    call = adapter.request_messages(with_system(anthropic_loop.state, "S"), system="S", records=records)
    assert call["messages"] == messages[5:]
    assert dumps(call["messages"][0]["content"][0]) == provider_json(PROVIDER, "compaction")


def with_system(state: RunState, system: str) -> RunState:
    """The state with a fingerprint for ``system`` (the loop's meta holds a made-up hash)."""
    copy = RunState()
    copy.CopyFrom(state)
    copy.effective_fingerprint.system_prompt_sha256 = hashlib.sha256(system.encode()).hexdigest()
    return copy
