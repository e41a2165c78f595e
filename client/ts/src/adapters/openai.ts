/**
 * The OpenAI Responses API (the `openai` SDK) and runjournal: records from the SDK's objects, and the next
 * request's arguments from a folded run. Import it as `@runjournal/client/adapters/openai`; it needs the
 * `openai` package (an optional peer dependency) only for its types.
 *
 * The same rules as the Python adapter (`runjournal.adapters.openai`), so a run written by one continues in
 * the other with a request equal as JSON. The rules are in docs/integrations/openai.md:
 *
 * - output items become blocks in order, each the JSON the API sent (without the SDK's own `parsed` and
 *   `parsed_arguments`); a `function_call` is one typed tool_use (id = `call_id`, input = `arguments` as
 *   written, `providerJson` = the item), anything else an opaque block;
 * - a `function_call_output` input item is a tool result holding that item, whole;
 * - the folded conversation goes back as `input` items: what the model sent as the text the journal holds,
 *   what the journal built as the smallest item the API takes, from the newest `compaction` item the model
 *   returned on (a journal compaction record's summary, such as a `responses.compact` window, goes whole).
 */
import { create } from "@bufbuild/protobuf";
import type {
  CompactedResponse,
  Response,
  ResponseCreateParamsBase,
  ResponseFunctionToolCall,
  ResponseInputItem,
  ResponseUsage,
} from "openai/resources/responses/responses";
import {
  assistantRecord as draftAssistant,
  compactionRecord as draftCompaction,
  deferralRecord as draftDeferral,
  opaqueBlock,
  textBlock,
  toolResultRecord as draftToolResult,
  toolUseBlock,
} from "../builders.js";
import { makeFingerprint, systemPromptSha256 } from "../fingerprint.js";
import {
  type ContentBlock,
  ConversationMessageSchema,
  Decision,
  type ConversationMessage,
  type Fingerprint,
  type JournalRecord,
  Role,
  StopReason,
  type ToolResultBlock,
  type Usage,
  UsageSchema,
} from "../gen/runjournal/v1/records_pb.js";
import { type RunState, WaitingFor } from "../gen/runjournal/v1/state_pb.js";

export const PROVIDER = "openai";

/** The fingerprint's thinking mode when the call sets no `reasoning.effort` (the model's own default). */
export const DEFAULT_THINKING_MODE = "default";

/** Opaque user blocks that are parts of a message's content rather than items of their own. */
export const CONTENT_PARTS: ReadonlySet<string> = new Set(["input_text", "input_image", "input_file", "input_audio"]);

/**
 * Calls the client must answer that a typed tool_use cannot hold (their input is not a JSON object, or they
 * have no name): kept opaque they would open no call, and the next request would fail for want of their
 * output, so they are refused where the worker can still see why.
 */
export const CLIENT_RUN_CALLS: ReadonlySet<string> = new Set([
  "custom_tool_call",
  "computer_call",
  "local_shell_call",
  "shell_call",
  "apply_patch_call",
  "mcp_approval_request",
]);

type JsonObject = Record<string, unknown>;

// --- the fingerprint ------------------------------------------------------------

/**
 * The run's fingerprint from the `responses.create` parameters (others, such as `input`, are ignored):
 * `instructions` is the system prompt (absent hashes as ""), the thinking mode `reasoning.effort` (or
 * "default"), and a tool without a `name` (a built-in such as `web_search`) is hashed under its `type`
 * (`type:server_label` for an MCP server).
 */
export function fingerprint(
  params: Pick<ResponseCreateParamsBase, "model" | "instructions" | "tools" | "reasoning" | "max_output_tokens">,
  options: { maxIterations?: number } = {},
): Fingerprint {
  const effort = params.reasoning?.effort;
  return makeFingerprint({
    provider: PROVIDER,
    model: String(params.model),
    systemPrompt: params.instructions ?? "",
    thinkingMode: effort ? String(effort) : DEFAULT_THINKING_MODE,
    tools: (params.tools ?? []).map((tool) => namedTool(tool as unknown as JsonObject)),
    maxTokens: params.max_output_tokens ?? 0,
    maxIterations: options.maxIterations ?? 0,
  });
}

function namedTool(tool: JsonObject): JsonObject {
  if (tool["name"]) return tool;
  const label = tool["server_label"];
  return { ...tool, name: label ? `${String(tool["type"])}:${String(label)}` : String(tool["type"]) };
}

// --- from the SDK's objects to records ------------------------------------------

