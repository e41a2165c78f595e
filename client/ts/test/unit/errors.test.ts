import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ERROR_DOMAIN,
  ErrorInfoSchema,
  asTransportFailure,
  fromConnectError,
  isRetryable,
  propertyName,
  REASON_ERRORS,
  RunClaimedError,
  RunJournalError,
  StatusError,
  UnavailableError,
  UnknownReasonError,
} from "../../src/index.js";

const table = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../../../../testdata/error_metadata.json"), "utf8")) as {
  reasons: Record<string, Record<string, { type: "int" | "str" | "list"; always: boolean }>>;
};

const SAMPLE = { int: "42", str: "some-text", list: "model,tools_sha256" } as const;

function refusal(reason: string, metadata: Record<string, string>, code = Code.FailedPrecondition): ConnectError {
  const info = create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata });
  return new ConnectError("refused", code, undefined, [{ desc: ErrorInfoSchema, value: info }]);
}

test("every reason of testdata/error_metadata.json has its class, and no class has a reason the table lacks", () => {
  assert.deepEqual(Object.keys(REASON_ERRORS).sort(), Object.keys(table.reasons).sort());
});

for (const [reason, keys] of Object.entries(table.reasons)) {
  test(`${reason}: its class declares the table's keys and parses each to a field of the right type`, () => {
    const cls = REASON_ERRORS[reason]!;
    assert.equal(cls.REASON, reason);
    assert.deepEqual(
      Object.fromEntries(Object.entries(cls.KEYS).sort()),
      Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, v.type]).sort()),
    );
    const metadata = Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, SAMPLE[v.type]]));
    const err = fromConnectError(refusal(reason, metadata));
    assert.ok(err instanceof cls, `${reason} maps to ${err.constructor.name}`);
    assert.ok(err instanceof RunJournalError);
    assert.equal(err.reason, reason);
    const fields = err as unknown as Record<string, unknown>;
    for (const [key, { type }] of Object.entries(keys)) {
      const value = fields[propertyName(key)];
      if (type === "int") assert.equal(value, 42n, key);
      if (type === "str") assert.equal(value, "some-text", key);
      if (type === "list") assert.deepEqual(value, ["model", "tools_sha256"], key);
    }
    // Only the always-present keys: the optional ones are absent, not defaulted.
    const always = Object.fromEntries(Object.entries(keys).filter(([, v]) => v.always).map(([k, v]) => [k, SAMPLE[v.type]]));
    const sparse = fromConnectError(refusal(reason, always)) as unknown as Record<string, unknown>;
    for (const [key, { always: isAlways }] of Object.entries(keys)) {
      if (!isAlways) assert.equal(sparse[propertyName(key)], undefined, key);
    }
  });
}

test("a damaged int is undefined, not NaN or 0", () => {
  const err = fromConnectError(refusal("RUN_CLAIMED", { run_id: "r", claim_token: "x7", claimed_by: "" }));
  assert.ok(err instanceof RunClaimedError);
  assert.equal(err.claimToken, undefined);
  assert.equal(err.claimedBy, "");
});

test("an unknown reason of our domain is UnknownReasonError; another domain falls back to the code", () => {
  assert.ok(fromConnectError(refusal("NEW_REASON", {})) instanceof UnknownReasonError);
  const foreign = new ConnectError("x", Code.Unavailable, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "R", domain: "example.com" }) },
  ]);
  assert.ok(fromConnectError(foreign) instanceof UnavailableError);
  assert.ok(fromConnectError(new ConnectError("x", Code.Internal)) instanceof StatusError);
});

test("only UNAVAILABLE / DEADLINE_EXCEEDED without ErrorInfo are retryable", () => {
  assert.equal(isRetryable(new ConnectError("down", Code.Unavailable)), true);
  assert.equal(isRetryable(new ConnectError("slow", Code.DeadlineExceeded)), true);
  assert.equal(isRetryable(refusal("STORAGE_UNAVAILABLE", { run_id: "r" }, Code.Unavailable)), false);
  assert.equal(isRetryable(refusal("RUN_LOCKED", { run_id: "r" }, Code.Unavailable)), false);
  assert.equal(isRetryable(new ConnectError("no", Code.Internal)), false);
  assert.equal(isRetryable(new ConnectError("no", Code.Aborted)), false);
});

test("a connection lost under a call (Node reports CANCELED) is a transport failure; a cancel the caller asked for is not", () => {
  const lost = new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled);
  assert.equal(isRetryable(lost), false);
  assert.equal(isRetryable(asTransportFailure(lost)), true);
  assert.ok(fromConnectError(asTransportFailure(lost)) instanceof UnavailableError);
  const controller = new AbortController();
  controller.abort();
  assert.equal(isRetryable(asTransportFailure(lost, controller.signal)), false);
  const answered = refusal("RUN_LOCKED", { run_id: "r" }, Code.Canceled);
  assert.equal(isRetryable(asTransportFailure(answered)), false, "a status with an ErrorInfo is an answer");
});
