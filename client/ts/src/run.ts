/**
 * The run handle: a writer's position in one run's journal, its claim token and
 * the next seq. Build it with `Run.create` or `Run.claim`.
 *
 * The seq advances only when the server acknowledged a record, so after a
 * failed call the same method with the same arguments rebuilds the same record
 * at the same seq, which the server verifies as a duplicate if the first
 * attempt did land. Appends run one at a time, in the order they are made.
 */
import { clone } from "@bufbuild/protobuf";
import {
  approvalRecord,
  assistantRecord,
  type CompactionOptions,
  type CompactionTriggerLike,
  compactionRecord,
  type ContentLike,
  type DecisionLike,
  deferralRecord,
  metaRecord,
  type MetaOptions,
  noteRecord,
  type StopReasonLike,
  type SummaryLike,
  type TerminalReasonLike,
  terminalRecord,
  type ToolResultOptions,
  toolResultRecord,
  type UsageLike,
  userRecord,
} from "./builders.js";
import type { CallSettings, ClaimOptions, JournalClient } from "./client.js";
import { type ContentBlock, type Fingerprint, type JournalRecord, JournalRecordSchema } from "./gen/runjournal/v1/records_pb.js";
import type { GateReport, RunState } from "./gen/runjournal/v1/state_pb.js";

/** The claim token of the worker that created a run: the meta record's seq. */
export const CREATOR_CLAIM_TOKEN = 1n;

export interface RunPosition {
  runId: string;
  claimToken: bigint;
  nextSeq: bigint;
  state?: RunState;
  gate?: GateReport;
  resumeReminder: string;
}

/** Copies of the drafts at consecutive seqs from `nextSeq` (a draft has seq 0, or already the right one). */
export function placeBatch(nextSeq: bigint, drafts: readonly JournalRecord[]): JournalRecord[] {
  if (drafts.length === 0) throw new RangeError("a batch needs at least one record");
  return drafts.map((draft, offset) => {
    const seq = nextSeq + BigInt(offset);
    if (draft.seq !== 0n && draft.seq !== seq) {
      throw new RangeError(
        `record already carries seq ${draft.seq}, but the run's next seq is ${seq}; pass drafts (seq 0) and let the run place them`,
      );
    }
    const record = clone(JournalRecordSchema, draft);
    record.seq = seq;
    return record;
  });
}

