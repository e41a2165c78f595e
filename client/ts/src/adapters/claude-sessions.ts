/**
 * Where a Claude Agent SDK session key lives in runjournal, and how its entries are stored: pure, no I/O.
 * The same rules as the Python adapter (runjournal/adapters/_claude_sessions.py), so both reach the same run
 * and read each other's entries.
 *
 * A key (project key, session id, optional subpath) is one run. Its run id is
 * `<namespace>_p<project>_s<session>[_k<subpath>]` with each part escaped: `[A-Za-z0-9-]` stay as they are,
 * every other character becomes `_` and two lower-case hex digits per UTF-8 byte. `_` then only starts an
 * escape (`_` + hex) or a separator (`_p`, `_s`, `_k`, `_h`: letters that are not hex digits), so the mapping
 * is injective and readable. When that id would be longer than the 128 characters a run id may have, the run
 * id is `<namespace>_h<sha256 of the long id, hex>`. The key itself is kept verbatim in the run's labels, which
 * ListRuns filters on and returns, so listing never decodes an id.
 *
 * Each entry is one `user` record holding one `opaque` block (provider `claude-agent-sdk`, type the entry's
 * `type`, JSON the entry's text): `user` so that the fold makes it part of the conversation `runjournal runs
 * show` prints (a `note` is inert and never shown); `opaque` because its JSON text is stored verbatim and
 * validated as JSON by the server, and no model adapter takes it for words of a user. A main transcript's
 * every write ends with a `note` holding the SDK's session summary, so listing summaries reads one record per
 * session.
 */
import { create } from "@bufbuild/protobuf";
import { foldSessionSummary, type SessionKey, type SessionStoreEntry } from "@anthropic-ai/claude-agent-sdk";
import { metaRecord, noteRecord, textBlock, userRecord } from "../builders.js";
import { runIdOf } from "./run-ids.js";
import {
  type ContentBlock,
  ContentBlockSchema,
  FingerprintSchema,
  type JournalRecord,
  type Meta,
} from "../gen/runjournal/v1/records_pb.js";

/** The provider of the entries' opaque blocks and of the runs' fingerprint. */
export const PROVIDER = "claude-agent-sdk";
/** Whose summary a summary note holds: each SDK folds its own shape (`isSidechain` here, `is_sidechain` in Python). */
export const LANGUAGE = "typescript";
export const SUMMARY_TEXT = "claude-agent-sdk session summary";

export const LABEL_NAMESPACE = "claude-agent-sdk/namespace";
export const LABEL_PROJECT = "claude-agent-sdk/project";
export const LABEL_SESSION = "claude-agent-sdk/session";
export const LABEL_SUBPATH = "claude-agent-sdk/subpath";
export const LABEL_TRANSCRIPT = "claude-agent-sdk/transcript";
export const MAIN = "main";
export const SUBAGENT = "subagent";

/** Counted in code points, as the server counts. */
export const MAX_LABEL_VALUE_CHARS = 256;
const MAX_OPAQUE_TYPE_CHARS = 128;

/** A session key's run: its id and the labels that name the key. */
export interface Place {
  runId: string;
  projectKey: string;
  sessionId: string;
  subpath: string | undefined;
  labels: Record<string, string>;
}

/** The run of `key`, or a RangeError/TypeError for a key that names none (nothing is written for it). */
export function placeOf(namespace: string, key: SessionKey): Place {
  const projectKey = part(key.projectKey, "projectKey");
  const sessionId = part(key.sessionId, "sessionId");
  const subpath = key.subpath === undefined || key.subpath === null ? undefined : part(key.subpath, "subpath");
  if (subpath === "") throw new RangeError("subpath must not be empty: omit it for the main transcript");
  const parts: [string, string][] = [["p", projectKey], ["s", sessionId]];
  if (subpath !== undefined) parts.push(["k", subpath]);
  const runId = runIdOf(namespace, parts);
  return { runId, projectKey, sessionId, subpath, labels: runLabels(namespace, projectKey, sessionId, subpath) };
}

