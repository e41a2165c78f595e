/**
 * The Anthropic adapter against a real server the test starts: SDK-shaped answers (the provider-content fixtures)
 * recorded, folded and converted back by `requestMessages`, byte for byte what an SDK loop sends (the TypeScript
 * SDK writes a request body with JSON.stringify). The hand-off through the SDK itself, with the Python worker and
 * on both backends, is tests/adapters/test_anthropic_handoff.py.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { Message } from "@anthropic-ai/sdk/resources/messages";
import * as adapter from "../../src/adapters/anthropic.js";
import { compactionRecord, JournalClient, Run } from "../../src/index.js";
import { unavailable, withServer } from "./server.js";

const skip = unavailable();
const FIXTURES = new URL("../../../../../testdata/provider_content/anthropic/", import.meta.url);
const value = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")) as Record<string, unknown>;
const SYSTEM = "You compare revenue with exchange rates.";
const CALL = { model: "claude-a", max_tokens: 1024, system: SYSTEM, thinking: { type: "enabled" as const, budget_tokens: 1024 } };

type Json = Record<string, unknown>;
/** An SDK `Message` as the API sends it (the TypeScript SDK hands back the parsed JSON). */
const answer = (content: Json[], stop: string, usage: Json = { input_tokens: 10, output_tokens: 5 }): Message =>
  ({ id: "msg_1", type: "message", role: "assistant", model: "claude-a", content, stop_reason: stop, stop_sequence: null, usage }) as unknown as Message;


const runId = (name: string): string => `ts-anthropic-${name}-${randomBytes(5).toString("hex")}`;

async function next(client: JournalClient, run: Run, options: { system?: string; model?: string } = {}) {
  const state = await run.fold();
  return adapter.requestMessages(state, { system: SYSTEM, ...options, records: await adapter.readRecords(client, run.runId) });
}

test("every block of a tool loop comes back as the SDK loop sent it, byte for byte", { skip }, async () => {
  await withServer(async (client) => {
    const prompt = [value("document"), value("text_cache_control"), { type: "text", text: "Compare Q3 revenue with today's rate." }];
    const run = await Run.create(client, runId("loop"), adapter.fingerprint(CALL), adapter.userBlocks(prompt));
    const caller: Json = { ...value("tool_use_chart"), caller: { type: "code_execution_20250825", tool_id: "srvtoolu_01Rbq1CkSyJt4v8ZsPhLx6nB" } };
    const first = answer([value("thinking"), value("server_tool_use"), value("web_search_tool_result"), value("server_tool_use_again"),
      value("web_search_tool_result_error"), value("text_citations_web"), { type: "text", text: ", so " }, value("text_citations_document"),
      value("redacted_thinking"), value("tool_use"), caller], "tool_use",
      { input_tokens: 1200, output_tokens: 300, cache_creation_input_tokens: 800, cache_read_input_tokens: 50 });
    await run.append(adapter.assistantRecord(first, { iteration: 1 }));
    const results = [
      { type: "tool_result" as const, tool_use_id: value("tool_use")["id"] as string, content: "1 EUR = 1.0842 USD" },
      { type: "tool_result" as const, tool_use_id: caller["id"] as string, content: [value("image"), { type: "text", text: "EUR" }], is_error: true },
    ];
    for (const result of results) await run.append(adapter.toolResultRecord(result as never));
    const second = answer([value("thinking_omitted"), { type: "text", text: "USD 4.55M." }], "end_turn");
    await run.append(adapter.assistantRecord(second, { iteration: 2 }));
    const followUp = [value("image"), { type: "text", text: "And this slide?" }];
    await run.append(adapter.userRecord(followUp as never));

    const sdkLoop = [
      { role: "user", content: prompt },
      { role: "assistant", content: first.content },
      { role: "user", content: results },
      { role: "assistant", content: second.content },
      { role: "user", content: followUp },
    ];
    const call = await next(client, run);
    assert.equal(JSON.stringify(call.messages), JSON.stringify(sdkLoop));
    assert.equal(call.system, SYSTEM);
    const state = await run.fold();
    assert.equal(state.counters!.cacheWriteTokens, 800n);
    assert.equal(state.counters!.cacheReadTokens, 50n);
    assert.equal(state.counters!.toolCalls, 2n, "server tools open no call");
  });
});

