/**
 * An OpenAI Agents SDK `Session` kept on a runjournal server:
 * `import { RunJournalSession } from "@runjournal/client/adapters/openai-agents"`.
 *
 * The same design as the Python adapter (`runjournal.adapters.openai_agents`), record for record,
 * so either reads what the other wrote:
 *
 * - a session is one run, `<namespace>_s<session id escaped>` (every character outside
 *   `[A-Za-z0-9-]` as `_` and two hex digits per UTF-8 byte), `<namespace>_h<sha256 hex>` when that
 *   is longer than 128; the session id itself is kept in the run's labels;
 * - an item is a `user` record holding one `opaque` block (provider `openai-agents`, type the item's
 *   `type`, JSON the item), shown by `runjournal runs show`; every add ends with a `note` naming the
 *   write (a fresh id), so two writers adding equal items at one seq never pass for a retry;
 * - `popItem` is a note naming the seq of the item it removes, `clearSession` a note removing every
 *   item before it: the journal keeps what the session drops.
 *
 * Writers take no lock: a write is one AppendBatch at the seq after the last one read; when another
 * writer got there first (SEQ_CONFLICT, RUN_EXISTS) the session reads what was written and decides
 * again. Within one session object, operations take turns, in call order.
 *
 * Only the SDK's types are imported: nothing of the SDK is loaded at run time.
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { AgentInputItem, Session } from "@openai/agents";
import { metaRecord, noteRecord, opaqueBlock, textBlock, userRecord } from "../builders.js";
import { checkNamespace, runIdOf } from "./run-ids.js";
import type { JournalClient } from "../client.js";
import { RunExistsError, RunNotFoundError, SeqConflictError } from "../errors.js";
import { FingerprintSchema, type JournalRecord, type UserFollowUp, type Note, type Meta } from "../gen/runjournal/v1/records_pb.js";

export const PROVIDER = "openai-agents";
/** The key of a note's data that makes it one of this adapter's history records. */
export const OP_KEY = "openai_agents_session";
export const LABEL_NAMESPACE = "openai-agents/namespace";
export const LABEL_SESSION = "openai-agents/session";
export const DEFAULT_NAMESPACE = "agents";
/** Items per AppendBatch (with the note that closes it, 500; the server takes 1000 records). */
export const MAX_BATCH_ITEMS = 499;
/** Bytes of items per AppendBatch, under the server's default 4 MiB batch limit. */
export const MAX_BATCH_BYTES = 3 * 1024 * 1024;

const MAX_SESSION_ID_CHARS = 256;
const MAX_TYPE_CHARS = 128;
/** Every write carries the creator's claim token: a session's run is never claimed, so the seq alone decides. */
const CREATOR_TOKEN = 1n;

/** The session's run holds records this adapter cannot fold (written by something else). */
export class SessionJournalError extends Error {
  override name = "SessionJournalError";
}

// --- where a session lives ------------------------------------------------------

export function checkSessionId(sessionId: string): string {
  if (typeof sessionId !== "string") throw new TypeError(`a session id must be a string, got ${typeof sessionId}`);
  if (!sessionId.isWellFormed()) throw new RangeError("the session id is not valid Unicode (a lone surrogate)");
  const chars = [...sessionId].length; // code points, as the server counts a label value
  if (chars > MAX_SESSION_ID_CHARS) {
    throw new RangeError(`a session id has at most ${MAX_SESSION_ID_CHARS} characters (the run's labels keep it), got ${chars}`);
  }
  return sessionId;
}

/** The run id of `sessionId` under `namespace`: `<namespace>_s<session id escaped>` (see run-ids.ts). */
export function sessionRunId(namespace: string, sessionId: string): string {
  return runIdOf(namespace, [["s", sessionId]]);
}

// --- items ------------------------------------------------------------------------

interface EncodedItem {
  type: string;
  text: string;
}

interface StoredItem extends EncodedItem {
  seq: bigint;
}

/** The items as JSON text, in order; a RangeError (before anything is written) for one JSON would change. */
export function encodeItems(items: readonly unknown[]): EncodedItem[] {
  return items.map((item, index) => {
    const path = `items[${index}]`;
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      throw new RangeError(`${path} must be an object (an input item), got ${Array.isArray(item) ? "an array" : typeof item}`);
    }
    const problem = jsonProblem(item, path);
    if (problem !== undefined) throw new RangeError(`${path} is not JSON that comes back equal: ${problem}`);
    return { type: typeOf(item as Record<string, unknown>), text: JSON.stringify(item) };
  });
}

