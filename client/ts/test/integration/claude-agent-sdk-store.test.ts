/**
 * The TypeScript session store against a real server. The npm package ships no conformance suite, so the
 * 14 contracts of the Python SDK's `claude_agent_sdk.testing.run_session_store_conformance` are ported here
 * one to one: each test is named as the Python suite names its contract, and asserts what it asserts (keys
 * and fields in the TypeScript SDK's camelCase, `null` where Python has `None`). Each contract gets a fresh
 * store (its own namespace), as the Python suite calls `make_store` once per contract.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  deleteSession,
  foldSessionSummary,
  forkSession,
  getSessionInfo,
  getSessionMessages,
  listSessions,
  renameSession,
  type SessionKey,
  type SessionStoreEntry,
  tagSession,
} from "@anthropic-ai/claude-agent-sdk";
import { RunJournalSessionStore } from "../../src/adapters/claude-agent-sdk.js";
import { JournalClient, RunDeletedError, SeqConflictError } from "../../src/index.js";
import { type Server, startWithClient, stopWithClient, unavailable } from "./server.js";

const skip = unavailable();
const KEY: SessionKey = { projectKey: "proj", sessionId: "sess" };

/** The Python suite's `_e`: a test entry with the required `type`. */
function e(d: Record<string, unknown>): SessionStoreEntry {
  return { type: "x", ...d };
}

