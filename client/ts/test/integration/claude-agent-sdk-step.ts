/**
 * The TypeScript side of the cross-language session-store test (tests/adapters/test_claude_agent_sdk_cross_language.py):
 * `node build/test/integration/claude-agent-sdk-step.js --address HOST:PORT --namespace NS` reads a JSON list of
 * operations on stdin, runs them in order through `RunJournalSessionStore`, and prints a JSON list of their
 * results. An operation is `{"op": "append", "key": {...}, "entries": [...]}`, `{"op": "load", "key": {...}}`,
 * `{"op": "runId", "key": {...}}`, `{"op": "listSessions" | "listSessionSummaries", "projectKey": "..."}`,
 * `{"op": "listSubkeys", "key": {...}}` or `{"op": "delete", "key": {...}}`; keys are the TypeScript SDK's
 * (`projectKey`, `sessionId`, `subpath`).
 */
import { parseArgs } from "node:util";
import type { SessionKey, SessionStoreEntry } from "@anthropic-ai/claude-agent-sdk";
import { RunJournalSessionStore } from "../../src/adapters/claude-agent-sdk.js";
import { JournalClient } from "../../src/index.js";

interface Operation {
  op: string;
  key?: SessionKey;
  entries?: SessionStoreEntry[];
  projectKey?: string;
}

async function perform(store: RunJournalSessionStore, operation: Operation): Promise<unknown> {
  const key = operation.key!;
  switch (operation.op) {
    case "append":
      await store.append(key, operation.entries!);
      return null;
    case "load":
      return await store.load(key);
    case "runId":
      return store.runId(key);
    case "listSessions":
      return await store.listSessions(operation.projectKey!);
    case "listSessionSummaries":
      return await store.listSessionSummaries(operation.projectKey!);
    case "listSubkeys":
      return await store.listSubkeys(key);
    case "delete":
      await store.delete(key);
      return null;
    default:
      throw new Error(`unknown operation ${JSON.stringify(operation.op)}`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { address: { type: "string" }, namespace: { type: "string" } } });
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const operations = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Operation[];
  const client = new JournalClient({ address: values.address!, timeoutMs: 10_000 });
  try {
    const store = new RunJournalSessionStore(client, { namespace: values.namespace! });
    const results = [];
    for (const operation of operations) results.push(await perform(store, operation));
    process.stdout.write(JSON.stringify(results));
  } finally {
    client.close();
  }
}

await main();
