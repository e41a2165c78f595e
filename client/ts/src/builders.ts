/**
 * Typed builders for content blocks and journal records.
 *
 * Record builders return drafts: records with their payload set and `seq` left
 * at 0, for a `Run` handle (or `JournalClient.append` after setting `seq`) to
 * place. The meta record is the exception: it is always seq 1.
 *
 * JSON carried as text (tool inputs, opaque blocks, note data) is serialised
 * with the project's one canonical JSON (`canonicalJson`), so the same call
 * builds the same bytes in every language and a resent record is recognised as
 * a duplicate.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { canonicalJson } from "./fingerprint.js";
import {
  CompactionTrigger,
  type ContentBlock,
  ContentBlockSchema,
  type ConversationMessage,
  ConversationMessageSchema,
  Decision,
  type Fingerprint,
  type JournalRecord,
  JournalRecordSchema,
  Role,
  StopReason,
  TerminalReason,
  type Usage,
  UsageSchema,
} from "./gen/runjournal/v1/records_pb.js";

/**
 * The journal format version this client writes in meta records. Format 2 adds the
 * `compaction` record; a server that reads only format 1 refuses such a run whole
 * (VERSION_MISMATCH) rather than fold it without its compactions.
 */
export const FORMAT_VERSION = 2;

/** A `StopReason` value, or its short name: "end_turn", "tool_use", "max_tokens", ... */
export type StopReasonLike = StopReason | "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "pause_turn" | "refusal";
/** A `TerminalReason` value, or its short name. */
export type TerminalReasonLike =
  | TerminalReason
  | "completed"
  | "suspended"
  | "error"
  | "budget"
  | "max_iterations"
  | "cancelled";
/** A `CompactionTrigger` value, or its short name. */
export type CompactionTriggerLike = CompactionTrigger | "manual" | "auto" | "provider";
/** A `Decision` value, or its short name. */
export type DecisionLike = Decision | "approved" | "denied";
/** A `Usage` message, or its fields. */
export type UsageLike = Usage | Partial<Pick<Usage, "inputTokens" | "outputTokens" | "cacheReadTokens" | "cacheWriteTokens">>;

/** An enum number from a number or a short name ("tool_use" -> StopReason.TOOL_USE). */
export function enumValue<E extends Record<string, string | number>>(enumObject: E, value: number | string): number {
  if (typeof value === "number") return value;
  const name = value.toUpperCase();
  const number = enumObject[name];
  if (typeof number !== "number" || name === "UNSPECIFIED") {
    const known = Object.keys(enumObject)
      .filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED")
      .map((k) => k.toLowerCase());
    throw new RangeError(`unknown value ${JSON.stringify(value)}; expected one of: ${known.join(", ")}`);
  }
  return number;
}

export const stopReasonValue = (value: StopReasonLike): StopReason => enumValue(StopReason, value);
export const terminalReasonValue = (value: TerminalReasonLike): TerminalReason => enumValue(TerminalReason, value);
export const decisionValue = (value: DecisionLike): Decision => enumValue(Decision, value);
export const compactionTriggerValue = (value: CompactionTriggerLike): CompactionTrigger => enumValue(CompactionTrigger, value);

// --- content blocks -----------------------------------------------------------

/** A plain text block. */
export function textBlock(text: string): ContentBlock {
  return create(ContentBlockSchema, { block: { case: "text", value: { text } } });
}

/** A thinking block with the provider's signature, kept verbatim. */
export function thinkingBlock(thinking: string, signature: string): ContentBlock {
  return create(ContentBlockSchema, { block: { case: "thinking", value: { thinking, signature } } });
}

/** A redacted thinking block; `data` is the provider's payload, kept verbatim. */
export function redactedThinkingBlock(data: string): ContentBlock {
  return create(ContentBlockSchema, { block: { case: "thinking", value: { redacted: true, data } } });
}

