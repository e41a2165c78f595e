/**
 * runjournal for workers that call Claude with `@anthropic-ai/sdk`
 * (`import * as anthropic from "@runjournal/client/adapters/anthropic"`; the SDK is an optional peer
 * dependency, and this module only uses its types). The twin of Python's `runjournal.adapters.anthropic`:
 * the same conversions, requests equal as JSON (docs/integrations/anthropic.md).
 *
 * - `assistantRecord(message, { iteration })`: a `Message` / `BetaMessage` (or a stream's `finalMessage()`)
 *   -> an `assistant` record keeping every block, the usage with its cache tokens and the stop reason.
 * - `toolResultRecord(param)`: the `ToolResultBlockParam` the loop sends -> a `tool_result` record;
 *   `deferralRecord(toolUse, ...)`; `userBlocks(content)` / `userRecord(content)` for the prompt and follow-ups.
 * - `requestMessages(state, { system, records })`: a folded run -> the `messages` and `system` of the next
 *   `messages.create`, with the API's rules applied.
 * - `fingerprint(params)`: the run's fingerprint from the arguments of `messages.create`.
 *
 * A block the model sent is a typed journal block only when the typed block rebuilds it exactly (`text`
 * with `type` and `text` only, `thinking` with `thinking` and `signature`, `redacted_thinking` with `data`,
 * `tool_use`, its further keys kept in `providerJson`); every other block is opaque, holding its JSON as
 * the SDK sends it back. User-side content keeps its shape: a string is one typed text block, and a list
 * of exactly one block keeps that block opaque, so each converts back to the shape it came in.
 */
import type { BetaMessage } from "@anthropic-ai/sdk/resources/beta/messages";
import type { Message, MessageParam, TextBlockParam, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { create } from "@bufbuild/protobuf";
import {
  assistantRecord as draftAssistant,
  deferralRecord as draftDeferral,
  opaqueBlock,
  redactedThinkingBlock,
  textBlock,
  thinkingBlock,
  toolResultRecord as draftToolResult,
  toolUseBlock,
  userRecord as draftUser,
} from "../builders.js";
import type { JournalClient } from "../client.js";
import { canonicalJson, makeFingerprint, systemPromptSha256 } from "../fingerprint.js";
import {
  type ContentBlock,
  type ConversationMessage,
  ConversationMessageSchema,
  type Fingerprint,
  type JournalRecord,
  Role,
  StopReason,
  type ToolResultBlock,
  type Usage,
  UsageSchema,
} from "../gen/runjournal/v1/records_pb.js";
import type { RunState } from "../gen/runjournal/v1/state_pb.js";
import type { StoredRecord } from "../read-item.js";

export const PROVIDER = "anthropic";

type Json = Record<string, unknown>;

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: StopReason.END_TURN,
  tool_use: StopReason.TOOL_USE,
  max_tokens: StopReason.MAX_TOKENS,
  stop_sequence: StopReason.STOP_SEQUENCE,
  pause_turn: StopReason.PAUSE_TURN,
  refusal: StopReason.REFUSAL,
  compaction: StopReason.COMPACTION,
  model_context_window_exceeded: StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED,
};
const TYPED_KEYS: Record<string, string[]> = {
  text: ["text", "type"],
  thinking: ["signature", "thinking", "type"],
  redacted_thinking: ["data", "type"],
};
const TOOL_USE_KEYS = ["id", "input", "name", "type"];
const MODEL_ONLY_TYPES = new Set(["thinking", "redacted_thinking", "tool_use", "tool_result"]);
const TOOL_RESULT_KEYS = new Set(["type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"]);

// --- blocks ---------------------------------------------------------------------

function blockType(block: Json): string {
  const type = block["type"];
  if (typeof type !== "string" || type === "") {
    throw new TypeError(`an Anthropic content block needs a string 'type', got ${JSON.stringify(block).slice(0, 200)}`);
  }
  return type;
}

const sortedKeys = (block: Json): string[] => Object.keys(block).sort();
const sameKeys = (a: string[], b: string[] | undefined): boolean => b !== undefined && a.join("\0") === b.join("\0");