/** A user's message for the prompt or a follow-up: a text, or content parts (`input_text` a text block,
 * `input_image`/`input_file`/`input_audio` opaque blocks kept as given). */
export function userBlocks(content: string | readonly JsonObject[]): ContentBlock[] {
  if (typeof content === "string") return [textBlock(content)];
  return content.map((part) => {
    const kind = part["type"];
    if (kind === "input_text" && Object.keys(part).length === 2 && typeof part["text"] === "string") {
      return textBlock(part["text"]);
    }
    if (typeof kind === "string" && CONTENT_PARTS.has(kind)) {
      return opaqueBlock(PROVIDER, kind, undefined, { jsonText: JSON.stringify(part) });
    }
    throw new RangeError(`${JSON.stringify(kind)} is not a content part of a user message (one of ${[...CONTENT_PARTS].join(", ")})`);
  });
}

/** The item as the API sent it: without the fields the SDK adds for its parsing helpers. */
export function wireItem(item: object): JsonObject {
  const copy: JsonObject = { ...(item as JsonObject) };
  if (copy["type"] === "function_call") delete copy["parsed_arguments"];
  if (copy["type"] === "message" && Array.isArray(copy["content"])) {
    copy["content"] = copy["content"].map((part: JsonObject) => {
      if (part === null || typeof part !== "object" || !("parsed" in part)) return part;
      const { parsed: _parsed, ...rest } = part;
      return rest;
    });
  }
  return copy;
}