describe("claude agent sdk session store conformance (port of the Python suite's 14 contracts)", { skip }, () => {
  let server: Server;
  let client: JournalClient;
  const fresh = () => new RunJournalSessionStore(client, { namespace: `t${randomBytes(6).toString("hex")}` });

  before(async () => ({ server, client } = await startWithClient()));
  after(() => stopWithClient({ server, client }));

  // --- Required: append + load ---

  test("1. append then load returns same entries in same order", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
    assert.deepEqual(await store.load(KEY), [e({ uuid: "b", n: 1 }), e({ uuid: "a", n: 2 })]);
  });

  test("2. load unknown key returns None", async () => {
    const store = fresh();
    assert.equal(await store.load({ projectKey: "proj", sessionId: "nope" }), null);
    await store.append(KEY, [e({ uuid: "x", n: 1 })]);
    assert.equal(await store.load({ ...KEY, subpath: "nope" }), null);
  });

  test("3. multiple append calls preserve call order", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "z", n: 1 })]);
    await store.append(KEY, [e({ uuid: "a", n: 2 }), e({ uuid: "m", n: 3 })]);
    await store.append(KEY, [e({ uuid: "b", n: 4 })]);
    assert.deepEqual(await store.load(KEY), [
      e({ uuid: "z", n: 1 }),
      e({ uuid: "a", n: 2 }),
      e({ uuid: "m", n: 3 }),
      e({ uuid: "b", n: 4 }),
    ]);
  });

  test("4. append([]) is a no-op", async () => {
    const store = fresh();
    await store.append(KEY, [e({ uuid: "a", n: 1 })]);
    await store.append(KEY, []);
    assert.deepEqual(await store.load(KEY), [e({ uuid: "a", n: 1 })]);
  });

  test("5. subpath keys are stored independently of main", async () => {
    const store = fresh();
    const sub: SessionKey = { ...KEY, subpath: "subagents/agent-1" };
    await store.append(KEY, [e({ uuid: "m", n: 1 })]);
    await store.append(sub, [e({ uuid: "s", n: 1 })]);
    assert.deepEqual(await store.load(KEY), [e({ uuid: "m", n: 1 })]);
    assert.deepEqual(await store.load(sub), [e({ uuid: "s", n: 1 })]);
  });

  test("6. project_key isolation", async () => {
    const store = fresh();
    await store.append({ projectKey: "A", sessionId: "s1" }, [e({ from: "A" })]);
    await store.append({ projectKey: "B", sessionId: "s1" }, [e({ from: "B" })]);
    assert.deepEqual(await store.load({ projectKey: "A", sessionId: "s1" }), [e({ from: "A" })]);
    assert.deepEqual(await store.load({ projectKey: "B", sessionId: "s1" }), [e({ from: "B" })]);
    assert.equal((await store.listSessions("A")).length, 1);
    assert.equal((await store.listSessions("B")).length, 1);
  });

  // --- Optional: listSessions ---

  test("7. list_sessions returns session_ids for project", async () => {
    const store = fresh();
    await store.append({ projectKey: "proj", sessionId: "a" }, [e({ n: 1 })]);
    await store.append({ projectKey: "proj", sessionId: "b" }, [e({ n: 1 })]);
    await store.append({ projectKey: "other", sessionId: "c" }, [e({ n: 1 })]);
    const sessions = await store.listSessions("proj");
    assert.deepEqual(sessions.map((s) => s.sessionId).sort(), ["a", "b"]);
    // mtime must be epoch-ms; >1e12 rules out epoch-seconds (≈2001 in ms).
    assert.ok(sessions.every((s) => Number.isFinite(s.mtime) && s.mtime > 1e12));
    assert.deepEqual(await store.listSessions("never-appended-project"), []);
  });

  test("8. list_sessions excludes subagent subpaths", async () => {
    const store = fresh();
    await store.append({ projectKey: "proj", sessionId: "main" }, [e({ n: 1 })]);
    await store.append({ projectKey: "proj", sessionId: "main", subpath: "subagents/agent-1" }, [e({ n: 1 })]);
    const sessions = await store.listSessions("proj");
    assert.deepEqual(
      sessions.map((s) => s.sessionId),
      ["main"],
    );
  });

  // --- Optional: listSessionSummaries ---

  test("14. list_session_summaries returns persisted fold output that round-trips through fold_session_summary again", async () => {
    const store = fresh();
    const key: SessionKey = { projectKey: "proj", sessionId: "summ-sess" };
    await store.append(key, [e({ timestamp: "2024-01-01T00:00:00.000Z", customTitle: "first" }), e({ timestamp: "2024-01-01T00:00:01.000Z" })]);
    await store.append(key, [e({ timestamp: "2024-01-01T00:00:02.000Z", customTitle: "second" })]);
    await store.append({ projectKey: "other", sessionId: "elsewhere" }, [e({ timestamp: "2024-01-01T00:00:00.000Z" })]);
    const summaries = await store.listSessionSummaries("proj");
    const byId = new Map(summaries.map((s) => [s.sessionId, s]));
    assert.deepEqual([...byId.keys()], ["summ-sess"]);
    const summ = byId.get("summ-sess")!;
    // mtime must be epoch-ms; >1e12 rules out epoch-seconds.
    assert.ok(Number.isFinite(summ.mtime) && summ.mtime > 1e12);
    // Clock alignment: the sidecar's mtime shares a clock with listSessions().mtime.
    const lsById = new Map((await store.listSessions("proj")).map((s) => [s.sessionId, s.mtime]));
    assert.ok(summ.mtime >= lsById.get("summ-sess")!);
    // data is opaque; the contract is that it round-trips into the fold.
    assert.ok(summ.data !== null && typeof summ.data === "object" && !Array.isArray(summ.data));
    const refolded = foldSessionSummary(summ, key, [e({ timestamp: "2024-01-01T00:00:03.000Z" })]);
    assert.equal(refolded.sessionId, "summ-sess");
    // The fold preserves prev.mtime verbatim: mtime is stamped by the adapter after persisting, not by the fold.
    assert.equal(refolded.mtime, summ.mtime);
    // Subagent appends must NOT affect the main session's summary.
    await store.append({ ...key, subpath: "subagents/agent-1" }, [e({ timestamp: "2024-01-01T00:00:09.000Z", customTitle: "subagent" })]);
    const afterSub = new Map((await store.listSessionSummaries("proj")).map((s) => [s.sessionId, s]));
    assert.deepEqual(afterSub.get("summ-sess")!.data, summ.data);
    assert.deepEqual(await store.listSessionSummaries("never-appended-project"), []);
    await store.delete(key);
    assert.deepEqual(await store.listSessionSummaries("proj"), []);
  });

  // --- Optional: delete ---

  const sub1: SessionKey = { ...KEY, subpath: "subagents/agent-1" };
  const sub2: SessionKey = { ...KEY, subpath: "subagents/agent-2" };

  test("9. delete main then load returns None", async () => {
    const store = fresh();
    await store.delete({ projectKey: "proj", sessionId: "never-written" });
    await store.append(KEY, [e({ n: 1 })]);
    await store.delete(KEY);
    assert.equal(await store.load(KEY), null);
  });

  test("10. delete main cascades to subkeys", async () => {
    const store = fresh();
    const other: SessionKey = { projectKey: "proj", sessionId: "sess2" };
    const otherProj: SessionKey = { projectKey: "other-proj", sessionId: KEY.sessionId };
    for (const key of [KEY, sub1, sub2, other, otherProj]) await store.append(key, [e({ n: 1 })]);
    await store.delete(KEY);
    assert.equal(await store.load(KEY), null);
    assert.equal(await store.load(sub1), null);
    assert.equal(await store.load(sub2), null);
    assert.equal((await store.load(other))?.length, 1);
    assert.equal((await store.load(otherProj))?.length, 1);
    assert.deepEqual(await store.listSubkeys(KEY), []);
    const listed = await store.listSessions(KEY.projectKey);
    assert.ok(!listed.map((s) => s.sessionId).includes(KEY.sessionId));
  });

  test("11. delete with subpath removes only that subkey", async () => {
    const store = fresh();
    for (const key of [KEY, sub1, sub2]) await store.append(key, [e({ n: 1 })]);
    await store.delete(sub1);
    assert.equal(await store.load(sub1), null);
    assert.equal((await store.load(sub2))?.length, 1);
    assert.equal((await store.load(KEY))?.length, 1);
    assert.deepEqual(await store.listSubkeys(KEY), ["subagents/agent-2"]);
  });

  // --- Optional: listSubkeys ---

  test("12. list_subkeys returns subpaths", async () => {
    const store = fresh();
    await store.append(KEY, [e({ n: 1 })]);
    await store.append({ ...KEY, subpath: "subagents/agent-1" }, [e({ n: 1 })]);
    await store.append({ ...KEY, subpath: "subagents/agent-2" }, [e({ n: 1 })]);
    await store.append({ projectKey: KEY.projectKey, sessionId: "other-sess", subpath: "subagents/agent-x" }, [e({ n: 1 })]);
    const subkeys = await store.listSubkeys(KEY);
    assert.deepEqual([...subkeys].sort(), ["subagents/agent-1", "subagents/agent-2"]);
    assert.ok(!subkeys.includes("subagents/agent-x"));
  });

  test("13. list_subkeys excludes main transcript", async () => {
    const store = fresh();
    await store.append(KEY, [e({ n: 1 })]);
    assert.deepEqual(await store.listSubkeys(KEY), []);
    assert.deepEqual(await store.listSubkeys({ projectKey: "proj", sessionId: "never-appended" }), []);
  });
});