/** One block of a model's answer (`message.content[i]`) as a journal block. */
export function modelBlock(block: Json): ContentBlock {
  const type = blockType(block);
  const keys = sortedKeys(block);
  if (type === "tool_use") {
    if (!TOOL_USE_KEYS.every((key) => keys.includes(key))) {
      throw new TypeError(`a tool_use block needs id, name and input, got keys ${JSON.stringify(keys)}`);
    }
    const extra = sameKeys(keys, TOOL_USE_KEYS) ? "" : JSON.stringify(block);
    return toolUseBlock(block["id"] as string, block["name"] as string, JSON.stringify(block["input"]), extra);
  }
  if (sameKeys(keys, TYPED_KEYS[type]) && keys.every((key) => typeof block[key] === "string")) {
    if (type === "text") return textBlock(block["text"] as string);
    if (type === "thinking") return thinkingBlock(block["thinking"] as string, block["signature"] as string);
    return redactedThinkingBlock(block["data"] as string);
  }
  return opaqueBlock(PROVIDER, type, undefined, { jsonText: JSON.stringify(block) });
}

/** User-side content (a string or a list of blocks) as journal blocks that convert back to the same shape. */
export function userBlocks(content: string | readonly object[]): ContentBlock[] {
  if (typeof content === "string") return [textBlock(content)];
  const blocks = content.map((item) => item as Json);
  for (const block of blocks) {
    const type = blockType(block);
    if (MODEL_ONLY_TYPES.has(type)) {
      throw new TypeError(
        `a ${type} block cannot be user content here: tool results are tool_result records (toolResultRecord), ` +
          "and thinking and tool_use are the model's (assistantRecord)",
      );
    }
  }
  // A one-block list is not the string it would fold to as a typed text.
  if (blocks.length === 1) return [opaqueBlock(PROVIDER, blockType(blocks[0]!), undefined, { jsonText: JSON.stringify(blocks[0]) })];
  return blocks.map((block) =>
    sameKeys(sortedKeys(block), TYPED_KEYS["text"]) && blockType(block) === "text" && typeof block["text"] === "string"
      ? textBlock(block["text"])
      : opaqueBlock(PROVIDER, blockType(block), undefined, { jsonText: JSON.stringify(block) }),
  );
}

/** Journal blocks back to user-side content: one typed text is the string; none is undefined. */
export function userContent(blocks: readonly ContentBlock[]): string | Json[] | undefined {
  if (blocks.length === 0) return undefined;
  if (blocks.length === 1 && blocks[0]!.block.case === "text") return blocks[0]!.block.value.text;
  return blocks.map(blockParam);
}

/** One journal block as the request block the SDK sends (tool results are built with their message). */
export function blockParam(block: ContentBlock): Json {
  const { case: kind, value } = block.block;
  if (kind === "text") return { type: "text", text: value.text };
  if (kind === "thinking" && value.redacted) return { type: "redacted_thinking", data: value.data };
  if (kind === "thinking") return { type: "thinking", thinking: value.thinking, signature: value.signature };
  if (kind === "toolUse") {
    if (value.providerJson) return JSON.parse(value.providerJson) as Json;
    return { type: "tool_use", id: value.id, name: value.name, input: JSON.parse(value.inputJson) };
  }
  if (kind === "opaque") {
    if (value.provider !== PROVIDER) {
      throw new TypeError(`an opaque ${JSON.stringify(value.provider)} block (${value.type}) cannot be sent to Anthropic; a run keeps one provider`);
    }
    const parsed: unknown = JSON.parse(value.json);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new TypeError(`an opaque Anthropic ${value.type} block must be a JSON object`);
    }
    return parsed as Json;
  }
  throw new TypeError(`no Anthropic request block for a ${kind} block here`);
}

function isThinking(block: ContentBlock): boolean {
  const { case: kind, value } = block.block;
  return kind === "thinking" || (kind === "opaque" && value.provider === PROVIDER && (value.type === "thinking" || value.type === "redacted_thinking"));
}

/** An Anthropic compaction block with content: the conversation restarts at it (a null one is a no-op). */
function summarisingCompaction(block: ContentBlock): boolean {
  if (block.block.case !== "opaque" || block.block.value.provider !== PROVIDER || block.block.value.type !== "compaction") return false;
  const parsed = JSON.parse(block.block.value.json) as Json | null;
  return parsed !== null && typeof parsed === "object" && parsed["content"] !== null && parsed["content"] !== undefined;
}

// --- what the model answered ---------------------------------------------------------

/** A message as the adapter reads it: the SDK's `Message` or `BetaMessage`, or the response JSON. */
export type MessageLike = Pick<Message, "content" | "stop_reason" | "usage"> | Pick<BetaMessage, "content" | "stop_reason" | "usage">;