test("a compaction block starts the request; a null one stays where it was; the journal's compaction sends its summary", { skip }, async () => {
  await withServer(async (client) => {
    const run = await Run.create(client, runId("compaction"), adapter.fingerprint(CALL), "Hello.");
    await run.append(adapter.assistantRecord(answer([{ type: "text", text: "Long." }], "end_turn"), { iteration: 1 }));
    await run.append(adapter.userRecord("More."));
    const paused = answer([{ type: "text", text: "before" }, value("compaction")], "compaction");
    await run.append(adapter.assistantRecord(paused, { iteration: 2 }));
    const after = answer([value("compaction_null"), { type: "text", text: "after" }], "end_turn");
    await run.append(adapter.assistantRecord(after, { iteration: 3 }));
    await run.append(adapter.userRecord("Thanks."));
    const call = await next(client, run);
    assert.equal(
      JSON.stringify(call.messages),
      JSON.stringify([
        { role: "assistant", content: [value("compaction")] },
        { role: "assistant", content: after.content },
        { role: "user", content: "Thanks." },
      ]),
    );

    const summarised = await Run.create(client, runId("journal-compaction"), adapter.fingerprint(CALL), "Hello.");
    await summarised.append(adapter.assistantRecord(answer([{ type: "text", text: "Long." }], "end_turn"), { iteration: 1 }));
    await summarised.append(compactionRecord(2n, "The user said hello.", "manual"));
    await summarised.append(adapter.userRecord("Shorter?"));
    const shorter = await next(client, summarised);
    assert.deepEqual(shorter.messages, [{ role: "user", content: [{ type: "text", text: "The user said hello." }, { type: "text", text: "Shorter?" }] }]);
  });
});

test("after a model change the thinking of the other model's earlier turns is left out, the latest turn's kept", { skip }, async () => {
  await withServer(async (client) => {
    const id = runId("models");
    const run = await Run.create(client, id, adapter.fingerprint(CALL), "Hello.");
    const think = (text: string) => ({ type: "thinking", thinking: text, signature: `sig-${text}` });
    const call = { type: "tool_use", id: "toolu_1", name: "lookup", input: {} };
    await run.append(adapter.assistantRecord(answer([think("a1"), { type: "text", text: "Hi." }], "end_turn"), { iteration: 1 }));
    await run.append(adapter.userRecord("Look it up."));
    await run.append(adapter.assistantRecord(answer([think("a2"), call], "tool_use"), { iteration: 2 }));

    const claimed = await Run.claim(client, id, "worker-b", adapter.fingerprint({ ...CALL, model: "claude-b" }), { force: true });
    assert.equal(claimed.gate?.reconfigured, true);
    await claimed.append(adapter.toolResultRecord({ type: "tool_result", tool_use_id: "toolu_1", content: "1.08" }));
    const thinking = (messages: Json[]) =>
      messages.filter((m) => m["role"] === "assistant").map((m) => (m["content"] as Json[]).filter((b) => b["type"] === "thinking").map((b) => b["thinking"]));
    const asB = await next(client, claimed);
    assert.deepEqual(thinking(asB.messages as unknown as Json[]), [[], ["a2"]]);
    const asA = await next(client, claimed, { model: "claude-a" });
    assert.deepEqual(thinking(asA.messages as unknown as Json[]), [["a1"], ["a2"]], "the run's first model keeps every turn");

    await assert.rejects(async () => next(client, claimed, { system: "Another prompt." }), /system prompt differs/);
  });
});

test("a run with a call unanswered is refused, naming it", { skip }, async () => {
  await withServer(async (client) => {
    const run = await Run.create(client, runId("pending"), adapter.fingerprint(CALL), "Hello.");
    const calls = [value("tool_use"), value("tool_use_chart")];
    await run.append(adapter.assistantRecord(answer(calls, "tool_use"), { iteration: 1 }));
    await run.append(adapter.toolResultRecord({ type: "tool_result", tool_use_id: calls[0]!["id"] as string, content: "ok" }));
    await assert.rejects(async () => next(client, run), new RegExp(`calls \\["${calls[1]!["id"] as string}"\\] have no result yet`));
  });
});
