/** A Read item as the clients yield it (Read, and the records of Watch). */
import { create } from "@bufbuild/protobuf";
import type { ReadResponse } from "./gen/runjournal/v1/journal_service_pb.js";
import { type JournalRecord, JournalRecordSchema } from "./gen/runjournal/v1/records_pb.js";

/** One stored record as Read streams it. */
export interface StoredRecord {
  /** The record, placed at its seq (for an unknown kind only `seq` and `optional` are set). */
  record: JournalRecord;
  /** The stored line (canonical JSON with its checksum), without the newline. */
  storedLine: Uint8Array;
  seq: bigint;
}

/** A Read item with its seq from `response.seq` (set for every kind), and the record placed there. */
export function readItem(response: ReadResponse): StoredRecord {
  const seq = response.seq || response.record?.seq || 0n;
  const record = response.record ?? create(JournalRecordSchema, { seq });
  if (!record.seq) record.seq = seq;
  return { record, storedLine: response.storedLine, seq };
}
