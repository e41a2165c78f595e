/**
 * The TypeScript step program of the cross-language hand-off (dist/handoff-step.js)
 * against the Python reference (tests/conformance/handoff.py): the same plan
 * (conformance/handoff/plan.json) written with TypeScript at the hand-off points must
 * store, claims aside, byte-identical record bodies to the Python-only run.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { JournalClient } from "../../src/index.js";
import { PYTHON, type Server, startServer, unavailable } from "./server.js";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../../../..");
const planPath = resolve(root, "conformance/handoff/plan.json");
const stepProgram = resolve(root, "client/ts/dist/handoff-step.js");
const reference = resolve(root, "tests/conformance/handoff.py");
const inCi = process.env["CI"] === "true";
const skip =
  unavailable() ??
  (!inCi && !existsSync(planPath) ? "conformance/handoff/plan.json is not there yet" : undefined) ??
  (!inCi && !existsSync(reference) ? "tests/conformance/handoff.py is not there yet" : undefined) ??
  (!inCi && !existsSync(stepProgram) ? "dist/handoff-step.js is not built (npx tsc -p tsconfig.json)" : undefined);

type Lang = "python" | "ts";

describe("hand-off step program", { skip }, () => {
  let server: Server;
  let client: JournalClient;
  let plan: { steps: unknown[]; workers: { worker_id: string; from_step: number; to_step: number }[] };

  before(async () => {
    server = await startServer();
    client = new JournalClient({ address: server.address });
    plan = JSON.parse(readFileSync(planPath, "utf8"));
  });
  after(async () => {
    client?.close();
    await server?.stop();
  });

  async function write(runId: string, languages: Lang[]): Promise<void> {
    for (const [i, worker] of plan.workers.entries()) {
      const flags = ["--address", server.address, "--run", runId, "--plan", planPath, "--from-step", String(worker.from_step), "--to-step", String(worker.to_step)];
      if (languages[i] === "ts") await run(process.execPath, [stepProgram, ...flags]);
      else await run(PYTHON, ["-m", "tests.conformance.handoff", ...flags], { cwd: root });
    }
  }

  /** seq -> the stored body with the run id replaced, or `claim <worker>` for claims. */
  async function bodies(runId: string): Promise<string[]> {
    const out: string[] = [];
    for await (const item of client.read(runId)) {
      const line = new TextDecoder().decode(item.storedLine);
      const prefix = /^\{"crc":"[0-9a-f]{8}","rec":/.exec(line);
      assert.ok(prefix && line.endsWith("}"), line);
      const body = line.slice(prefix[0].length, -1).split(runId).join("RUN");
      out.push(item.record.payload.case === "claim" ? `${item.seq} claim ${item.record.payload.value.workerId}` : body);
    }
    return out;
  }

  for (const languages of [
    ["python", "python", "ts"],
    ["ts", "ts", "ts"],
    ["ts", "python", "python"],
  ] as Lang[][]) {
    test(`${languages.join(" -> ")} stores what python -> python -> python stores`, async () => {
      const expected = `ho-py-${randomBytes(5).toString("hex")}`;
      const actual = `ho-ts-${randomBytes(5).toString("hex")}`;
      await write(expected, ["python", "python", "python"]);
      await write(actual, languages);
      const want = await bodies(expected);
      assert.equal(want.length, plan.steps.length + plan.workers.length - 1);
      assert.deepEqual(await bodies(actual), want);
    });
  }
});
