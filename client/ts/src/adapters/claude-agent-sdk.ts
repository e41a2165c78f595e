/**
 * A Claude Agent SDK `SessionStore` kept on a runjournal server
 * (`import { RunJournalSessionStore } from "@runjournal/client/adapters/claude-agent-sdk"`; needs the optional
 * peer dependency `@anthropic-ai/claude-agent-sdk`).
 *
 *     const client = new JournalClient({ address: "localhost:50051" });
 *     const sessionStore = new RunJournalSessionStore(client);
 *     for await (const message of query({ prompt: "...", options: { sessionStore } })) { ... }
 *
 * Each session key is one run (`claude-sessions.ts` maps keys to run ids and labels, and entries to records;
 * the Python adapter maps them the same way). Writers never take a lock on the server: a write is one
 * AppendBatch at the seq after the last one this store read, and the journal's own sequence check refuses it
 * when another writer got there first (SEQ_CONFLICT, RUN_EXISTS); the store then reads what was added, drops
 * the entries whose `uuid` is stored now and writes the rest after it. So concurrent appenders through any
 * number of stores lose nothing and double nothing, and the SDK's retried batches add nothing. Within one
 * store, the appends of one key take turns (a promise chain per key), so they are stored in call order.
 */
import type { SessionKey, SessionStore, SessionStoreEntry, SessionSummaryEntry } from "@anthropic-ai/claude-agent-sdk";
import type { JournalClient } from "../client.js";
import {
  LastSeqMismatchError,
  RunDeletedError,
  RunExistsError,
  RunNotFoundError,
  SeqConflictError,
  SeqGapError,
} from "../errors.js";
import type { RunSummary } from "../gen/runjournal/v1/state_pb.js";
import { checkNamespace } from "./run-ids.js";
import {
  checkProjectKey,
  type Entry,
  entryOf,
  epochMs,
  foldSummary,
  LABEL_SESSION,
  LABEL_SUBPATH,
  labelFilter,
  MAIN,
  placeOf,
  prepare,
  SUBAGENT,
  summaryOf,
  Transcript,
} from "./claude-sessions.js";

export { escape } from "./run-ids.js";
export { placeOf, LABEL_NAMESPACE, LABEL_PROJECT, LABEL_SESSION, LABEL_SUBPATH, LABEL_TRANSCRIPT } from "./claude-sessions.js";

export const DEFAULT_NAMESPACE = "claude";
/** Every write carries the creator's claim token: session runs are never claimed, so the seq alone decides. */
const CREATOR_TOKEN = 1n;
/** Entries per AppendBatch (the server takes 1000 records); a larger append is written in several. */
export const MAX_BATCH_RECORDS = 500;
/** Bytes of entries per AppendBatch, under the server's default 4 MiB batch limit. */
export const MAX_BATCH_BYTES = 3 * 1024 * 1024;
/** Runs whose last seq and uuids a store remembers; a forgotten one is read again on its next append. */
export const CACHED_TRANSCRIPTS = 256;
/** Sessions whose summaries `listSessionSummaries` reads at once. */
const SUMMARY_READS = 16;

export interface SessionStoreOptions {
  /** Begins every run id (so a token's run-id prefixes can fence it) and labels every run. Default "claude". */
  namespace?: string;
  cachedTranscripts?: number;
}

/**
 * The SDK's `SessionStore` on a runjournal server, through a `JournalClient` the caller owns. Stores with
 * different namespaces never see each other's sessions.
 */
export class RunJournalSessionStore implements SessionStore {
  readonly namespace: string;
  private readonly cached: number;
  private readonly transcripts = new Map<string, Transcript>();
  private readonly turns = new Map<string, Promise<void>>();

  constructor(
    private readonly client: JournalClient,
    options: SessionStoreOptions = {},
  ) {
    this.namespace = checkNamespace(options.namespace ?? DEFAULT_NAMESPACE);
    this.cached = Math.max(options.cachedTranscripts ?? CACHED_TRANSCRIPTS, 0);
  }

  /** The id of the run that holds `key`'s transcript (`runjournal runs show <id>`). */
  runId(key: SessionKey): string {
    return placeOf(this.namespace, key).runId;
  }