/** The labels of a key's run: the key verbatim, and whether it is a main or a subagent transcript. */
export function runLabels(namespace: string, projectKey: string, sessionId: string, subpath: string | undefined): Record<string, string> {
  const labels = labelFilter(namespace, projectKey, sessionId, subpath === undefined ? MAIN : SUBAGENT);
  if (subpath !== undefined) labels[LABEL_SUBPATH] = subpath;
  return labels;
}

/** The ListRuns filter of the runs with these parts of a key (the server filters). */
export function labelFilter(namespace: string, projectKey: string, sessionId?: string, transcript?: string): Record<string, string> {
  const labels: Record<string, string> = { [LABEL_NAMESPACE]: namespace, [LABEL_PROJECT]: projectKey };
  if (sessionId !== undefined) labels[LABEL_SESSION] = sessionId;
  if (transcript !== undefined) labels[LABEL_TRANSCRIPT] = transcript;
  return labels;
}

/** `projectKey` unchanged, or an error for one no key can have (nothing could be listed under it). */
export function checkProjectKey(projectKey: string): string {
  return part(projectKey, "projectKey");
}

function part(value: unknown, name: string): string {
  if (typeof value !== "string") throw new TypeError(`the session key's ${name} must be a string, got ${typeof value}`);
  const chars = [...value].length;
  if (chars > MAX_LABEL_VALUE_CHARS) {
    throw new RangeError(
      `the session key's ${name} has ${chars} characters; at most ${MAX_LABEL_VALUE_CHARS} fit in the run's labels, ` +
        "which keep the key for listing",
    );
  }
  if (!value.isWellFormed()) throw new RangeError(`the session key's ${name} is not valid Unicode (a lone surrogate)`);
  return value;
}

// --- records ------------------------------------------------------------------

/** One entry, ready to store: its JSON text, its idempotency key and its type. */
export interface Entry {
  text: string;
  uuid: string | undefined;
  type: string;
}

/** The entries as JSON text, in order; an error (before anything is written) for one that is not JSON. */
export function prepare(entries: readonly SessionStoreEntry[]): Entry[] {
  return entries.map((entry, index) => {
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      throw new TypeError(`entries[${index}] must be a JSON object`);
    }
    // Key order is kept (no sort): what load returns reads as what was appended.
    const text = JSON.stringify(entry, (_key, value: unknown) => {
      if (typeof value === "number" && !Number.isFinite(value)) {
        throw new RangeError(`entries[${index}] is not JSON-safe: ${value} is not a JSON number`);
      }
      return value;
    });
    const uuid = entry["uuid"];
    const kind = entry["type"];
    const shown = typeof kind === "string" && kind.length > 0 && [...kind].length <= MAX_OPAQUE_TYPE_CHARS ? kind : "entry";
    return { text, uuid: typeof uuid === "string" ? uuid : undefined, type: shown };
  });
}

export function entryRecord(entry: Entry): JournalRecord {
  const block: ContentBlock = create(ContentBlockSchema, {
    block: { case: "opaque", value: { provider: PROVIDER, type: entry.type, json: entry.text } },
  });
  return userRecord([block]);
}

/** The entry a record holds, or undefined for any other record (meta, summary, anything a person added). */
export function entryOf(record: JournalRecord): SessionStoreEntry | undefined {
  if (record.payload.case !== "user" || record.payload.value.content.length !== 1) return undefined;
  const block = record.payload.value.content[0]!.block;
  if (block.case !== "opaque" || block.value.provider !== PROVIDER) return undefined;
  const value: unknown = JSON.parse(block.value.json);
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as SessionStoreEntry) : undefined;
}

export function summaryRecord(data: Record<string, unknown>): JournalRecord {
  return noteRecord(SUMMARY_TEXT, { language: LANGUAGE, data });
}

/** The summary `data` a note of this language holds, or undefined. */
export function summaryOf(record: JournalRecord): Record<string, unknown> | undefined {
  if (record.payload.case !== "note" || record.payload.value.text !== SUMMARY_TEXT) return undefined;
  const value: unknown = JSON.parse(record.payload.value.dataJson || "null");
  if (value === null || typeof value !== "object") return undefined;
  const { language, data } = value as { language?: unknown; data?: unknown };
  if (language !== LANGUAGE || data === null || typeof data !== "object" || Array.isArray(data)) return undefined;
  return data as Record<string, unknown>;
}