/** A tool call. */
export function toolUseBlock(
  id: string,
  name: string,
  input: Record<string, unknown> | string,
  providerJson = "",
): ContentBlock {
  // A string input is the provider's text of the input, kept as written; an object is written as canonical JSON.
  // providerJson: the provider's own call block or item, verbatim, when it holds more than id, name and input.
  if (typeof input !== "string" && (input === null || typeof input !== "object" || Array.isArray(input))) {
    throw new TypeError("tool input must be a JSON object or its JSON text");
  }
  const inputJson = typeof input === "string" ? input : canonicalJson(input);
  return create(ContentBlockSchema, {
    block: { case: "toolUse", value: { id, name, inputJson, providerJson } },
  });
}

/** A provider-specific block (image, citation, ...) kept verbatim as JSON text: `value` written as canonical
 * JSON, or `options.jsonText`, the provider's own text, kept byte for byte. */
export function opaqueBlock(
  provider: string,
  type: string,
  value: unknown,
  options: { jsonText?: string } = {},
): ContentBlock {
  const json = options.jsonText ?? canonicalJson(value);
  return create(ContentBlockSchema, { block: { case: "opaque", value: { provider, type, json } } });
}

/** Content given either as blocks or as one text. */
export type ContentLike = string | readonly ContentBlock[];

export function contentOf(content: ContentLike): ContentBlock[] {
  return typeof content === "string" ? [textBlock(content)] : [...content];
}

function usageOf(usage: UsageLike | undefined): Usage {
  if (usage === undefined) return create(UsageSchema);
  if ("$typeName" in usage) return usage;
  return create(UsageSchema, usage);
}

// --- records ------------------------------------------------------------------

export interface MetaOptions {
  labels?: Record<string, string>;
  interactive?: boolean;
  taskId?: string;
  /** Defaults to now; pass the same value to make a repeated create a verified duplicate. */
  createdAt?: Date;
}

/** The meta record that creates a run, at seq 1. */
export function metaRecord(
  runId: string,
  fingerprint: Fingerprint,
  prompt: ContentLike,
  options: MetaOptions = {},
): JournalRecord {
  return create(JournalRecordSchema, {
    seq: 1n,
    payload: {
      case: "meta",
      value: {
        formatVersion: FORMAT_VERSION,
        runId,
        createdAt: timestampFromDate(options.createdAt ?? new Date()),
        fingerprint,
        prompt: contentOf(prompt),
        interactive: options.interactive ?? false,
        labels: { ...(options.labels ?? {}) },
        taskId: options.taskId ?? "",
      },
    },
  });
}

/** A draft `assistant` record: one model call. */
export function assistantRecord(
  iteration: number,
  content: readonly ContentBlock[],
  stopReason: StopReasonLike,
  usage?: UsageLike,
): JournalRecord {
  return create(JournalRecordSchema, {
    payload: {
      case: "assistant",
      value: { iteration, content: [...content], stopReason: stopReasonValue(stopReason), usage: usageOf(usage) },
    },
  });
}

export interface ToolResultOptions {
  isError?: boolean;
  remote?: boolean;
}

/** A draft `tool_result` record; the result as text or content blocks. */
export function toolResultRecord(toolUseId: string, content: ContentLike, options: ToolResultOptions = {}): JournalRecord {
  return create(JournalRecordSchema, {
    payload: {
      case: "toolResult",
      value: {
        toolUseId,
        content: contentOf(content),
        isError: options.isError ?? false,
        remote: options.remote ?? false,
      },
    },
  });
}

/**
 * A draft `deferral` record: the call awaits an out-of-band answer. Never optional.
 * With `needsApproval` it awaits an operator's decision instead.
 */
export function deferralRecord(
  toolUseId: string,
  reason: string,
  expectedAnswerer: string,
  options: { needsApproval?: boolean } = {},
): JournalRecord {
  return create(JournalRecordSchema, {
    payload: {
      case: "deferral",
      value: { toolUseId, reason, expectedAnswerer, needsApproval: options.needsApproval ?? false },
    },
  });
}

