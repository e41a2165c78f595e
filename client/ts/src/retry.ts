/**
 * The retry rule, stated once (the same as the Python client's `_retry`).
 *
 * Only a transport-level UNAVAILABLE or DEADLINE_EXCEEDED is retried: a status
 * that carries no ErrorInfo, so the server's journal logic never answered. A
 * CANCELED without an ErrorInfo that the caller did not ask for counts as one
 * (`asTransportFailure`): a lost connection ends a call so, and so does a
 * server shutting down (gRPC cancels the calls it had queued at SIGTERM, or
 * that outlived the grace; those arriving while it drains are UNAVAILABLE).
 *
 * The very same request is resent (same run, same seq, same bytes). Whether
 * the first attempt was stored is unknown, so each call is safe to resend:
 * Append and AppendBatch name their seqs, and the server acknowledges a resent
 * record as a duplicate only when the stored one is byte-identical; SubmitTask
 * accepts the same request again, and DeleteRun, DeleteTask and reads change
 * nothing when repeated; ForkRun, Answer, Approve and CompleteTask settle a
 * resend's refusal that names their own first write as the success it is; a
 * resent Claim writes a second claim record whose token is the run's latest
 * (the first is spent unused).
 *
 * One answer is resent too: STORAGE_UNAVAILABLE. The server gives it only when
 * its store acknowledged nothing ("nothing was acknowledged, retry the same
 * request": a NATS leader change, a hung or cut-off NATS node), the case above
 * with less doubt, so the same resend is safe for every call, and a worker
 * whose call would have gone through a moment later gets its answer instead of
 * an error, for as long as the policy's time budget lasts (`RetryPolicy`). Every other status with an ErrorInfo reason (RUN_LOCKED included,
 * which is UNAVAILABLE too) is an answer, and the caller decides what to do
 * about it.
 */
import { fromConnectError, isRetryable, RunJournalError } from "./errors.js";

/** Answers resent like a transport failure (see the module comment). */
const RESENT_REASONS: ReadonlySet<string> = new Set(["STORAGE_UNAVAILABLE"]);

/** Whether a call that failed with `err` is sent again: a transport failure, or a reason in RESENT_REASONS. */
function isResent(err: unknown): boolean {
  return isRetryable(err) || RESENT_REASONS.has(fromConnectError(err).reason);
}

/**
 * Capped exponential backoff with jitter, resent for as long as a time budget lasts.
 *
 * A resend is made only when it would start within `budgetMs` of the call's
 * first failure (for a Read or Watch stream: its first failure since it last
 * delivered an item), so the budget, not a count, decides how long a call rides
 * out an outage: 20 s covers a JetStream leader change (about 6 s, up to 10 s
 * for a leader cut off) and a hung NATS node. Each attempt gets the call's full
 * deadline (`timeoutMs`), so a call lasts at most `budgetMs` plus two deadlines.
 */
export interface RetryPolicy {
  /** How long after the first failure a resend may still start; 0 disables retries. Default 20 s. */
  readonly budgetMs: number;
  /** Attempts in total, the first one included (1 disables retries). Default Infinity: the budget alone decides. */
  readonly maxAttempts: number;
  /** Default 100 ms. */
  readonly initialBackoffMs: number;
  /** Default 1 s: short, so that a recovered server is noticed within a second. */
  readonly maxBackoffMs: number;
  /** Default 2. */
  readonly multiplier: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  budgetMs: 20_000,
  maxAttempts: Infinity,
  initialBackoffMs: 100,
  maxBackoffMs: 1000,
  multiplier: 2,
});

/** A policy that sends every request exactly once. */
export const NO_RETRY: RetryPolicy = Object.freeze({ ...DEFAULT_RETRY_POLICY, budgetMs: 0, maxAttempts: 1 });

/** A complete, checked policy from a partial one (missing fields take the defaults). */
export function retryPolicy(partial: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...partial };
  const count = policy.maxAttempts;
  if (!(count === Infinity || Number.isInteger(count)) || count < 1) {
    throw new RangeError(`maxAttempts must be an integer of at least 1 (or Infinity), got ${count}`);
  }
  if (!(policy.budgetMs >= 0)) throw new RangeError(`budgetMs must not be negative, got ${policy.budgetMs}`);
  if (policy.initialBackoffMs < 0 || policy.maxBackoffMs < 0) {
    throw new RangeError("backoff must not be negative");
  }
  if (policy.multiplier < 1) throw new RangeError(`multiplier must be at least 1, got ${policy.multiplier}`);
  return Object.freeze(policy);
}

/**
 * How long to wait before retry number `retryNumber` (1 for the first retry): a
 * random time in [cap / 2, cap], cap = min(maxBackoffMs, initialBackoffMs * multiplier^(n-1)).
 */
export function backoffMs(policy: RetryPolicy, retryNumber: number, random: () => number = Math.random): number {
  const cap = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * policy.multiplier ** (retryNumber - 1));
  return cap / 2 + random() * (cap / 2);
}

/** The attempts of one call: decides after each failure whether to go again (the budget counts from the first). */
export class Attempts {
  /** Attempts made so far, the current one included. */
  made = 1;
  private firstFailure: number | undefined;

  constructor(
    private readonly policy: RetryPolicy,
    private readonly random: () => number = Math.random,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Milliseconds to wait before resending; throws the client error when the call is over. */
  delayAfter(err: unknown): number {
    const now = this.clock();
    this.firstFailure ??= now;
    const delay = backoffMs(this.policy, this.made, this.random);
    const late = now - this.firstFailure + delay > this.policy.budgetMs;
    if (!isResent(err) || this.made >= this.policy.maxAttempts || late) {
      throw err instanceof RunJournalError ? err : fromConnectError(err);
    }
    this.made += 1;
    return delay;
  }
}

/**
 * Waits `ms` before a stream is opened again: true, or false at once when the
 * caller aborted `signal` (the caller's own stop ends a stream's loop cleanly,
 * docs/clients.md "One API").
 */
export async function pauseUnlessAborted(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await sleep(ms, signal);
    return true;
  } catch (err) {
    if (signal?.aborted) return false;
    throw err;
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
