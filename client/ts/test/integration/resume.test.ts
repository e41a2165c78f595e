/**
 * Read resumes after a real transport failure: a TCP proxy in front of a real
 * server cuts the first connection once the stream is under way.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, connect, type Socket } from "node:net";
import { test } from "node:test";
import { JournalClient, makeFingerprint, noteRecord, Run } from "../../src/index.js";
import { startServer, unavailable } from "./server.js";

const skip = unavailable();

/** A proxy to `target` that destroys its first connection after `cutAfter` bytes from the server. */
async function cuttingProxy(target: string, cutAfter: number) {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((downstream) => {
    const index = connections++;
    const upstream = connect(port, host);
    sockets.add(downstream).add(upstream);
    let sent = 0;
    downstream.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      sent += chunk.length;
      if (index === 0 && sent > cutAfter) {
        downstream.write(chunk.subarray(0, Math.max(0, chunk.length - (sent - cutAfter))));
        downstream.destroy();
        upstream.destroy();
        return;
      }
      downstream.write(chunk);
    });
    const close = () => {
      downstream.destroy();
      upstream.destroy();
    };
    downstream.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return {
    address: `127.0.0.1:${address.port}`,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test("Read resumes from the last seq after the connection is cut mid-stream", { skip }, async () => {
  const server = await startServer();
  const direct = new JournalClient({ address: server.address });
  try {
    const runId = `ts-resume-${randomBytes(5).toString("hex")}`;
    const fingerprint = makeFingerprint({ provider: "p", model: "m", systemPrompt: "", thinkingMode: "off", tools: [] });
    const run = await Run.create(direct, runId, fingerprint, "hi");
    const filler = "x".repeat(2000);
    await run.appendBatch(Array.from({ length: 200 }, (_, i) => noteRecord(`note ${i} ${filler}`)));
    const expected: bigint[] = [];
    for await (const item of direct.read(runId)) expected.push(item.seq);
    assert.equal(expected.length, 201);

    const proxy = await cuttingProxy(server.address, 150_000);
    const client = new JournalClient({ address: proxy.address, retry: { initialBackoffMs: 10, maxBackoffMs: 50 } });
    try {
      const seqs: bigint[] = [];
      for await (const item of client.read(runId)) seqs.push(item.seq);
      assert.deepEqual(seqs, expected, "every record once, in order");
      assert.ok(proxy.connections() >= 2, "the first connection was cut and a second one made");
    } finally {
      client.close();
      proxy.close();
    }
  } finally {
    direct.close();
    await server.stop();
  }
});