  // --- required -------------------------------------------------------------

  /** Stores the entries whose `uuid` is not stored yet (and every entry without one), in order. */
  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    const place = placeOf(this.namespace, key);
    const prepared = prepare(entries);
    if (prepared.length === 0) return;
    await this.inTurn(place.runId, async () => {
      // Taken out while writing: a failed write leaves no half-known state behind.
      let transcript = this.transcripts.get(place.runId);
      this.transcripts.delete(place.runId);
      if (transcript === undefined) {
        transcript = new Transcript(place);
        await this.catchUp(transcript);
      }
      for (const chunk of chunks(prepared)) await this.write(transcript, chunk);
      this.remember(transcript);
    });
  }

  /** Every entry of the key, in stored order; null when it was never written (or was deleted). */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const place = placeOf(this.namespace, key);
    const entries: SessionStoreEntry[] = [];
    try {
      for await (const item of this.client.read(place.runId)) {
        const entry = entryOf(item.record);
        if (entry !== undefined) entries.push(entry);
      }
    } catch (err) {
      if (err instanceof RunNotFoundError || err instanceof RunDeletedError) return null;
      throw err;
    }
    return entries;
  }

  // --- optional -------------------------------------------------------------

  /** The project's main transcripts, by ListRuns on their labels; `mtime` is the last write's time. */
  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const runs = await this.runs(labelFilter(this.namespace, checkProjectKey(projectKey), undefined, MAIN));
    return runs.map((run) => ({ sessionId: run.labels[LABEL_SESSION]!, mtime: mtimeOf(run) }));
  }

  /**
   * The SDK's summary of each main transcript, from the note that ends its last write. `mtime` is the one
   * `listSessions` gives. A session whose last record is not this language's summary (the Python adapter
   * wrote last: its SDK folds another shape) is folded here from its entries.
   */
  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    const runs = await this.runs(labelFilter(this.namespace, checkProjectKey(projectKey), undefined, MAIN));
    const found: (SessionSummaryEntry | undefined)[] = [];
    for (let start = 0; start < runs.length; start += SUMMARY_READS) {
      const group = runs.slice(start, start + SUMMARY_READS);
      found.push(
        ...(await Promise.all(
          group.map(async (run) => {
            const data = await this.summaryData(run);
            return data === undefined ? undefined : { sessionId: run.labels[LABEL_SESSION]!, mtime: mtimeOf(run), data };
          }),
        )),
      );
    }
    return found.filter((entry): entry is SessionSummaryEntry => entry !== undefined);
  }

  /**
   * Deletes the key's run; a main key's subagent transcripts first, so a failed delete can be repeated.
   * A deleted key stays deleted: runjournal never uses a deleted run id again, so a later `append` to it
   * throws `RunDeletedError`.
   */
  async delete(key: SessionKey): Promise<void> {
    const place = placeOf(this.namespace, key);
    if (place.subpath === undefined) {
      for (const run of await this.runs(labelFilter(this.namespace, place.projectKey, place.sessionId, SUBAGENT))) {
        await this.deleteRun(run.runId, run.lastSeq);
      }
    }
    await this.deleteRun(place.runId, 1n);
  }

  /** The subpaths of the session's subagent transcripts. */
  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const place = placeOf(this.namespace, { projectKey: key.projectKey, sessionId: key.sessionId });
    const runs = await this.runs(labelFilter(this.namespace, place.projectKey, place.sessionId, SUBAGENT));
    return runs.map((run) => run.labels[LABEL_SUBPATH]!).sort();
  }

  // --- writing --------------------------------------------------------------

  /** Appends the entries not stored yet after the last seq; on a refusal reads what was added, and again. */
  private async write(transcript: Transcript, entries: readonly Entry[]): Promise<void> {
    for (;;) {
      const fresh = transcript.fresh(entries);
      if (fresh.length === 0) return;
      const records = transcript.batch(fresh);
      try {
        await this.client.appendBatch(transcript.place.runId, CREATOR_TOKEN, records);
      } catch (err) {
        if (err instanceof SeqConflictError || err instanceof RunExistsError) {
          await this.catchUp(transcript); // another writer got there first
          continue;
        }
        if (err instanceof SeqGapError || err instanceof RunNotFoundError) {
          // What this store remembered is not the run any more (removed by hand): start over from the store.
          transcript.forget();
          await this.catchUp(transcript);
          continue;
        }
        throw err;
      }
      for (const record of records) transcript.apply(record.seq, record);
      return;
    }
  }

  /** Takes in the records stored after `transcript.lastSeq` (none for a run not created yet). */
  private async catchUp(transcript: Transcript): Promise<void> {
    try {
      for await (const item of this.client.read(transcript.place.runId, { fromSeq: transcript.lastSeq + 1n })) {
        transcript.apply(item.seq, item.record);
      }
    } catch (err) {
      if (!(err instanceof RunNotFoundError)) throw err;
    }
  }

  /** Runs `work` after every earlier call's work on the same run has finished. */
  private async inTurn(runId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.turns.get(runId) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = previous.then(() => mine);
    this.turns.set(runId, tail);
    await previous;
    try {
      await work();
    } finally {
      done();
      if (this.turns.get(runId) === tail) this.turns.delete(runId);
    }
  }

  private remember(transcript: Transcript): void {
    this.transcripts.set(transcript.place.runId, transcript);
    for (const runId of this.transcripts.keys()) {
      if (this.transcripts.size <= this.cached) break;
      this.transcripts.delete(runId);
    }
  }

  // --- reading and deleting -------------------------------------------------

  private async runs(labels: Record<string, string>): Promise<RunSummary[]> {
    const runs: RunSummary[] = [];
    for await (const run of this.client.iterRuns({ pageSize: 1000, labels })) runs.push(run);
    return runs;
  }

  /** The summary note at the run's tail, else a fold of all its entries; undefined for a run deleted meanwhile. */
  private async summaryData(run: RunSummary): Promise<Record<string, unknown> | undefined> {
    try {
      let last;
      for await (const item of this.client.read(run.runId, { fromSeq: run.lastSeq > 1n ? run.lastSeq : 1n })) last = item.record;
      const data = last === undefined ? undefined : summaryOf(last);
      if (data !== undefined) return data;
      const entries: SessionStoreEntry[] = [];
      for await (const item of this.client.read(run.runId)) {
        const entry = entryOf(item.record);
        if (entry !== undefined) entries.push(entry);
      }
      return foldSummary(run.labels[LABEL_SESSION]!, undefined, entries);
    } catch (err) {
      if (err instanceof RunNotFoundError || err instanceof RunDeletedError) return undefined;
      throw err;
    }
  }

  /**
   * Deletes the run at its last seq, taking the server's word for it when something was appended meanwhile.
   * A run already deleted is done: the server answers RUN_DELETED to a deletion at another seq than its own.
   */
  private async deleteRun(runId: string, lastSeq: bigint): Promise<void> {
    this.transcripts.delete(runId);
    let expected = lastSeq > 1n ? lastSeq : 1n;
    for (;;) {
      try {
        await this.client.deleteRun(runId, expected);
        return;
      } catch (err) {
        if (err instanceof RunNotFoundError || err instanceof RunDeletedError) return;
        if (err instanceof LastSeqMismatchError && err.lastSeq !== undefined) {
          expected = err.lastSeq;
          continue;
        }
        throw err;
      }
    }
  }
}

/** `entries` in runs of at most `MAX_BATCH_RECORDS` entries and about `MAX_BATCH_BYTES` bytes. */
function chunks(entries: readonly Entry[]): Entry[][] {
  const out: Entry[][] = [[]];
  let size = 0;
  for (const entry of entries) {
    const length = Buffer.byteLength(entry.text, "utf8");
    const current = out[out.length - 1]!;
    if (current.length > 0 && (current.length >= MAX_BATCH_RECORDS || size + length > MAX_BATCH_BYTES)) {
      out.push([]);
      size = 0;
    }
    out[out.length - 1]!.push(entry);
    size += length;
  }
  return out;
}

/** When the run's last record was stored, in epoch ms (its creation for a run the store could not read). */
function mtimeOf(run: RunSummary): number {
  return epochMs(run.updatedAt ?? run.createdAt);
}
