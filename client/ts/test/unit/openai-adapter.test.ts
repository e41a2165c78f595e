/**
 * The OpenAI adapter's rules that need no server (the twin of tests/adapters/test_openai_rules.py): stop
 * reasons, usage, what it refuses, the fingerprint, the SDK's own parsed fields left out, and the request
 * built from a fold that the journal (not the model) wrote parts of.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { Response } from "openai/resources/responses/responses";
import * as oai from "../../src/adapters/openai.js";
import {
  type ContentBlock,
  ConversationMessageSchema,
  create,
  Decision,
  makeFingerprint,
  opaqueBlock,
  Role,
  type RunState,
  RunStateSchema,
  StopReason,
  textBlock,
  thinkingBlock,
  toolUseBlock,
  UsageSchema,
} from "./helpers.js";
import { PendingCallSchema, PendingBatchSchema, ToolResultBlockSchema, WaitingFor } from "../../src/index.js";

const FIXTURES = new URL("../../../../../testdata/provider_content/openai/", import.meta.url);
type Json = Record<string, unknown>;
const fixture = (name: string): Json => JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")) as Json;

function response(items: (string | Json)[], status = "completed", reason?: string): Response {
  return {
    id: "resp_1",
    object: "response",
    created_at: 1,
    status,
    incomplete_details: reason ? { reason } : null,
    model: "gpt-5.2",
    output: items.map((item) => (typeof item === "string" ? fixture(item) : item)),
    usage: undefined,
  } as unknown as Response;
}

const stop = (r: Response): string => StopReason[oai.stopReasonOf(r)]!;

test("stop reasons come from the status, the incomplete details and the output", () => {
  assert.equal(stop(response(["reasoning", "message_commentary", "function_call"])), "TOOL_USE");
  assert.equal(stop(response(["reasoning_final", "message_final_answer"])), "END_TURN");
  const refusal = { ...fixture("message_closing"), content: [{ type: "refusal", refusal: "I can't help with that." }] };
  assert.equal(stop(response([refusal])), "REFUSAL");
  assert.equal(stop(response(["message_closing"], "incomplete", "max_output_tokens")), "MAX_TOKENS");
  assert.equal(stop(response(["message_closing"], "incomplete", "content_filter")), "REFUSAL");
  assert.equal(stop(response(["message_closing"], "incomplete", "steered")), "PAUSE_TURN");
  assert.equal(stop(response(["message_closing"], "incomplete", "max_messages")), "PAUSE_TURN");
  for (const status of ["failed", "cancelled", "in_progress", "queued"]) {
    assert.throws(() => oai.stopReasonOf(response(["message_closing"], status)), new RegExp(`is ${status}, not a finished turn`));
  }
});

test("usage splits the cached and the written tokens out of the input", () => {
  const usage = {
    input_tokens: 1000,
    input_tokens_details: { cached_tokens: 600, cache_write_tokens: 100 },
    output_tokens: 50,
    output_tokens_details: { reasoning_tokens: 20 },
    total_tokens: 1050,
  };
  assert.deepEqual(oai.usageOf(usage), create(UsageSchema, { inputTokens: 300, outputTokens: 50, cacheReadTokens: 600, cacheWriteTokens: 100 }));
  assert.deepEqual(oai.usageOf(null), create(UsageSchema));
});

test("a trailing reasoning item is left out, and reasoning alone is refused", () => {
  const record = oai.assistantRecord(response(["message_commentary", "reasoning"], "incomplete", "max_output_tokens"), { iteration: 3 });
  assert.equal(record.payload.case, "assistant");
  const turn = record.payload.value as { content: ContentBlock[]; stopReason: StopReason };
  assert.deepEqual(turn.content.map((b) => (b.block.case === "opaque" ? b.block.value.type : b.block.case)), ["message"]);
  assert.equal(turn.stopReason, StopReason.MAX_TOKENS);
  assert.throws(() => oai.assistantRecord(response(["reasoning"], "incomplete", "max_output_tokens"), { iteration: 3 }), /no output item but reasoning/);
});

test("calls the journal cannot track are refused with the reason", () => {
  const custom = { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "shell", input: "ls -la" };
  assert.throws(() => oai.assistantRecord(response([custom]), { iteration: 1 }), /custom_tool_call item is a call the worker must answer/);
  const cut = { ...fixture("function_call"), arguments: '{"location":"Par', status: "incomplete" };
  assert.throws(() => oai.assistantRecord(response([cut], "incomplete", "max_output_tokens"), { iteration: 1 }), /arguments that are not a JSON object/);
});

test("a function call is one typed tool_use holding the item, without the SDK's parsed fields", () => {
  const item = fixture("function_call");
  const message = fixture("message_commentary");
  const parsedMessage = { ...message, content: (message["content"] as Json[]).map((part) => ({ ...part, parsed: null })) };
  const record = oai.assistantRecord(response([{ ...item, parsed_arguments: null }, parsedMessage]), { iteration: 1 });
  const [call, said] = (record.payload.value as { content: ContentBlock[] }).content;
  assert.equal(call!.block.case, "toolUse");
  const use = call!.block.value as { id: string; name: string; inputJson: string; providerJson: string };
  assert.deepEqual([use.id, use.name, use.inputJson], [item["call_id"], item["name"], item["arguments"]]);
  assert.equal(use.providerJson, JSON.stringify(item));
  assert.equal(said!.block.case === "opaque" ? said!.block.value.json : "", JSON.stringify(message));
});

test("the fingerprint is the create parameters, built-in tools named by their type", () => {
  const tools = [
    { type: "function", name: "get_weather", parameters: {} },
    { type: "web_search" },
    { type: "mcp", server_label: "deepwiki", server_url: "https://mcp.example" },
  ];
  const got = oai.fingerprint(
    { model: "gpt-5.2", instructions: "Be brief.", tools: tools as never, reasoning: { effort: "high", summary: "auto" }, max_output_tokens: 2048 },
    { maxIterations: 8 },
  );
  const named = [tools[0], { ...tools[1], name: "web_search" }, { ...tools[2], name: "mcp:deepwiki" }];
  const want = { provider: "openai", model: "gpt-5.2", systemPrompt: "Be brief.", thinkingMode: "high", tools: named };
  assert.deepEqual(got, makeFingerprint({ ...want, maxTokens: 2048, maxIterations: 8 }));
  assert.deepEqual(oai.fingerprint({ model: "gpt-5.2" }), makeFingerprint({ provider: "openai", model: "gpt-5.2", systemPrompt: "", thinkingMode: "default", tools: [] }));
});

const message = (role: Role, ...content: ContentBlock[]) => create(ConversationMessageSchema, { role, content });
const result = (toolUseId: string, content: ContentBlock[], isError = false): ContentBlock => ({
  $typeName: "runjournal.v1.ContentBlock",
  block: { case: "toolResult", value: create(ToolResultBlockSchema, { toolUseId, content, isError }) },
});

test("what the journal wrote goes back as the smallest items the API takes", () => {
  const image = { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" };
  const conversation = [
    message(Role.USER, ...oai.userBlocks([{ type: "input_text", text: "What is this?" }, image])),
    message(Role.ASSISTANT, textBlock("A chart."), toolUseBlock("call_1", "zoom", '{"x":1}')),
    message(Role.USER, result("call_1", [textBlock("approved by ops: 2x")]), textBlock("Thanks")),
    message(Role.ASSISTANT, toolUseBlock("call_2", "zoom", "{}"), toolUseBlock("call_3", "pan", "{}")),
    message(Role.USER, result("call_2", [textBlock("denied")], true), result("call_3", [textBlock("a"), textBlock("b")])),
  ];
  assert.deepEqual(oai.inputItems(conversation), [
    { type: "message", role: "user", content: [{ type: "input_text", text: "What is this?" }, image] },
    { type: "message", role: "assistant", content: "A chart." },
    { type: "function_call", call_id: "call_1", name: "zoom", arguments: '{"x":1}' },
    { type: "function_call_output", call_id: "call_1", output: "approved by ops: 2x" },
    { type: "message", role: "user", content: [{ type: "input_text", text: "Thanks" }] },
    { type: "function_call", call_id: "call_2", name: "zoom", arguments: "{}" },
    { type: "function_call", call_id: "call_3", name: "pan", arguments: "{}" },
    { type: "function_call_output", call_id: "call_2", output: "denied" },
    { type: "function_call_output", call_id: "call_3", output: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
  ]);
});

test("the request starts at the newest compaction item the model returned", () => {
  const item = (name: string) => opaqueBlock("openai", String(fixture(name)["type"]), undefined, { jsonText: JSON.stringify(fixture(name)) });
  const conversation = [
    message(Role.USER, textBlock("Q")),
    message(Role.ASSISTANT, item("reasoning_final"), item("message_final_answer")),
    message(Role.USER, textBlock("And tomorrow?")),
    message(Role.ASSISTANT, item("compaction"), item("web_search_call"), item("message_after_compaction")),
    message(Role.USER, textBlock("Thanks!")),
  ];
  const texts = oai.inputItemTexts(conversation);
  assert.deepEqual(texts.slice(0, 3), ["compaction", "web_search_call", "message_after_compaction"].map((n) => JSON.stringify(fixture(n))));
  assert.equal(texts.length, 4);
  // A compaction in a journal compaction record's (user) summary is sent whole, with what precedes it.
  const window = [message(Role.USER, opaqueBlock("openai", "message", { type: "message", role: "user", content: "Q" }), item("compaction"))];
  assert.equal(oai.inputItemTexts(window).length, 2);
});

test("blocks of another provider are refused", () => {
  assert.throws(() => oai.inputItems([message(Role.ASSISTANT, thinkingBlock("hmm", "sig"), textBlock("ok"))]), /assistant thinking block has no Responses API form/);
  assert.throws(() => oai.inputItems([message(Role.USER, opaqueBlock("anthropic", "image", { type: "image" }))]), /opaque anthropic image block cannot go to the OpenAI API/);
});

function stateOf(...messages: ReturnType<typeof message>[]): RunState {
  const effectiveFingerprint = makeFingerprint({ provider: "openai", model: "gpt-5.2", systemPrompt: "Be brief.", thinkingMode: "default", tools: [] });
  return create(RunStateSchema, { conversation: messages, effectiveFingerprint });
}

test("a request is refused while calls wait, and for other instructions", () => {
  const state = stateOf(message(Role.USER, textBlock("hi")));
  assert.deepEqual(oai.requestParams(state, { instructions: "Be brief." }), {
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
    instructions: "Be brief.",
  });
  assert.throws(() => oai.requestParams(state, { instructions: "Be verbose." }), /not the ones the run's fingerprint hashed/);
  assert.throws(() => oai.requestParams(state), /not the ones the run's fingerprint hashed/);
  const use = toolUseBlock("call_1", "zoom", "{}").block.value as never;
  state.pending = create(PendingBatchSchema, { calls: [create(PendingCallSchema, { toolUse: use })] });
  assert.throws(() => oai.requestParams(state, { instructions: "Be brief." }), /calls \["call_1"\] of the last turn have no result yet/);
});

test("pending calls are those waiting for the worker, denials marked", () => {
  const item = fixture("function_call");
  const typed = (id: string) => toolUseBlock(id, "pan", "{}").block.value as never;
  const withItem = toolUseBlock(String(item["call_id"]), String(item["name"]), String(item["arguments"]), JSON.stringify(item)).block.value as never;
  const calls = [
    create(PendingCallSchema, { toolUse: withItem, waitingFor: WaitingFor.WORKER }),
    create(PendingCallSchema, { toolUse: typed("call_b"), answered: true }),
    create(PendingCallSchema, { toolUse: typed("call_c"), deferred: true, waitingFor: WaitingFor.ANSWER }),
    create(PendingCallSchema, { toolUse: typed("call_d"), waitingFor: WaitingFor.WORKER, decision: Decision.DENIED }),
  ];
  const state = create(RunStateSchema, { pending: create(PendingBatchSchema, { calls }) });
  const pending = oai.pendingCalls(state);
  assert.deepEqual(pending.map((p) => [p.call.call_id, p.denied]), [[item["call_id"], false], ["call_d", true]]);
  assert.deepEqual(pending[0]!.call, item);
});

test("a tool result needs a function_call_output item; user parts are text blocks or kept whole", () => {
  const output = fixture("function_call_output") as never;
  const record = oai.toolResultRecord(output, { isError: true });
  assert.equal(record.payload.case === "toolResult" && record.payload.value.isError, true);
  assert.throws(() => oai.toolResultRecord({ type: "custom_tool_call_output", call_id: "c", output: "x" } as never), /expected a function_call_output item/);
  assert.deepEqual(oai.userBlocks("hi"), [textBlock("hi")]);
  assert.throws(() => oai.userBlocks([{ type: "output_text", text: "no" }]), /"output_text" is not a content part of a user message/);
});