/** A draft `assistant` record of one model call: every block, the usage and the stop reason. */
export function assistantRecord(message: MessageLike, options: { iteration: number }): JournalRecord {
  const content = message.content as readonly object[];
  if (content.length === 0) {
    throw new TypeError("the message has no content block; an empty answer has no record (nor can it be sent back)");
  }
  return draftAssistant(
    options.iteration,
    content.map((block) => modelBlock(block as Json)),
    stopReason(message.stop_reason),
    usage(message.usage as unknown as Json | null),
  );
}

/** The journal's stop reason for the API's `stop_reason`. */
export function stopReason(value: string | null | undefined): StopReason {
  if (value === null || value === undefined) {
    throw new TypeError("the message has no stop_reason: record a finished message (a stream's final message)");
  }
  const reason = STOP_REASONS[value];
  if (reason === undefined) throw new TypeError(`unknown Anthropic stop_reason ${JSON.stringify(value)}; known: ${Object.keys(STOP_REASONS).join(", ")}`);
  return reason;
}

/** The journal's usage for the API's: input and output tokens, cache reads and cache writes. */
export function usage(value: Json | null | undefined): Usage {
  const count = (key: string): number => (typeof value?.[key] === "number" ? (value[key] as number) : 0);
  return create(UsageSchema, {
    inputTokens: count("input_tokens"),
    outputTokens: count("output_tokens"),
    cacheReadTokens: count("cache_read_input_tokens"),
    cacheWriteTokens: count("cache_creation_input_tokens"),
  });
}

// --- what the loop sends -------------------------------------------------------------

/**
 * A draft `tool_result` record from the `ToolResultBlockParam` the loop sends. `content` (a string, a list
 * of blocks, or none) comes back in the same shape, and `is_error` when true. Not kept: `cache_control` of
 * the block itself (a breakpoint belongs to one request) and `toolset_name` (rebuilt from its call).
 */
export function toolResultRecord(param: ToolResultBlockParam, options: { remote?: boolean } = {}): JournalRecord {
  const fields = param as unknown as Json;
  if (fields["type"] !== "tool_result" || typeof fields["tool_use_id"] !== "string") {
    throw new TypeError("expected a tool_result block: { type: 'tool_result', tool_use_id, ... }");
  }
  const unknown = Object.keys(fields).filter((key) => !TOOL_RESULT_KEYS.has(key));
  if (unknown.length) throw new TypeError(`a tool_result block with keys the journal cannot keep: ${JSON.stringify(unknown.sort())}`);
  return draftToolResult(param.tool_use_id, toolResultContent(param.content), {
    isError: param.is_error === true,
    remote: options.remote ?? false,
  });
}

/** A tool result's `content` as journal blocks, e.g. for `JournalClient.answer` of a deferred call. */
export function toolResultContent(content: string | readonly object[] | undefined | null): ContentBlock[] {
  return content === undefined || content === null ? [] : userBlocks(content);
}

/** A draft `deferral` record for a `tool_use` block of the model's answer (or its id). */
export function deferralRecord(
  toolUse: { id: string } | string,
  reason: string,
  expectedAnswerer: string,
  options: { needsApproval?: boolean } = {},
): JournalRecord {
  return draftDeferral(typeof toolUse === "string" ? toolUse : toolUse.id, reason, expectedAnswerer, options);
}

/** A draft `user` follow-up from a user message's `content` (a string or blocks). */
export function userRecord(content: MessageParam["content"]): JournalRecord {
  return draftUser(userBlocks(content as string | object[]));
}

// --- the next request ----------------------------------------------------------------

/** Each conversation message as the SDK's `MessageParam`, block for block (no API rule applied). */
export function messageParams(conversation: readonly ConversationMessage[]): MessageParam[] {
  const calls = new Map<string, Json>();
  return conversation.map((message) => {
    if (message.role === Role.ASSISTANT) {
      const content = message.content.map(blockParam);
      for (const block of content) if (block["type"] === "tool_use") calls.set(block["id"] as string, block);
      return { role: "assistant", content } as unknown as MessageParam;
    }
    return { role: "user", content: userMessageContent(message.content, calls) } as unknown as MessageParam;
  });
}

function userMessageContent(blocks: readonly ContentBlock[], calls: Map<string, Json>): unknown {
  const results: Json[] = [];
  const others: ContentBlock[] = [];
  for (const block of blocks) {
    if (block.block.case === "toolResult") results.push(resultParam(block.block.value, calls));
    else others.push(block);
  }
  const rest = userContent(others);
  if (results.length === 0) return rest;
  return [...results, ...asList(rest)];
}