/** A draft `user` record: a free-standing follow-up message. */
export function userRecord(content: ContentLike): JournalRecord {
  return create(JournalRecordSchema, { payload: { case: "user", value: { content: contentOf(content) } } });
}

/** A draft `terminal` record: why the run stopped. */
export function terminalRecord(reason: TerminalReasonLike, message = ""): JournalRecord {
  return create(JournalRecordSchema, {
    payload: { case: "terminal", value: { reason: terminalReasonValue(reason), message } },
  });
}

/** A draft `note` record (always optional); `data`, if given, is stored as canonical JSON text. */
export function noteRecord(text: string, data?: unknown): JournalRecord {
  return create(JournalRecordSchema, {
    optional: true,
    payload: { case: "note", value: { text, dataJson: data === undefined ? "" : canonicalJson(data) } },
  });
}

/** A draft `approval` record: an operator's decision on a call of the open turn. */
export function approvalRecord(toolUseId: string, decision: DecisionLike, approver: string, reason = ""): JournalRecord {
  return create(JournalRecordSchema, {
    payload: { case: "approval", value: { toolUseId, decision: decisionValue(decision), approver, reason } },
  });
}

/** A draft `reconfigure` record (only where the gate allows it without force). */
export function reconfigureRecord(fingerprint: Fingerprint, changedFields: readonly string[]): JournalRecord {
  return create(JournalRecordSchema, {
    payload: { case: "reconfigure", value: { fingerprint, changedFields: [...changedFields] } },
  });
}

/**
 * A compaction's summary: a text or content blocks (one user message; e.g. the
 * provider's compaction block as an `opaqueBlock`), or whole messages, to give the
 * role (Anthropic's compaction block is in an assistant message).
 */
export type SummaryLike = string | readonly ContentBlock[] | readonly ConversationMessage[];

export interface CompactionOptions {
  /** The provider whose model wrote the summary, e.g. "anthropic"; empty for one written by hand. */
  provider?: string;
  model?: string;
  /** The conversation's size in tokens before the compaction; 0 when unknown. */
  tokensBefore?: number;
  /** Token usage of the call that wrote the summary (recorded only, not counted). */
  usage?: UsageLike;
}

function summaryOf(summary: SummaryLike): ConversationMessage[] {
  if (typeof summary === "string") return [create(ConversationMessageSchema, { role: Role.USER, content: [textBlock(summary)] })];
  const items: readonly (ContentBlock | ConversationMessage)[] = summary;
  if (items.every((item) => item.$typeName === ConversationMessageSchema.typeName)) return [...(items as readonly ConversationMessage[])];
  return [create(ConversationMessageSchema, { role: Role.USER, content: [...(items as readonly ContentBlock[])] })];
}

/** A seq as the int32 a payload holds it in; a RangeError rather than a truncated value. */
function int32Seq(seq: number | bigint): number {
  const value = Number(seq);
  if (!Number.isSafeInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
    throw new RangeError(`compaction upto_seq ${seq} does not fit the record's int32 (at most ${2 ** 31 - 1})`);
  }
  return value;
}

/**
 * A draft `compaction` record: from now on the model is sent `summary` instead of the
 * messages of records 1..`uptoSeq`. Nothing is removed (`fold` with `uncompacted`
 * still returns every message). The server refuses it (`InvalidRecordError`) when the
 * point would separate a call from its result, or on a run of journal format 1.
 */
export function compactionRecord(
  uptoSeq: number | bigint,
  summary: SummaryLike,
  trigger: CompactionTriggerLike,
  options: CompactionOptions = {},
): JournalRecord {
  return create(JournalRecordSchema, {
    payload: {
      case: "compaction",
      value: {
        uptoSeq: int32Seq(uptoSeq),
        summary: summaryOf(summary),
        provider: options.provider ?? "",
        model: options.model ?? "",
        trigger: compactionTriggerValue(trigger),
        tokensBefore: options.tokensBefore ?? 0,
        usage: usageOf(options.usage),
      },
    },
  });
}