function isJsonObjectText(text: unknown): boolean {
  if (typeof text !== "string") return false;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** One output item as a content block: a function call as a typed tool_use, anything else opaque. */
export function itemBlock(item: object): ContentBlock {
  const data = wireItem(item);
  const kind = data["type"];
  if (typeof kind !== "string" || kind === "") throw new RangeError("an output item needs a string 'type'");
  if (CLIENT_RUN_CALLS.has(kind)) {
    throw new RangeError(
      `a ${kind} item is a call the worker must answer, but only function calls (JSON arguments, a name) ` +
        "can be tracked as journal calls; use function tools",
    );
  }
  const text = JSON.stringify(data);
  if (kind === "function_call") {
    if (!isJsonObjectText(data["arguments"])) {
      throw new RangeError(
        `function call ${JSON.stringify(data["call_id"])} has arguments that are not a JSON object (status ` +
          `${JSON.stringify(data["status"])}): the output was cut short; ask again with more max_output_tokens`,
      );
    }
    return toolUseBlock(String(data["call_id"]), String(data["name"]), data["arguments"] as string, text);
  }
  return opaqueBlock(PROVIDER, kind, undefined, { jsonText: text });
}

/**
 * The response's output items in order, as blocks. A trailing reasoning item (a response cut short while
 * reasoning) is left out: the API refuses it sent back without the item it produced, and the journal
 * refuses a turn ending with one. An output with nothing else is refused.
 */
export function outputBlocks(response: Pick<Response, "id" | "status" | "output">): ContentBlock[] {
  const items = [...(response.output ?? [])];
  while (items.length > 0 && items[items.length - 1]!.type === "reasoning") items.pop();
  if (items.length === 0) {
    throw new RangeError(
      `response ${JSON.stringify(response.id)} (${String(response.status)}) has no output item but reasoning: ` +
        "nothing to record; ask again (with more max_output_tokens if it was cut short)",
    );
  }
  return items.map(itemBlock);
}

/** Usage as the journal counts it: `inputTokens` uncached (OpenAI's include cache reads and writes). */
export function usageOf(usage: ResponseUsage | null | undefined): Usage {
  if (!usage) return create(UsageSchema);
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  const written = usage.input_tokens_details?.cache_write_tokens ?? 0;
  return create(UsageSchema, {
    inputTokens: Math.max(usage.input_tokens - cached - written, 0),
    outputTokens: usage.output_tokens,
    cacheReadTokens: cached,
    cacheWriteTokens: written,
  });
}

const INCOMPLETE_STOPS: Record<string, StopReason> = {
  max_output_tokens: StopReason.MAX_TOKENS,
  content_filter: StopReason.REFUSAL,
  max_messages: StopReason.PAUSE_TURN,
  steered: StopReason.PAUSE_TURN,
};

/** The journal's stop reason for a response (the table is in docs/integrations/openai.md). */
export function stopReasonOf(response: Pick<Response, "id" | "status" | "output" | "incomplete_details">): StopReason {
  if (response.status === "incomplete") {
    return INCOMPLETE_STOPS[response.incomplete_details?.reason ?? ""] ?? StopReason.UNSPECIFIED;
  }
  if (response.status !== undefined && response.status !== "completed") {
    throw new RangeError(`response ${JSON.stringify(response.id)} is ${response.status}, not a finished turn: nothing to record`);
  }
  const output = response.output ?? [];
  if (output.some((item) => item.type === "function_call")) return StopReason.TOOL_USE;
  const messages = output.filter((item) => item.type === "message");
  const last = messages[messages.length - 1];
  if (last?.content?.some((part) => part.type === "refusal")) return StopReason.REFUSAL;
  return StopReason.END_TURN;
}

/** A draft `assistant` record of one `responses.create` (or a stream's final response). */
export function assistantRecord(response: Response, options: { iteration: number }): JournalRecord {
  return draftAssistant(options.iteration, outputBlocks(response), stopReasonOf(response), usageOf(response.usage));
}

/** A draft `tool_result` record of a `function_call_output` input item, kept whole as an opaque block. */
export function toolResultRecord(
  output: ResponseInputItem.FunctionCallOutput,
  options: { isError?: boolean; remote?: boolean } = {},
): JournalRecord {
  if (output.type !== "function_call_output" || typeof output.call_id !== "string") {
    throw new RangeError(`expected a function_call_output item with a call_id, got ${JSON.stringify(output).slice(0, 200)}`);
  }
  const block = opaqueBlock(PROVIDER, "function_call_output", undefined, { jsonText: JSON.stringify(output) });
  return draftToolResult(output.call_id, [block], options);
}

/** A draft `deferral` record for a function call that waits for a person (or, with `needsApproval`, a decision). */
export function deferralRecord(
  call: Pick<ResponseFunctionToolCall, "call_id">,
  reason: string,
  expectedAnswerer: string,
  options: { needsApproval?: boolean } = {},
): JournalRecord {
  return draftDeferral(call.call_id, reason, expectedAnswerer, options);
}

/** A draft journal `compaction` record of a `responses.compact` answer: its items, verbatim, replace
 * records 1..`uptoSeq`. */
export function compactionRecord(
  compacted: Pick<CompactedResponse, "output" | "usage">,
  options: { uptoSeq: number | bigint; model?: string; tokensBefore?: number },
): JournalRecord {
  const blocks = compacted.output.map((item) => {
    const data = wireItem(item);
    return opaqueBlock(PROVIDER, String(data["type"]), undefined, { jsonText: JSON.stringify(data) });
  });
  const summary = [create(ConversationMessageSchema, { role: Role.USER, content: blocks })];
  return draftCompaction(options.uptoSeq, summary, "provider", {
    provider: PROVIDER,
    model: options.model ?? "",
    tokensBefore: options.tokensBefore ?? 0,
    usage: usageOf(compacted.usage),
  });
}

// --- from a folded run to the next request --------------------------------------

/** A call of the pending batch the worker must act on: run it, or, when `denied`, answer it with an error. */
export interface PendingFunctionCall {
  call: ResponseFunctionToolCall;
  denied: boolean;
}

/** The pending batch's calls that wait for the worker (unanswered, not deferred to a person), in order. */
export function pendingCalls(state: RunState): PendingFunctionCall[] {
  const out: PendingFunctionCall[] = [];
  for (const pending of state.pending?.calls ?? []) {
    if (pending.answered || pending.waitingFor !== WaitingFor.WORKER) continue;
    const use = pending.toolUse!;
    const call = (
      use.providerJson
        ? JSON.parse(use.providerJson)
        : { type: "function_call", call_id: use.id, name: use.name, arguments: use.inputJson }
    ) as ResponseFunctionToolCall;
    out.push({ call, denied: pending.decision === Decision.DENIED });
  }
  return out;
}

/** The request's `input` items as JSON text, from the newest compaction item the model returned on. */
export function inputItemTexts(conversation: readonly ConversationMessage[]): string[] {
  const items: string[] = [];
  let start = 0;
  for (const message of conversation) {
    if (message.role !== Role.ASSISTANT) {
      items.push(...userItems(message.content));
      continue;
    }
    for (const block of message.content) {
      const [text, type] = assistantItem(block);
      // A compaction item the model returned stands for everything before it (server-side compaction);
      // a journal compaction record's summary (e.g. a responses.compact window) is sent whole.
      if (type === "compaction") start = items.length;
      items.push(text);
    }
  }
  return items.slice(start);
}

/** The `input` items of the next request (`inputItemTexts` parsed). */
export function inputItems(conversation: readonly ConversationMessage[]): ResponseInputItem[] {
  return inputItemTexts(conversation).map((text) => JSON.parse(text) as ResponseInputItem);
}

/**
 * The `input` (and `instructions`) parameters of the next `responses.create` for a folded run. Refused
 * while calls of the last turn have no result, and when `instructions` is not the text the run's
 * fingerprint hashed.
 */
export function requestParams(
  state: RunState,
  options: { instructions?: string } = {},
): { input: ResponseInputItem[]; instructions?: string } {
  if (state.pending !== undefined) {
    const waiting = state.pending.calls.filter((call) => !call.answered).map((call) => call.toolUse?.id);
    throw new RangeError(`calls ${JSON.stringify(waiting)} of the last turn have no result yet: answer them before the next request`);
  }
  const want = state.effectiveFingerprint?.systemPromptSha256 ?? "";
  if (want !== "" && systemPromptSha256(options.instructions ?? "") !== want) {
    throw new RangeError(
      `these instructions are not the ones the run's fingerprint hashed (system_prompt_sha256 ${want.slice(0, 12)}…); ` +
        "pass the instructions the run was created or reconfigured with",
    );
  }
  const params: { input: ResponseInputItem[]; instructions?: string } = { input: inputItems(state.conversation) };
  if (options.instructions !== undefined) params.instructions = options.instructions;
  return params;
}

/** The item's JSON text and its type. */
function assistantItem(block: ContentBlock): [text: string, type: string] {
  const { block: b } = block;
  switch (b.case) {
    case "opaque":
      return [ownOpaque(block), b.value.type];
    case "toolUse": {
      const use = b.value;
      if (use.providerJson) return [use.providerJson, "function_call"];
      const fields = { type: "function_call", call_id: use.id, name: use.name, arguments: use.inputJson };
      return [JSON.stringify(fields), "function_call"];
    }
    case "text":
      return [JSON.stringify({ type: "message", role: "assistant", content: b.value.text }), "message"];
    default:
      throw new RangeError(`an assistant ${String(b.case)} block has no Responses API form (is this run an OpenAI one?)`);
  }
}

function userItems(blocks: readonly ContentBlock[]): string[] {
  const items: string[] = [];
  let parts: string[] = [];
  const flush = (): void => {
    if (parts.length > 0) items.push(`{"type":"message","role":"user","content":[${parts.join(",")}]}`);
    parts = [];
  };
  for (const block of blocks) {
    const { block: b } = block;
    if (b.case === "text") {
      parts.push(JSON.stringify({ type: "input_text", text: b.value.text }));
      continue;
    }
    if (b.case === "opaque" && CONTENT_PARTS.has(b.value.type)) {
      parts.push(ownOpaque(block));
      continue;
    }
    flush();
    if (b.case === "toolResult") items.push(functionCallOutput(b.value));
    else if (b.case === "opaque") items.push(ownOpaque(block));
    else throw new RangeError(`a user ${String(b.case)} block has no Responses API form`);
  }
  flush();
  return items;
}

function functionCallOutput(result: ToolResultBlock): string {
  const content = result.content;
  const only = content.length === 1 ? content[0]!.block : undefined;
  if (only?.case === "opaque" && only.value.provider === PROVIDER && only.value.type === "function_call_output") {
    return only.value.json;
  }
  // A result the journal wrote (an answer from a person, a denial): its text, or its parts.
  const output =
    only?.case === "text" ? JSON.stringify(only.value.text) : `[${content.map(outputPart).join(",")}]`;
  return `{"type":"function_call_output","call_id":${JSON.stringify(result.toolUseId)},"output":${output}}`;
}

function outputPart(block: ContentBlock): string {
  const { block: b } = block;
  if (b.case === "text") return JSON.stringify({ type: "input_text", text: b.value.text });
  if (b.case === "opaque" && CONTENT_PARTS.has(b.value.type)) return ownOpaque(block);
  throw new RangeError(`a tool result's ${String(b.case)} block has no function_call_output form`);
}

function ownOpaque(block: ContentBlock): string {
  if (block.block.case !== "opaque") throw new TypeError("not an opaque block");
  const { provider, type, json } = block.block.value;
  if (provider !== PROVIDER) throw new RangeError(`an opaque ${provider} ${type} block cannot go to the OpenAI API`);
  return json;
}