/** The meta of a key's run: the key in its labels and, for people, in its prompt. */
export function creationRecord(place: Place): JournalRecord {
  const where = place.subpath !== undefined ? ` (${place.subpath})` : "";
  const prompt = `Claude Agent SDK transcript: project ${place.projectKey}, session ${place.sessionId}${where}`;
  const fingerprint = create(FingerprintSchema, { provider: PROVIDER, model: "session-store" });
  return metaRecord(place.runId, fingerprint, [textBlock(prompt)], { labels: place.labels });
}

/** The SDK's own fold of `entries` onto `data`; the store never reads what is inside. */
export function foldSummary(
  sessionId: string,
  data: Record<string, unknown> | undefined,
  entries: SessionStoreEntry[],
): Record<string, unknown> {
  const prev = data === undefined ? undefined : { sessionId, mtime: 0, data };
  return foldSessionSummary(prev, { projectKey: "", sessionId }, entries).data;
}

/** A protobuf Timestamp in Unix epoch milliseconds. */
export function epochMs(stamp: { seconds: bigint; nanos: number } | undefined): number {
  return stamp === undefined ? 0 : Number(stamp.seconds) * 1000 + Math.floor(stamp.nanos / 1_000_000);
}

// --- what a writer knows of a run ---------------------------------------------

/** What a writer has read of one run: the last seq, the uuids stored, and (main) the folded summary. */
export class Transcript {
  lastSeq = 0n;
  uuids = new Set<string>();
  summary: Record<string, unknown> | undefined = undefined;

  constructor(readonly place: Place) {}

  /** Takes in the record stored at `seq` (the one after `lastSeq`). */
  apply(seq: bigint, record: JournalRecord): void {
    if (record.payload.case === "meta") this.checkMeta(record.payload.value);
    const entry = entryOf(record);
    if (entry !== undefined) {
      if (typeof entry.uuid === "string") this.uuids.add(entry.uuid);
      if (this.place.subpath === undefined) this.summary = foldSummary(this.place.sessionId, this.summary, [entry]);
    }
    this.lastSeq = seq;
  }

  /** Back to knowing nothing of the run, to read it again from its first record. */
  forget(): void {
    this.lastSeq = 0n;
    this.uuids = new Set();
    this.summary = undefined;
  }

  /** The entries not stored yet: no uuid stored or earlier in the list (entries without a uuid always). */
  fresh(entries: readonly Entry[]): Entry[] {
    const seen = new Set<string>();
    return entries.filter((entry) => {
      if (entry.uuid === undefined) return true;
      if (this.uuids.has(entry.uuid) || seen.has(entry.uuid)) return false;
      seen.add(entry.uuid);
      return true;
    });
  }

  /** The records that store `entries` next: the meta first for a new run, the summary last on a main one. */
  batch(entries: readonly Entry[]): JournalRecord[] {
    const records = this.lastSeq ? [] : [creationRecord(this.place)];
    records.push(...entries.map(entryRecord));
    if (this.place.subpath === undefined) {
      const parsed = entries.map((entry) => JSON.parse(entry.text) as SessionStoreEntry);
      records.push(summaryRecord(foldSummary(this.place.sessionId, this.summary, parsed)));
    }
    records.forEach((record, offset) => {
      record.seq = this.lastSeq + 1n + BigInt(offset);
    });
    return records;
  }

  private checkMeta(meta: Meta): void {
    if (Object.entries(this.place.labels).some(([name, value]) => meta.labels[name] !== value)) {
      throw new Error(
        `run ${this.place.runId} exists and is not this store's transcript of the key ` +
          `(its labels are ${JSON.stringify(meta.labels)}); nothing was written`,
      );
    }
  }
}

/** Re-exported so callers need not name the SDK for the key type. */
export type { SessionKey };
