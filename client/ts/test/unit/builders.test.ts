import assert from "node:assert/strict";
import { test } from "node:test";
import { toJson } from "@bufbuild/protobuf";
import {
  approvalRecord,
  assistantRecord,
  compactionRecord,
  CompactionTrigger,
  ConversationMessageSchema,
  Decision,
  deferralRecord,
  FingerprintSchema,
  FORMAT_VERSION,
  create,
  type JournalRecord,
  JournalRecordSchema,
  metaRecord,
  noteRecord,
  opaqueBlock,
  placeBatch,
  Role,
  StopReason,
  terminalRecord,
  TerminalReason,
  textBlock,
  thinkingBlock,
  toolResultRecord,
  toolUseBlock,
  userRecord,
} from "./helpers.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;
const json = (r: JournalRecord): Loose => toJson(JournalRecordSchema, r);
const pv = (r: JournalRecord): Loose => r.payload.value;

test("meta is seq 1 with format version 2, the prompt as text or blocks, labels and createdAt", () => {
  const fp = create(FingerprintSchema, { provider: "anthropic", model: "m" });
  const record = metaRecord("run-1", fp, "hello", { labels: { team: "a" }, createdAt: new Date("2023-11-14T22:13:20Z"), taskId: "t-1" });
  assert.deepEqual(json(record), {
    seq: "1",
    meta: {
      formatVersion: 2,
      runId: "run-1",
      createdAt: "2023-11-14T22:13:20Z",
      fingerprint: { provider: "anthropic", model: "m" },
      prompt: [{ text: { text: "hello" } }],
      labels: { team: "a" },
      taskId: "t-1",
    },
  });
  const blocks = metaRecord("r", fp, [textBlock("a"), textBlock("b")]);
  assert.equal(blocks.payload.case === "meta" && blocks.payload.value.prompt.length, 2);
  assert.equal(blocks.payload.case === "meta" && blocks.payload.value.formatVersion, FORMAT_VERSION);
  assert.equal(FORMAT_VERSION, 2);
});

test("drafts have seq 0 and exactly their payload; short enum names are accepted", () => {
  const turn = assistantRecord(1, [thinkingBlock("hmm", "sig"), toolUseBlock("tu_1", "get_weather", { city: "Paris", a: 1 })], "tool_use", { inputTokens: 10, outputTokens: 5 });
  assert.equal(turn.seq, 0n);
  assert.equal(turn.payload.case, "assistant");
  assert.equal(turn.payload.value!.stopReason, StopReason.TOOL_USE);
  const block = turn.payload.value!.content[1]!.block;
  assert.equal(block.case, "toolUse");
  assert.equal(block.value!.inputJson, '{"a":1,"city":"Paris"}', "tool input is canonical JSON");
  assert.deepEqual(json(turn).assistant.usage, { inputTokens: 10, outputTokens: 5 });
  assert.equal(pv(terminalRecord("completed")).reason, TerminalReason.COMPLETED);
  assert.equal(pv(terminalRecord(TerminalReason.ERROR, "boom")).reason, TerminalReason.ERROR);
  assert.equal(pv(approvalRecord("tu_1", "denied", "ops")).decision, Decision.DENIED);
  assert.throws(() => terminalRecord("finished" as never), /completed/);
  assert.throws(() => terminalRecord("unspecified" as never));
});

test("tool results, deferrals, follow-ups, notes and opaque blocks", () => {
  assert.deepEqual(json(toolResultRecord("tu_1", "22C", { isError: false })), { toolResult: { toolUseId: "tu_1", content: [{ text: { text: "22C" } }] } });
  assert.deepEqual(json(toolResultRecord("tu_1", [textBlock("x")], { isError: true, remote: true })).toolResult, {
    toolUseId: "tu_1",
    content: [{ text: { text: "x" } }],
    isError: true,
    remote: true,
  });
  assert.deepEqual(json(deferralRecord("tu_2", "needs a human", "ops", { needsApproval: true })), {
    deferral: { toolUseId: "tu_2", reason: "needs a human", expectedAnswerer: "ops", needsApproval: true },
  });
  assert.deepEqual(json(userRecord("more")), { user: { content: [{ text: { text: "more" } }] } });
  const note = noteRecord("progress", { b: [1, 2], a: "x" });
  assert.equal(note.optional, true, "a note is always optional");
  assert.equal(pv(note).dataJson, '{"a":"x","b":[1,2]}');
  assert.equal(pv(noteRecord("plain")).dataJson, "");
  assert.equal((opaqueBlock("anthropic", "image", { z: 1, a: null }).block.value as Loose).json, '{"a":null,"z":1}');
  assert.throws(() => toolUseBlock("id", "n", [] as never));
});

test("placeBatch puts drafts at consecutive seqs and refuses a draft placed elsewhere", () => {
  const placed = placeBatch(5n, [noteRecord("a"), noteRecord("b")]);
  assert.deepEqual(placed.map((r) => r.seq), [5n, 6n]);
  const draft = noteRecord("c");
  placeBatch(9n, [draft]);
  assert.equal(draft.seq, 0n, "the draft itself is not changed");
  const stray = noteRecord("d");
  stray.seq = 3n;
  assert.throws(() => placeBatch(4n, [stray]), /next seq is 4/);
  assert.throws(() => placeBatch(4n, []));
});

test("a compaction holds its point, a text summary as one user message, the trigger by name and every option", () => {
  const record = compactionRecord(4n, "so far", "auto", {
    provider: "anthropic",
    model: "claude-x",
    tokensBefore: 150000,
    usage: { inputTokens: 900, outputTokens: 80 },
  });
  assert.equal(record.seq, 0n);
  assert.equal(record.optional, false, "a compaction is never optional");
  assert.deepEqual(json(record), {
    compaction: {
      uptoSeq: 4,
      summary: [{ role: "ROLE_USER", content: [{ text: { text: "so far" } }] }],
      provider: "anthropic",
      model: "claude-x",
      trigger: "COMPACTION_TRIGGER_AUTO",
      tokensBefore: 150000,
      usage: { inputTokens: 900, outputTokens: 80 },
    },
  });
  assert.equal(pv(compactionRecord(4, "s", CompactionTrigger.PROVIDER)).trigger, CompactionTrigger.PROVIDER);
  assert.ok(pv(compactionRecord(4, "s", "manual")).usage, "usage is set even when not given, as the other languages build it");
  assert.throws(() => compactionRecord(4, "s", "sometimes" as never), /manual, auto, provider/);
  assert.throws(() => compactionRecord(2n ** 31n, "s", "auto"), /does not fit/);
});

test("a compaction's summary as blocks is one user message; as messages it keeps their roles", () => {
  const block = opaqueBlock("anthropic", "compaction", { type: "compaction", content: "S" });
  const ofBlocks = pv(compactionRecord(7, [block, textBlock("t")], "provider")).summary;
  assert.equal(ofBlocks.length, 1);
  assert.equal(ofBlocks[0].role, Role.USER);
  assert.equal(ofBlocks[0].content[0].block.value.json, '{"content":"S","type":"compaction"}');
  const assistant = create(ConversationMessageSchema, { role: Role.ASSISTANT, content: [block] });
  const ofMessages = pv(compactionRecord(7, [assistant], "provider")).summary;
  assert.deepEqual(ofMessages.map((m: Loose) => m.role), [Role.ASSISTANT]);
  assert.deepEqual(pv(compactionRecord(7, [], "manual")).summary, [], "no summary is sent as none, for the server to refuse");
});
