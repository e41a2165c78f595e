/** The Anthropic adapter's conversions without a server: which journal block each SDK block becomes, and back. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as adapter from "../../src/adapters/anthropic.js";
import {
  ConversationMessageSchema,
  create,
  makeFingerprint,
  opaqueBlock,
  Role,
  StopReason,
  systemPromptSha256,
  canonicalJson,
  textBlock,
  thinkingBlock,
} from "./helpers.js";

const FIXTURES = new URL("../../../../../testdata/provider_content/anthropic/", import.meta.url);
/** A fixture's text (the provider's compact JSON, without the file's final newline). */
const text = (name: string): string => readFileSync(new URL(`${name}.json`, FIXTURES), "utf8").replace(/\n$/, "");
const value = (name: string): Record<string, unknown> => JSON.parse(text(name)) as Record<string, unknown>;
const ALL = [
  "thinking", "thinking_omitted", "redacted_thinking", "tool_use", "tool_use_chart", "server_tool_use",
  "web_search_tool_result", "web_search_tool_result_error", "text_citations_web", "text_citations_document", "compaction",
  "compaction_null",
];

test("each block of an answer is typed only where the typed block rebuilds it, and comes back byte for byte", () => {
  const typed: Record<string, string> = { thinking: "thinking", thinking_omitted: "thinking", redacted_thinking: "thinking", tool_use: "toolUse", tool_use_chart: "toolUse" };
  for (const name of ALL) {
    const block = adapter.modelBlock(value(name));
    assert.equal(block.block.case, typed[name] ?? "opaque", name);
    assert.equal(JSON.stringify(adapter.blockParam(block)), text(name), name);
  }
  const plain = adapter.modelBlock({ type: "text", text: "x" });
  assert.deepEqual(plain, textBlock("x"));
  const withNull = adapter.modelBlock({ type: "text", text: "x", citations: null });
  assert.equal(withNull.block.case, "opaque", "one more key, even a null, and the typed text would drop it");
  const caller = { type: "tool_use", id: "toolu_1", name: "f", input: { b: 1, a: 2 }, caller: { type: "direct" } };
  const call = adapter.modelBlock(caller);
  assert.equal(call.block.case === "toolUse" && call.block.value.inputJson, '{"b":1,"a":2}');
  assert.equal(JSON.stringify(adapter.blockParam(call)), JSON.stringify(caller));
});

test("user content keeps its string or list shape, and model blocks are not user content", () => {
  assert.deepEqual(adapter.userBlocks("Hi."), [textBlock("Hi.")]);
  assert.deepEqual(adapter.userBlocks([{ type: "text", text: "Hi." }]), [opaqueBlock("anthropic", "text", undefined, { jsonText: '{"type":"text","text":"Hi."}' })]);
  assert.deepEqual(adapter.userBlocks([{ type: "text", text: "A" }, { type: "text", text: "B" }]), [textBlock("A"), textBlock("B")]);
  for (const content of ["Hi.", [{ type: "text", text: "Hi." }], [{ type: "text", text: "A" }, { type: "text", text: "B" }]]) {
    assert.deepEqual(adapter.userContent(adapter.userBlocks(content)), content);
  }
  for (const type of ["tool_result", "tool_use", "thinking"]) {
    assert.throws(() => adapter.userBlocks([{ type }, { type: "text", text: "x" }]), new RegExp(`a ${type} block cannot be user content`));
  }
});

test("a tool result keeps its content's shape; cache_control is dropped, other keys refused", () => {
  const params = [
    { type: "tool_result" as const, tool_use_id: "toolu_1", content: "ok" },
    { type: "tool_result" as const, tool_use_id: "toolu_1", content: [{ type: "text" as const, text: "ok" }], is_error: true },
    { type: "tool_result" as const, tool_use_id: "toolu_1" },
  ];
  const call = create(ConversationMessageSchema, { role: Role.ASSISTANT, content: [adapter.modelBlock({ type: "tool_use", id: "toolu_1", name: "f", input: {}, toolset_name: "web" })] });
  for (const param of params) {
    const record = adapter.toolResultRecord({ ...param, cache_control: { type: "ephemeral" } });
    assert.equal(record.payload.case, "toolResult");
    const result = record.payload.value as { content: ReturnType<typeof adapter.userBlocks>; isError: boolean };
    const folded = create(ConversationMessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "toolResult", value: { toolUseId: "toolu_1", content: result.content, isError: result.isError } } }],
    });
    const [, sent] = adapter.messageParams([call, folded]);
    assert.deepEqual(sent!.content, [{ ...param, toolset_name: "web" }], "toolset_name comes from the call it answers");
  }
  assert.throws(() => adapter.toolResultRecord({ ...params[0]!, colour: "red" } as never), /keys the journal cannot keep: \["colour"\]/);
});

test("stop reasons, usage with cache tokens, and what an unfinished or empty answer gets", () => {
  const reasons = ["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "compaction", "model_context_window_exceeded"];
  assert.deepEqual(reasons.map(adapter.stopReason), [1, 2, 3, 4, 5, 6, 7, 8].map((n) => n as StopReason));
  assert.throws(() => adapter.stopReason(null), /finished message/);
  assert.throws(() => adapter.stopReason("nap"), /unknown Anthropic stop_reason "nap"/);
  const usage = adapter.usage({ input_tokens: 4, output_tokens: 2, cache_creation_input_tokens: 3, cache_read_input_tokens: null });
  assert.deepEqual([usage.inputTokens, usage.outputTokens, usage.cacheWriteTokens, usage.cacheReadTokens], [4, 2, 3, 0]);
  const message = { content: [], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 0 } };
  assert.throws(() => adapter.assistantRecord(message as never, { iteration: 1 }), /no content block/);
});

test("the fingerprint reads the create arguments as the Python adapter does", () => {
  const tools = [{ name: "b", input_schema: { type: "object" } }, { name: "a", input_schema: { type: "object" } }];
  const fp = adapter.fingerprint({ model: "claude-a", max_tokens: 100, system: "Be brief.", tools, thinking: { type: "enabled" } }, { maxIterations: 7 });
  assert.deepEqual(fp, makeFingerprint({ provider: "anthropic", model: "claude-a", systemPrompt: "Be brief.", thinkingMode: "enabled", tools, maxTokens: 100, maxIterations: 7 }));
  assert.equal(adapter.fingerprint({ model: "m" }).thinkingMode, "off");
  assert.equal(adapter.fingerprint({ model: "m", thinking: { type: "disabled" } }).thinkingMode, "off");
  const blocks = [{ type: "text" as const, text: "Be brief.", cache_control: { type: "ephemeral" as const } }];
  assert.equal(adapter.fingerprint({ model: "m", system: blocks }).systemPromptSha256, systemPromptSha256(canonicalJson(blocks)));
});

test("messageParams sends each message block for block, tool results first", () => {
  const conversation = [
    create(ConversationMessageSchema, { role: Role.USER, content: [textBlock("Hi.")] }),
    create(ConversationMessageSchema, { role: Role.ASSISTANT, content: [thinkingBlock("t", "s"), adapter.modelBlock(value("tool_use"))] }),
    create(ConversationMessageSchema, {
      role: Role.USER,
      content: [{ block: { case: "toolResult", value: { toolUseId: value("tool_use")["id"] as string, content: [textBlock("1.08")] } } }, textBlock("Go on.")],
    }),
  ];
  assert.deepEqual(adapter.messageParams(conversation), [
    { role: "user", content: "Hi." },
    { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "s" }, value("tool_use")] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: value("tool_use")["id"], content: "1.08" }, { type: "text", text: "Go on." }] },
  ]);
});