/** Where `value` holds something JSON would change or drop (an object's undefined property is dropped, as JSON does). */
function jsonProblem(value: unknown, path: string): string | undefined {
  if (value === null || typeof value === "boolean") return undefined;
  if (typeof value === "string") return value.isWellFormed() ? undefined : `${path} is a string with a lone surrogate`;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return `${path} is ${value}`;
    return Object.is(value, -0) ? `${path} is -0 (JSON writes 0)` : undefined;
  }
  if (typeof value !== "object") return `${path} is a ${typeof value}`;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      if (!(index in value) || value[index] === undefined) return `${path}[${index}] is empty (JSON writes null)`;
      const problem = jsonProblem(value[index], `${path}[${index}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    return `${path} is a ${value.constructor?.name ?? "non-plain object"} (binary data: give it as a base64 string)`;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (inner === undefined) continue;
    const problem = jsonProblem(inner, `${path}.${key}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The label of an item's opaque block: its `type`; an easy input message (no type) is a `message`. */
function typeOf(item: Record<string, unknown>): string {
  const kind = item["type"];
  if (typeof kind === "string" && kind.length >= 1 && [...kind].length <= MAX_TYPE_CHARS) return kind;
  return "role" in item ? "message" : "item";
}

// --- records ----------------------------------------------------------------------

function creationRecord(runId: string, labels: Record<string, string>): JournalRecord {
  const fingerprint = create(FingerprintSchema, { provider: PROVIDER, model: "session" });
  return metaRecord(runId, fingerprint, [textBlock(`OpenAI Agents SDK session ${labels[LABEL_SESSION]}`)], { labels });
}

function itemRecord(item: EncodedItem): JournalRecord {
  return userRecord([opaqueBlock(PROVIDER, item.type, undefined, { jsonText: item.text })]);
}

function addedNote(write: string, firstSeq: bigint, count: number): JournalRecord {
  const where = count === 1 ? `seq ${firstSeq}` : `seqs ${firstSeq}..${firstSeq + BigInt(count - 1)}`;
  return noteRecord(`openai-agents session: added ${count} item${count !== 1 ? "s" : ""} at ${where}`, {
    [OP_KEY]: { op: "add", write, items: count },
  });
}

function poppedNote(write: string, item: StoredItem): JournalRecord {
  return noteRecord(`openai-agents session: popped the ${item.type} at seq ${item.seq} (it stays in the journal)`, {
    [OP_KEY]: { op: "pop", write, seq: Number(item.seq) },
  });
}

function clearedNote(write: string, count: number): JournalRecord {
  return noteRecord(`openai-agents session: cleared ${count} item${count !== 1 ? "s" : ""} (they stay in the journal)`, {
    [OP_KEY]: { op: "clear", write },
  });
}

// --- what a session has read of its run ---------------------------------------------

class SessionJournal {
  lastSeq = 0n;
  live: StoredItem[] = [];

  constructor(
    readonly runId: string,
    readonly labels: Record<string, string>,
  ) {}

  /** Takes in the record stored at `seq` (the one after `lastSeq`). */
  apply(seq: bigint, record: JournalRecord): void {
    const payload = record.payload;
    if (payload.case === "meta") this.checkMeta(payload.value);
    else if (payload.case === "user") {
      const item = itemOf(seq, payload.value);
      if (item !== undefined) this.live.push(item);
    } else if (payload.case === "note") this.applyOp(seq, opOf(payload.value));
    this.lastSeq = seq;
  }

  items(limit: number | undefined): AgentInputItem[] {
    const chosen = limit === undefined ? this.live : limit <= 0 ? [] : this.live.slice(-limit);
    return chosen.map((item) => JSON.parse(item.text) as AgentInputItem);
  }

  /** The drafts at the seqs after `lastSeq`, after the run's meta when it has none yet. */
  place(drafts: JournalRecord[]): JournalRecord[] {
    const records = this.lastSeq ? drafts : [creationRecord(this.runId, this.labels), ...drafts];
    records.forEach((record, index) => {
      record.seq = this.lastSeq + BigInt(index + 1);
    });
    return records;
  }

  private checkMeta(meta: Meta): void {
    if (Object.entries(this.labels).some(([key, value]) => meta.labels[key] !== value)) {
      throw new SessionJournalError(
        `run ${this.runId} exists and is not this session's (its labels are ${JSON.stringify(meta.labels)}); nothing was written`,
      );
    }
  }

  private applyOp(seq: bigint, op: Record<string, unknown> | undefined): void {
    if (op === undefined || op["op"] === "add") return;
    const latest = this.live.at(-1);
    if (op["op"] === "clear") this.live = [];
    else if (op["op"] === "pop" && latest !== undefined && op["seq"] === Number(latest.seq)) this.live.pop();
    else {
      // A pop is written only after reading the item it names as the latest; anything else was not written
      // by this adapter, and guessing would show the SDK a history nobody wrote.
      throw new SessionJournalError(`run ${this.runId}: the note at seq ${seq} does not apply (${JSON.stringify(op)})`);
    }
  }
}

function itemOf(seq: bigint, user: UserFollowUp): StoredItem | undefined {
  const block = user.content.length === 1 ? user.content[0]!.block : undefined;
  if (block?.case !== "opaque" || block.value.provider !== PROVIDER) return undefined;
  return { seq, type: block.value.type, text: block.value.json };
}

function opOf(note: Note): Record<string, unknown> | undefined {
  if (!note.dataJson) return undefined;
  const data: unknown = JSON.parse(note.dataJson);
  const op = data !== null && typeof data === "object" ? (data as Record<string, unknown>)[OP_KEY] : undefined;
  return op !== null && typeof op === "object" && !Array.isArray(op) ? (op as Record<string, unknown>) : undefined;
}

// --- the session --------------------------------------------------------------------

export interface RunJournalSessionOptions {
  /** Begins the run id (so a token's run-id prefixes can fence it) and is a label of the run. */
  namespace?: string;
}

type Plan<T> = (journal: SessionJournal, write: string) => { drafts: JournalRecord[]; result: T } | undefined;

/** The SDK's `Session` on one runjournal run, through a `JournalClient` the caller owns. */
export class RunJournalSession implements Session {
  readonly sessionId: string;
  private readonly journal: SessionJournal;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    sessionId: string,
    private readonly client: JournalClient,
    options: RunJournalSessionOptions = {},
  ) {
    this.sessionId = checkSessionId(sessionId);
    const namespace = checkNamespace(options.namespace ?? DEFAULT_NAMESPACE);
    this.journal = new SessionJournal(sessionRunId(namespace, sessionId), {
      [LABEL_NAMESPACE]: namespace,
      [LABEL_SESSION]: sessionId,
    });
  }

  /** The run that holds the session, for `runjournal runs show` and `client.read`. */
  get runId(): string {
    return this.journal.runId;
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /** The items in order: all, or the latest `limit`; 0 or less: none. */
  getItems(limit?: number): Promise<AgentInputItem[]> {
    return this.turn(async () => {
      await this.catchUp();
      return this.journal.items(limit);
    });
  }

  /** Appends `items`; one JSON would not give back equal is refused before anything is written. More than one
   * batch's worth is written in several batches, each whole; another writer's items may land between them. */
  addItems(items: AgentInputItem[]): Promise<void> {
    return this.turn(async () => {
      for (const chunk of chunks(encodeItems(items))) {
        await this.write((journal, write) => {
          const firstSeq = journal.lastSeq + (journal.lastSeq ? 1n : 2n); // after the meta on a new run
          return { drafts: [...chunk.map(itemRecord), addedNote(write, firstSeq, chunk.length)], result: undefined };
        });
      }
    });
  }

  /** Removes the latest item from the session (not from the journal) and returns it; undefined when there is none. */
  popItem(): Promise<AgentInputItem | undefined> {
    return this.turn(async () => {
      const popped = await this.write((journal, write) => {
        const latest = journal.live.at(-1);
        return latest === undefined ? undefined : { drafts: [poppedNote(write, latest)], result: latest };
      });
      return popped === undefined ? undefined : (JSON.parse(popped.text) as AgentInputItem);
    });
  }

  /** Removes every item from the session (not from the journal); the session id stays usable. */
  clearSession(): Promise<void> {
    return this.turn(async () => {
      await this.write((journal, write) =>
        journal.live.length ? { drafts: [clearedNote(write, journal.live.length)], result: undefined } : undefined,
      );
    });
  }

  // --- plumbing -----------------------------------------------------------------

  /** Runs `operation` after every earlier one of this object has settled. */
  private turn<T>(operation: () => Promise<T>): Promise<T> {
    const next = this.queue.then(operation, operation);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Writes what `plan` asks for at the seq after the last one read; on a lost race, reads and plans again. */
  private async write<T>(plan: Plan<T>): Promise<T | undefined> {
    for (;;) {
      await this.catchUp();
      const planned = plan(this.journal, randomUUID().replaceAll("-", ""));
      if (planned === undefined) return undefined;
      const records = this.journal.place(planned.drafts);
      try {
        await this.client.appendBatch(this.runId, CREATOR_TOKEN, records);
      } catch (err) {
        if (err instanceof SeqConflictError || err instanceof RunExistsError) continue; // read what the other wrote
        throw err;
      }
      for (const record of records) this.journal.apply(record.seq, record);
      return planned.result;
    }
  }

  /** Reads the records after the last one read (a run that does not exist yet holds nothing). */
  private async catchUp(): Promise<void> {
    try {
      for await (const { seq, record } of this.client.read(this.runId, { fromSeq: this.journal.lastSeq + 1n })) {
        this.journal.apply(seq, record);
      }
    } catch (err) {
      if (!(err instanceof RunNotFoundError) || this.journal.lastSeq) throw err;
    }
  }
}

/** `items` in batches of at most `MAX_BATCH_ITEMS` items and (but for a single item) `MAX_BATCH_BYTES`. */
function chunks(items: EncodedItem[]): EncodedItem[][] {
  const out: EncodedItem[][] = [];
  let size = 0;
  for (const item of items) {
    const bytes = Buffer.byteLength(item.text, "utf8");
    if (!out.length || out.at(-1)!.length >= MAX_BATCH_ITEMS || size + bytes > MAX_BATCH_BYTES) {
      out.push([]);
      size = 0;
    }
    out.at(-1)!.push(item);
    size += bytes;
  }
  return out;
}