function resultParam(result: ToolResultBlock, calls: Map<string, Json>): Json {
  const param: Json = { type: "tool_result", tool_use_id: result.toolUseId };
  const content = userContent(result.content);
  if (content !== undefined) param["content"] = content;
  if (result.isError) param["is_error"] = true;
  const toolset = calls.get(result.toolUseId)?.["toolset_name"];
  if (typeof toolset === "string") param["toolset_name"] = toolset;
  return param;
}

const asList = (content: unknown): Json[] =>
  content === undefined ? [] : typeof content === "string" ? [{ type: "text", text: content }] : (content as Json[]);

/**
 * The model that wrote each assistant message of `state.conversation`, in order, read from the run's records:
 * meta's model, replaced by each `reconfigure`. Fold makes every assistant record one message, so the messages
 * after the compaction in force are those of the assistant records after its `uptoSeq` (the pending turn is
 * not among them); the summary's assistant messages are the compaction's, under the model then in force.
 */
export function assistantModels(records: Iterable<JournalRecord>, state: RunState): string[] {
  let model = "";
  let expected = 1n;
  const written: [bigint, string][] = [];
  let summaryModel = "";
  let summaryAssistants = 0;
  for (const record of records) {
    if (record.seq > state.lastSeq) break;
    if (record.seq !== expected) throw new RangeError(`records must be the run's, from seq 1 without a gap; got seq ${record.seq}`);
    expected += 1n;
    const payload = record.payload;
    if (payload.case === "meta") {
      if (payload.value.runId !== state.runId) throw new RangeError(`records of run ${payload.value.runId} given for run ${state.runId}`);
      model = payload.value.fingerprint?.model ?? "";
    } else if (payload.case === "reconfigure") {
      model = payload.value.fingerprint?.model ?? "";
    } else if (payload.case === "assistant") {
      written.push([record.seq, model]);
    } else if (payload.case === "compaction" && record.seq === state.compactionSeq) {
      summaryModel = model;
      summaryAssistants = payload.value.summary.filter((message) => message.role === Role.ASSISTANT).length;
    }
  }
  if (expected <= state.lastSeq) throw new RangeError(`records end at seq ${expected - 1n}, before the state's last seq ${state.lastSeq}`);
  const pending = state.pending?.assistantSeq ?? 0n;
  const tail = written.filter(([seq]) => seq > state.compactedUptoSeq && seq !== pending).map(([, writer]) => writer);
  const models = [...Array<string>(summaryAssistants).fill(summaryModel), ...tail];
  const count = state.conversation.filter((message) => message.role === Role.ASSISTANT).length;
  if (count !== models.length) throw new RangeError(`the state holds ${count} assistant messages but the records ${models.length}`);
  return models;
}

/** (message, block) of the newest Anthropic compaction block with content, or undefined. */
function newestCompaction(conversation: readonly ConversationMessage[]): [number, number] | undefined {
  for (let index = conversation.length - 1; index >= 0; index--) {
    const blocks = conversation[index]!.content;
    for (let position = blocks.length - 1; position >= 0; position--) {
      if (summarisingCompaction(blocks[position]!)) return [index, position];
    }
  }
  return undefined;
}

function stripForeignThinking(params: MessageParam[], conversation: readonly ConversationMessage[], models: readonly string[], model: string): MessageParam[] {
  const writer = new Map<number, string>();
  conversation.forEach((message, index) => {
    if (message.role === Role.ASSISTANT) writer.set(index, models[writer.size]!);
  });
  const latest = new Set<number>();
  for (let index = conversation.length - 1; index >= 0; index--) {
    if (conversation[index]!.role === Role.ASSISTANT) latest.add(index);
    else if (latest.size) break;
  }
  const out: MessageParam[] = [];
  params.forEach((original, index) => {
    let param = original;
    if (writer.has(index) && !latest.has(index) && writer.get(index) !== model) {
      const blocks = conversation[index]!.content;
      const kept = (param.content as unknown as Json[]).filter((_, position) => !isThinking(blocks[position]!));
      if (kept.length === 0) return;
      param = { role: "assistant", content: kept } as unknown as MessageParam;
    }
    const last = out.at(-1);
    if (last !== undefined && last.role === "user" && param.role === "user") {
      out[out.length - 1] = { role: "user", content: [...asList(last.content), ...asList(param.content)] } as unknown as MessageParam;
      return;
    }
    out.push(param);
  });
  return out;
}