export class Run {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly client: JournalClient,
    private readonly position: RunPosition,
  ) {}

  /**
   * Creates the run by appending its meta at seq 1; the creator's claim token is 1.
   * `createdAt` defaults to now; pass the same value to make a repeated create a
   * verified duplicate instead of `RunExistsError`.
   */
  static async create(
    client: JournalClient,
    runId: string,
    fingerprint: Fingerprint,
    prompt: ContentLike,
    options: MetaOptions & CallSettings = {},
  ): Promise<Run> {
    const meta = metaRecord(runId, fingerprint, prompt, options);
    const response = await client.append(runId, CREATOR_CLAIM_TOKEN, meta, options);
    return new Run(client, { runId, claimToken: CREATOR_CLAIM_TOKEN, nextSeq: response.seq + 1n, resumeReminder: "" });
  }

  /** Claims the run; `state`, `gate` and `resumeReminder` come from the claim. */
  static async claim(
    client: JournalClient,
    runId: string,
    workerId: string,
    fingerprint: Fingerprint,
    options: ClaimOptions = {},
  ): Promise<Run> {
    const response = await client.claim(runId, workerId, fingerprint, options);
    return new Run(client, {
      runId,
      claimToken: response.claimToken,
      nextSeq: response.lastSeq + 1n,
      state: response.state,
      gate: response.gate,
      resumeReminder: response.resumeReminder,
    });
  }

  get runId(): string {
    return this.position.runId;
  }
  /** The token sent with every append: the claim's seq, or 1 for the creator. */
  get claimToken(): bigint {
    return this.position.claimToken;
  }
  /** The seq the next record will take. */
  get nextSeq(): bigint {
    return this.position.nextSeq;
  }
  /** The seq of the last record this handle knows to be stored. */
  get lastSeq(): bigint {
    return this.position.nextSeq - 1n;
  }
  /** The folded state from the claim (or the last `fold`); undefined after `create`. */
  get state(): RunState | undefined {
    return this.position.state;
  }
  /** The resume gate's report from the claim; undefined for a created run. */
  get gate(): GateReport | undefined {
    return this.position.gate;
  }
  /** Text the server offers for the system prompt of a resumed run ("" if none). */
  get resumeReminder(): string {
    return this.position.resumeReminder;
  }

  /** Folds the run now and keeps the result as `state`. */
  async fold(settings?: CallSettings & { uncompacted?: boolean }): Promise<RunState> {
    const state = await this.client.fold(this.runId, settings);
    this.position.state = state;
    return state;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const result = this.queue.then(work, work);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Appends any draft record (seq 0) at the next seq; resolves to its seq. */
  append(draft: JournalRecord, settings?: CallSettings): Promise<bigint> {
    return this.serial(async () => {
      const [record] = placeBatch(this.position.nextSeq, [draft]);
      const response = await this.client.append(this.runId, this.claimToken, record!, settings);
      this.position.nextSeq = response.seq + 1n;
      return response.seq;
    });
  }

  /** Appends drafts at consecutive seqs in one all-or-nothing AppendBatch; resolves to the last seq. */
  appendBatch(drafts: readonly JournalRecord[], settings?: CallSettings): Promise<bigint> {
    return this.serial(async () => {
      const records = placeBatch(this.position.nextSeq, drafts);
      const response = await this.client.appendBatch(this.runId, this.claimToken, records, settings);
      const last = response.firstSeq + BigInt(records.length) - 1n;
      this.position.nextSeq = last + 1n;
      return last;
    });
  }

  /** Records one model call (`stopReason` e.g. "tool_use" or "end_turn"). */
  assistant(iteration: number, content: readonly ContentBlock[], stopReason: StopReasonLike, usage?: UsageLike): Promise<bigint> {
    return this.append(assistantRecord(iteration, content, stopReason, usage));
  }

  /** Records the result of a call of the open turn. */
  toolResult(toolUseId: string, content: ContentLike, options?: ToolResultOptions): Promise<bigint> {
    return this.append(toolResultRecord(toolUseId, content, options));
  }

  /** Marks a call of the open turn as awaiting an out-of-band answer (or, with `needsApproval`, a decision). */
  deferral(toolUseId: string, reason: string, expectedAnswerer: string, options?: { needsApproval?: boolean }): Promise<bigint> {
    return this.append(deferralRecord(toolUseId, reason, expectedAnswerer, options));
  }

  /** Records a user follow-up message. */
  user(content: ContentLike): Promise<bigint> {
    return this.append(userRecord(content));
  }

  /** Records why the run stopped ("completed", "suspended", "error", ...). */
  terminal(reason: TerminalReasonLike, message = ""): Promise<bigint> {
    return this.append(terminalRecord(reason, message));
  }

  /** Records an optional note for people and UIs; `data` is stored as canonical JSON. */
  note(text: string, data?: unknown): Promise<bigint> {
    return this.append(noteRecord(text, data));
  }

  /**
   * Records a compaction: from now on the model is sent `summary` instead of the
   * messages of records 1..`uptoSeq` (`trigger` "manual", "auto" or "provider").
   */
  compaction(uptoSeq: number | bigint, summary: SummaryLike, trigger: CompactionTriggerLike, options?: CompactionOptions): Promise<bigint> {
    return this.append(compactionRecord(uptoSeq, summary, trigger, options));
  }

  /** Records an operator's decision on a call of the open turn. */
  approval(toolUseId: string, decision: DecisionLike, approver: string, reason = ""): Promise<bigint> {
    return this.append(approvalRecord(toolUseId, decision, approver, reason));
  }
}
