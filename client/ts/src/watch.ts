/**
 * What Watch and WatchRuns yield, and how a resumed WatchRuns stream yields only what changed.
 *
 * Both streams never end by themselves; the client resumes them after a transport
 * failure (see `JournalClient.watch` and `JournalClient.watchRuns`).
 */
import { equals } from "@bufbuild/protobuf";
import type { WatchResponse, WatchRunsResponse } from "./gen/runjournal/v1/journal_service_pb.js";
import { type RunSummary, RunSummarySchema } from "./gen/runjournal/v1/state_pb.js";
import { readItem, type StoredRecord } from "./read-item.js";

/** A Watch item: a stored record, or the end of the stored part (`headSeq`: the run's last seq then). */
export type WatchItem = ({ kind: "record" } & StoredRecord) | { kind: "caughtUp"; headSeq: bigint };

/** A WatchRuns item: a matching run as it is now, the end of the stored part, or a run that left. */
export type RunsItem =
  | { kind: "run"; run: RunSummary }
  | { kind: "caughtUp" }
  | { kind: "left"; runId: string; deleted: boolean };

/** A Watch response as the client yields it; undefined for a kind this client does not know. */
export function watchItem(response: WatchResponse): WatchItem | undefined {
  switch (response.event.case) {
    case "record":
      return { kind: "record", ...readItem(response.event.value) };
    case "caughtUp":
      return { kind: "caughtUp", headSeq: response.event.value.headSeq };
    default:
      return undefined;
  }
}

/**
 * What a WatchRuns iteration has yielded. After a transport failure the server
 * sends every matching run again, then caught_up: a summary equal to the one
 * last yielded is not repeated, and at that caught_up every run yielded before
 * but not sent again left while the stream was down (`deleted` false: a resumed
 * stream cannot tell a deleted run from one that stopped matching).
 */
export class RunsResume {
  private readonly shown = new Map<string, RunSummary>();
  private resent: Set<string> | undefined;
  private caughtUp = false;

  /** A new stream begins after a failure. */
  resuming(): void {
    this.resent = new Set();
  }

  /** What to yield for one item of the stream (nothing for a repeat). */
  items(response: WatchRunsResponse): RunsItem[] {
    const event = response.event;
    if (event.case === "run") {
      const run = event.value;
      this.resent?.add(run.runId);
      const before = this.shown.get(run.runId);
      if (before !== undefined && equals(RunSummarySchema, before, run)) return [];
      this.shown.set(run.runId, run);
      return [{ kind: "run", run }];
    }
    if (event.case === "left") {
      this.shown.delete(event.value.runId);
      return [{ kind: "left", runId: event.value.runId, deleted: event.value.deleted }];
    }
    if (event.case === "caughtUp") {
      const out: RunsItem[] = [];
      if (this.resent !== undefined) {
        for (const runId of [...this.shown.keys()].sort()) {
          if (this.resent.has(runId)) continue;
          this.shown.delete(runId);
          out.push({ kind: "left", runId, deleted: false });
        }
        this.resent = undefined;
      }
      if (!this.caughtUp) {
        this.caughtUp = true;
        out.push({ kind: "caughtUp" });
      }
      return out;
    }
    return []; // a kind this client does not know (a newer server)
  }
}