/** The `system` argument of `messages.create`. */
export type SystemLike = string | readonly TextBlockParam[];

export interface RequestOptions {
  /** The system prompt the caller sends; it must hash to the run's fingerprint. */
  system?: SystemLike;
  /** The run's records (`readRecords(client, runId)`), which say which model wrote each turn. */
  records: Iterable<JournalRecord | StoredRecord>;
  /** The model called now; the fingerprint's by default. */
  model?: string;
}

/**
 * The `messages` (and `system`) arguments of the next `messages.create`, from a folded run (`Run.claim`,
 * `fold`: the default compacted conversation, from message 0, without unanswered calls). Tool results come
 * first in their message; Anthropic's compaction block with content starts the conversation (what came
 * before it is left out); thinking is sent back unmodified, except that the thinking of turns another model
 * wrote (a `reconfigure` changed it) is left out, never the latest turn's.
 */
export function requestMessages(state: RunState, options: RequestOptions): { messages: MessageParam[]; system?: SystemLike } {
  if (state.conversationOffset) throw new RangeError("the state holds the conversation from a later message; fold it from message 0");
  if (state.uncompacted) throw new RangeError("an uncompacted state is for reading; fold without uncompacted to call the model");
  if (state.pending !== undefined) {
    const open = state.pending.calls.filter((call) => !call.answered).map((call) => call.toolUse?.id);
    throw new RangeError(`calls ${JSON.stringify(open)} have no result yet: record their results, then fold again`);
  }
  const recorded = state.effectiveFingerprint?.systemPromptSha256 ?? "";
  if (recorded && systemPromptSha256(systemText(options.system)) !== recorded) {
    throw new RangeError(
      "the system prompt differs from the run's (its SHA-256 is not the fingerprint's system_prompt_sha256): " +
        "pass the system the run was written with, or claim with force",
    );
  }
  let conversation: ConversationMessage[] = [...state.conversation];
  const records = [...options.records].map((item) => ("storedLine" in item ? item.record : item));
  let models = assistantModels(records, state);
  const cut = newestCompaction(conversation);
  if (cut !== undefined) {
    const [index, position] = cut;
    const first = create(ConversationMessageSchema, { role: conversation[index]!.role, content: conversation[index]!.content.slice(position) });
    const before = conversation.slice(0, index).filter((message) => message.role === Role.ASSISTANT).length;
    conversation = [first, ...conversation.slice(index + 1)];
    models = models.slice(before);
  }
  const model = options.model ?? state.effectiveFingerprint?.model ?? "";
  const messages = stripForeignThinking(messageParams(conversation), conversation, models, model);
  return options.system === undefined ? { messages } : { messages, system: options.system };
}

/** Every record of a run, for `requestMessages`' `records`. */
export async function readRecords(client: JournalClient, runId: string): Promise<JournalRecord[]> {
  const records: JournalRecord[] = [];
  for await (const item of client.read(runId)) records.push(item.record);
  return records;
}

// --- the fingerprint -----------------------------------------------------------------

/** The arguments of `messages.create` the fingerprint reads (the others are ignored). */
export interface CreateParamsLike {
  model: string;
  max_tokens?: number;
  system?: SystemLike | null;
  tools?: readonly object[] | null;
  thinking?: { type: string } | null;
}

/**
 * The run's fingerprint from the arguments of `messages.create`: the system prompt and tools hashed
 * (docs/fingerprint.md), the thinking mode from `thinkingMode`; `maxIterations` is the worker's own.
 */
export function fingerprint(params: CreateParamsLike, options: { maxIterations?: number } = {}): Fingerprint {
  return makeFingerprint({
    provider: PROVIDER,
    model: params.model,
    systemPrompt: systemText(params.system ?? undefined),
    thinkingMode: thinkingMode(params.thinking ?? undefined),
    tools: [...(params.tools ?? [])],
    maxTokens: params.max_tokens ?? 0,
    maxIterations: options.maxIterations ?? 0,
  });
}

/** The text whose SHA-256 is the fingerprint's: a string as is, a list of blocks as canonical JSON, none as "". */
export function systemText(system: SystemLike | undefined): string {
  if (system === undefined) return "";
  return typeof system === "string" ? system : canonicalJson(system);
}

/** `thinking`'s type ("enabled", "adaptive", ...), or "off" when absent or disabled. */
export function thinkingMode(thinking: { type: string } | undefined): string {
  if (thinking === undefined) return "off";
  const type = blockType(thinking as unknown as Json);
  return type === "disabled" ? "off" : type;
}
