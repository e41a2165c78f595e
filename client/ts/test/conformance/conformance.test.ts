/**
 * The TypeScript conformance runner: replays conformance/scenarios/*.json against
 * every server of $RUNJOURNAL_CONFORMANCE (started by `python conformance/servers.py -- ...`),
 * one test per (scenario, server), plus the self-test that a wrong expectation fails.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { applies, type ConformanceFile, loadScenario, Mismatch, replay, type ServerEntry } from "./engine.js";

const file = process.env["RUNJOURNAL_CONFORMANCE"];
const inCi = process.env["CI"] === "true";
const repoRoot = resolve(import.meta.dirname, "../../../../..");

if (file === undefined) {
  test("conformance servers", { skip: inCi ? false : "RUNJOURNAL_CONFORMANCE is not set" }, () => {
    assert.fail("RUNJOURNAL_CONFORMANCE is not set; run under `python conformance/servers.py -- ...`");
  });
} else {
  const config = JSON.parse(readFileSync(file, "utf8")) as ConformanceFile;
  const dir = config.scenarios_dir;
  const scenarios = readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => loadScenario(join(dir, name)));
  const transports = new Map<string, ReturnType<typeof createGrpcTransport>>();
  const transportOf = (server: ServerEntry) => {
    let transport = transports.get(server.name);
    if (transport === undefined) {
      transport = createGrpcTransport({ baseUrl: `http://${server.address}` });
      transports.set(server.name, transport);
    }
    return transport;
  };

  test("every scenario file is named after itself", () => {
    assert.ok(scenarios.length > 0, `no scenarios in ${dir}`);
    for (const name of readdirSync(dir).filter((n) => n.endsWith(".json"))) {
      assert.equal(loadScenario(join(dir, name)).name, name.replace(/\.json$/, ""));
    }
  });

  for (const server of config.servers) {
    describe(`conformance ${server.name}`, { concurrency: 4 }, () => {
      for (const scenario of scenarios) {
        test(`${scenario.name} [${server.name}]`, { skip: !applies(scenario, server) && "not for this server" }, async () => {
          await replay(scenario, { transport: transportOf(server), server, tokens: config.tokens });
        });
      }
    });
  }

  test("self-test: a wrong expectation fails, naming scenario, step, path, expected and actual", async () => {
    const scenario = loadScenario(join(repoRoot, "conformance/selftest/wrong_expectation.json"));
    const server = config.servers.find((s) => applies(scenario, s));
    assert.ok(server, "no server fits the self-test scenario");
    await assert.rejects(
      replay(scenario, { transport: transportOf(server), server, tokens: config.tokens }),
      (err: unknown) => {
        assert.ok(err instanceof Mismatch, `not a mismatch: ${String(err)}`);
        for (const part of ["wrong_expectation", "step 1", "lastSeq", "7", '"2"']) {
          assert.ok(err.message.includes(part), `message ${JSON.stringify(err.message)} lacks ${part}`);
        }
        return true;
      },
    );
  });

  test("self-test: a stream that ends before its take fails, saying so", async () => {
    const scenario = loadScenario(join(repoRoot, "conformance/selftest/short_take.json"));
    const server = config.servers.find((s) => applies(scenario, s));
    assert.ok(server, "no server fits the self-test scenario");
    await assert.rejects(
      replay(scenario, { transport: transportOf(server), server, tokens: config.tokens }),
      (err: unknown) => {
        assert.ok(err instanceof Mismatch, `not a mismatch: ${String(err)}`);
        for (const part of ["short_take", "step 1", "expected 3 stream messages before cancelling, the stream ended after 1"]) {
          assert.ok(err.message.includes(part), `message ${JSON.stringify(err.message)} lacks ${part}`);
        }
        return true;
      },
    );
  });
}