describe("claude agent sdk session store: retries, concurrent writers, deletion, packaging", { skip }, () => {
  let server: Server;
  let client: JournalClient;
  const namespace = () => `t${randomBytes(6).toString("hex")}`;

  before(async () => ({ server, client } = await startWithClient()));
  after(() => stopWithClient({ server, client }));

  test("a retried batch adds nothing, through the same store or another", async () => {
    const ns = namespace();
    const store = new RunJournalSessionStore(client, { namespace: ns });
    const batch = [e({ uuid: "u1", n: 1 }), e({ uuid: "u2", n: 2 })];
    await store.append(KEY, batch);
    await store.append(KEY, batch);
    const other = new RunJournalSessionStore(client, { namespace: ns });
    await other.append(KEY, [...batch, e({ uuid: "u3", n: 3 })]);
    assert.deepEqual(await store.load(KEY), [...batch, e({ uuid: "u3", n: 3 })]);
  });

  /** `c` with its AppendBatch refusals by the seq check counted in `counter.conflicts`. */
  function counting(c: JournalClient, counter: { conflicts: number }): JournalClient {
    const appendBatch = c.appendBatch.bind(c);
    return Object.assign(Object.create(c) as JournalClient, {
      appendBatch: async (...args: Parameters<JournalClient["appendBatch"]>) => {
        try {
          return await appendBatch(...args);
        } catch (err) {
          if (err instanceof SeqConflictError) counter.conflicts += 1;
          throw err;
        }
      },
    });
  }

  test("a writer that is behind is refused by the seq check, reads what was added and doubles nothing", async () => {
    const ns = namespace();
    const counter = { conflicts: 0 };
    const behind = new RunJournalSessionStore(counting(client, counter), { namespace: ns });
    const ahead = new RunJournalSessionStore(client, { namespace: ns });
    await behind.append(KEY, [e({ uuid: "a", n: 1 })]);
    await ahead.append(KEY, [e({ uuid: "b", n: 2 }), e({ uuid: "c", n: 3 })]); // `behind` still believes the run ends after "a"
    await behind.append(KEY, [e({ uuid: "c", n: 3 }), e({ uuid: "d", n: 4 })]);
    assert.equal(counter.conflicts, 1);
    assert.deepEqual(await ahead.load(KEY), [e({ uuid: "a", n: 1 }), e({ uuid: "b", n: 2 }), e({ uuid: "c", n: 3 }), e({ uuid: "d", n: 4 })]);
  });

  test("concurrent appenders through two stores lose nothing and double nothing", async (t) => {
    const ns = namespace();
    const counter = { conflicts: 0 };
    const second = new JournalClient({ address: server.address, timeoutMs: 10_000 });
    try {
      const stores = [
        new RunJournalSessionStore(counting(client, counter), { namespace: ns }),
        new RunJournalSessionStore(counting(second, counter), { namespace: ns }),
      ];
      const writers = 8;
      const batches = 4;
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let b = 0; b < batches; b++) {
            const batch = [0, 1, 2].map((i) => e({ uuid: `w${w}-b${b}-${i}`, writer: w })).concat([{ type: "mark", writer: w }]);
            await stores[(w + b) % 2]!.append(KEY, batch);
            await stores[(w + b + 1) % 2]!.append(KEY, batch.slice(0, 3)); // the retry, through the other store
          }
        }),
      );
      const loaded = (await stores[0]!.load(KEY))!;
      const uuids = loaded.filter((x) => x.uuid !== undefined).map((x) => x.uuid!);
      const every = Array.from({ length: writers }, (_, w) => Array.from({ length: batches }, (_, b) => [0, 1, 2].map((i) => `w${w}-b${b}-${i}`)).flat()).flat();
      assert.deepEqual([...uuids].sort(), [...every].sort());
      assert.equal(loaded.filter((x) => x.type === "mark").length, writers * batches);
      for (let w = 0; w < writers; w++) {
        const mine = loaded.filter((x) => x["writer"] === w && x.uuid !== undefined).map((x) => x.uuid);
        assert.deepEqual(mine, every.filter((u) => u.startsWith(`w${w}-`)));
      }
      t.diagnostic(`${counter.conflicts} appends refused by the seq check and redone`);
    } finally {
      second.close();
    }
  });

  test("a deleted session stays deleted", async () => {
    const store = new RunJournalSessionStore(client, { namespace: namespace() });
    await store.append(KEY, [e({ n: 1 })]);
    await store.delete(KEY);
    await assert.rejects(store.append(KEY, [e({ n: 2 })]), RunDeletedError);
    await store.delete(KEY);
  });

  test("the SDK's session functions list, read, rename, tag, fork and delete through the store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cas-"));
    try {
      const sessionStore = new RunJournalSessionStore(client, { namespace: namespace() });
      const options = { dir, sessionStore };
      const sessionId = crypto.randomUUID();
      const question = crypto.randomUUID();
      const common = { sessionId, cwd: dir, isSidechain: false };
      // The SDK's project key of a directory: its real path with every character outside [A-Za-z0-9] as "-".
      const projectKey = resolve(dir).replace(/[^a-zA-Z0-9]/g, "-");
      await sessionStore.append({ projectKey, sessionId }, [
        { type: "user", uuid: question, parentUuid: null, timestamp: "2024-01-01T00:00:00.000Z", message: { role: "user", content: "What is 2+2?" }, ...common },
        { type: "assistant", uuid: crypto.randomUUID(), parentUuid: question, timestamp: "2024-01-01T00:00:01.000Z", message: { role: "assistant", content: [{ type: "text", text: "4" }] }, ...common },
      ]);
      const [listed] = await listSessions(options);
      assert.deepEqual([listed?.sessionId, listed?.summary, listed?.createdAt], [sessionId, "What is 2+2?", 1704067200000]);
      const messages = await getSessionMessages(sessionId, options);
      assert.deepEqual(
        messages.map((m) => [m.type, m.message]),
        [
          ["user", { role: "user", content: "What is 2+2?" }],
          ["assistant", { role: "assistant", content: [{ type: "text", text: "4" }] }],
        ],
      );
      await renameSession(sessionId, "renamed", options);
      await tagSession(sessionId, "tagged", options);
      const info = await getSessionInfo(sessionId, options);
      assert.deepEqual([info?.customTitle, info?.tag], ["renamed", "tagged"]);
      const fork = await forkSession(sessionId, options);
      assert.deepEqual((await getSessionMessages(fork.sessionId, options)).map((m) => m.message), messages.map((m) => m.message));
      await deleteSession(sessionId, options);
      assert.deepEqual((await listSessions(options)).map((s) => s.sessionId), [fork.sessionId]);
      assert.equal(await sessionStore.load({ projectKey, sessionId }), null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the adapter is exported under its subpath, and the base entry point never loads it", async () => {
    const root = resolve(import.meta.dirname, "../../..");
    const exported = (await import(["@runjournal/client", "adapters/claude-agent-sdk"].join("/"))) as Record<string, unknown>;
    assert.equal(typeof exported["RunJournalSessionStore"], "function");
    // Walk the relative imports of dist/index.js: none reaches an adapter or the SDK.
    const seen = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      assert.ok(!text.includes("@anthropic-ai/claude-agent-sdk"), `${file} imports the SDK`);
      for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)) walk(resolve(dirname(file), match[1]!));
    };
    walk(resolve(root, "dist/index.js"));
    assert.ok(seen.size > 5 && ![...seen].some((f) => f.includes("/adapters/")), [...seen].join("\n"));
  });
});
