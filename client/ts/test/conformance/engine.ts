/**
 * The TypeScript conformance runner's engine: replays one scenario of
 * conformance/scenarios (format: conformance/FORMAT.md) against one server, with
 * the raw generated stubs and protobuf-es's proto3 JSON codec only.
 */
import { randomBytes } from "node:crypto";
import { type DescMethod, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { JournalService } from "../../src/gen/runjournal/v1/journal_service_pb.js";
import { TaskService } from "../../src/gen/runjournal/v1/task_service_pb.js";
import { readExact } from "./exact-json.js";
import { checkShape } from "./shape.js";

export interface ServerEntry {
  name: string;
  backend: string;
  auth: boolean;
  address: string;
}

export interface ConformanceFile {
  scenarios_dir: string;
  servers: ServerEntry[];
  tokens: Record<string, string>;
  tenant_prefix?: string;
}

type Json = JsonValue;
type JsonObject = { [key: string]: Json };

export interface Step {
  rpc: string;
  request: JsonObject;
  metadata?: { token?: string };
  expect: { response?: Json; stream?: { items: Json[]; exact?: boolean; take?: number }; error?: { code: string; reason: string; metadata?: JsonObject } };
  save?: Record<string, string>;
  /** FORMAT.md, "Concurrent steps": once `after` messages arrived, `steps` replay beside the open stream. */
  during?: { after: number; steps: Step[] };
}

export interface Scenario {
  name: string;
  description: string;
  requires?: { auth?: boolean; backends?: string[] };
  steps: Step[];
}

export function loadScenario(path: string): Scenario {
  try {
    const value = readExact(path);
    checkShape(value);
    return value as unknown as Scenario;
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}

/** Whether the scenario runs on this server (its `requires`). */
export function applies(scenario: Scenario, server: ServerEntry): boolean {
  const req = scenario.requires ?? {};
  if (req.auth !== undefined && req.auth !== server.auth) return false;
  if (req.backends !== undefined && !req.backends.includes(server.backend)) return false;
  return true;
}

const METHODS = new Map<string, { service: typeof JournalService | typeof TaskService; method: DescMethod }>();
for (const service of [JournalService, TaskService]) {
  for (const method of service.methods) {
    const entry = { service, method };
    METHODS.set(method.name, entry);
    METHODS.set(`${service.typeName}/${method.name}`, entry);
  }
}

/** gRPC's upper-case name of a status code ("FailedPrecondition" -> "FAILED_PRECONDITION"). */
export function codeName(code: Code): string {
  return Code[code]!.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

export class Mismatch extends Error {}

const PLACEHOLDER = /\$\{([^}]*)\}/g;

function substitute(value: Json, vars: Map<string, Json>, where: string): Json {
  if (typeof value === "string") {
    const whole = /^\$\{([^}]*)\}$/.exec(value);
    if (whole && whole[1] !== "any") return lookup(whole[1]!, vars, where);
    return value.replace(PLACEHOLDER, (text, name: string) => {
      if (name === "any") return text;
      const found = lookup(name, vars, where);
      return typeof found === "string" ? found : JSON.stringify(found);
    });
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, vars, where));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, vars, where)]));
  }
  return value;
}

function lookup(name: string, vars: Map<string, Json>, where: string): Json {
  const found = vars.get(name);
  if (found === undefined) throw new Mismatch(`${where}: unknown placeholder \${${name}}`);
  return found;
}

function isDefault(value: Json): boolean {
  if (value === false || value === 0 || value === "0" || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return value !== null && typeof value === "object" && Object.keys(value).length === 0;
}

/** The subset rule of FORMAT.md: throws a Mismatch naming the path, expected and actual values. */
export function match(expected: Json, actual: Json | undefined, path: string): void {
  const fail = (): never => {
    throw new Mismatch(
      `at ${path || "(root)"}: expected ${JSON.stringify(expected)}, actual ${actual === undefined ? "absent" : JSON.stringify(actual)}`,
    );
  };
  const join = (key: string | number) => (path ? `${path}.${key}` : String(key));
  if (expected === "${any}") {
    if (actual === undefined) fail();
    return;
  }
  if (expected === null) {
    if (actual !== undefined && actual !== null) fail();
    return;
  }
  if (actual === undefined) {
    if (!isDefault(expected)) fail();
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) fail();
    expected.forEach((item, i) => match(item, (actual as Json[])[i], join(i)));
    return;
  }
  if (typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) fail();
    for (const [key, value] of Object.entries(expected)) {
      match(value, (actual as JsonObject)[key], join(key));
    }
    return;
  }
  if (typeof expected === "number") {
    if (actual === expected) return;
    if (typeof actual === "string" && actual === String(expected)) return;
    fail();
  }
  if (actual !== expected) fail();
}

function pathValue(root: Json, path: string): Json | undefined {
  let node: Json | undefined = root;
  for (const part of path.split(".")) {
    if (Array.isArray(node)) node = /^[0-9]+$/.test(part) ? node[Number(part)] : undefined;
    else if (node !== null && typeof node === "object") node = (node as JsonObject)[part];
    else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

export interface ReplayOptions {
  transport: Transport;
  server: ServerEntry;
  tokens: Record<string, string>;
  timeoutMs?: number;
  /** The run id of this replay; a fresh `cf-` + 16 hex digits by default. */
  runId?: string;
}

/** Replays a scenario; resolves when every step matched, else throws naming scenario, step, path, expected and actual. */
export async function replay(scenario: Scenario, options: ReplayOptions): Promise<void> {
  const vars = new Map<string, Json>([["run", options.runId ?? `cf-${randomBytes(8).toString("hex")}`]]);
  const clients = new Map<unknown, Record<string, (...args: unknown[]) => unknown>>();
  for (const [index, rawStep] of scenario.steps.entries()) {
    const where = `scenario ${scenario.name}, step ${index} (${rawStep.rpc})`;
    try {
      await runStep(rawStep, vars, where, options, clients);
    } catch (err) {
      if (err instanceof Mismatch) throw new Mismatch(`${where} [${options.server.name}]: ${err.message.replace(`${where}: `, "")}`);
      throw err;
    }
  }
}

async function runStep(
  rawStep: Step,
  vars: Map<string, Json>,
  where: string,
  options: ReplayOptions,
  clients: Map<unknown, Record<string, (...args: unknown[]) => unknown>>,
): Promise<void> {
  const entry = METHODS.get(rawStep.rpc);
  if (entry === undefined) throw new Mismatch(`unknown rpc ${rawStep.rpc}`);
  const { service, method } = entry;
  const request = substitute(rawStep.request, vars, where);
  const expect = substitute(rawStep.expect as Json, vars, where) as Step["expect"];
  const metadata = substitute((rawStep.metadata ?? {}) as Json, vars, where) as { token?: string };
  const headers: Record<string, string> = {};
  if (options.server.auth) {
    const which = metadata.token ?? "worker";
    if (which !== "none") {
      const token = options.tokens[which];
      if (token === undefined) throw new Mismatch(`no token named ${which}`);
      headers["authorization"] = `Bearer ${token}`;
    }
  }
  let client = clients.get(service);
  if (client === undefined) {
    client = createClient(service, options.transport) as unknown as Record<string, (...args: unknown[]) => unknown>;
    clients.set(service, client);
  }
  const message = fromJson(method.input, request);
  const take = expect.stream?.take;
  const during = duringOf(rawStep, take, vars, where, options, clients);
  const abort = new AbortController();
  const callOptions = { headers, timeoutMs: options.timeoutMs ?? 10_000, signal: abort.signal };
  let actual: Json;
  try {
    if (method.methodKind === "server_streaming") {
      actual = await readStream(client[method.localName]!(message, callOptions) as AsyncIterable<never>, method, take, abort, during);
    } else if (method.methodKind === "unary") {
      actual = toJson(method.output, (await client[method.localName]!(message, callOptions)) as never);
    } else {
      throw new Mismatch(`rpc ${rawStep.rpc} is not unary or server-streaming`);
    }
  } catch (thrown) {
    if (thrown instanceof Mismatch) throw thrown;
    const err = ConnectError.from(thrown);
    if (expect.error === undefined) {
      throw new Mismatch(`expected success, got ${codeName(err.code)}: ${err.rawMessage}`);
    }
    checkError(expect.error, err);
    return;
  }
  if (expect.error !== undefined) {
    throw new Mismatch(`expected error ${expect.error.code} ${expect.error.reason}, got success ${JSON.stringify(actual)}`);
  }
  if (expect.stream !== undefined) {
    const items = actual as Json[];
    const want = expect.stream.items;
    if (take !== undefined && take < want.length) {
      throw new Mismatch(`at (stream length): expect.stream.take ${take} is fewer than its ${want.length} items`);
    }
    if (expect.stream.exact ? items.length !== want.length : items.length < want.length) {
      throw new Mismatch(`at (stream length): expected ${expect.stream.exact ? "" : "at least "}${want.length} items, actual ${items.length}`);
    }
    want.forEach((item, i) => match(item, items[i], String(i)));
  } else if (expect.response !== undefined) {
    if (Array.isArray(actual)) throw new Mismatch("expected a response, the rpc is streaming");
    match(expect.response, actual, "");
  } else {
    throw new Mismatch("the step expects none of response, stream, error");
  }
  for (const [name, path] of Object.entries(rawStep.save ?? {})) {
    const value = pathValue(actual, path);
    if (value === undefined) throw new Mismatch(`save ${name}: path ${path} finds nothing`);
    vars.set(`save.${name}`, value);
  }
}

/**
 * Every message of a server stream as JSON; with `take`, the first `take` messages, then the call is
 * cancelled (Watch and WatchRuns never end by themselves). A failure before the first message is the
 * call's error (thrown as is); an end, or a failure, after fewer than `take` is a Mismatch.
 */
async function readStream(
  stream: AsyncIterable<never>,
  method: { output: Parameters<typeof toJson>[0] },
  take: number | undefined,
  abort: AbortController,
  during?: { after: number; run: () => Promise<void> },
): Promise<Json[]> {
  const items: Json[] = [];
  const cut = (why: string) =>
    new Mismatch(`expected ${take} stream messages before cancelling, the stream ${why} after ${items.length}: ${JSON.stringify(items)}`);
  try {
    for await (const item of stream) {
      items.push(toJson(method.output, item));
      if (during !== undefined && items.length === during.after) await during.run();
      if (take !== undefined && items.length >= take) return items;
    }
  } catch (thrown) {
    if (take === undefined || items.length === 0 || thrown instanceof Mismatch) throw thrown;
    throw cut(`failed ${codeName(ConnectError.from(thrown).code)}`);
  } finally {
    abort.abort();
  }
  if (take !== undefined) throw cut("ended");
  return items;
}

/** When and what the steps of a step's `during` replay (undefined without one). */
function duringOf(
  step: Step,
  take: number | undefined,
  vars: Map<string, Json>,
  where: string,
  options: ReplayOptions,
  clients: Map<unknown, Record<string, (...args: unknown[]) => unknown>>,
): { after: number; run: () => Promise<void> } | undefined {
  const during = step.during;
  if (during === undefined) return undefined;
  if (take === undefined || during.after < 1 || during.after >= take) {
    throw new Mismatch("during needs expect.stream.take, and 1 <= during.after < take");
  }
  const run = async () => {
    for (const [index, inner] of during.steps.entries()) {
      const innerWhere = `${where}, during step ${index} (${inner.rpc})`;
      if (inner.during !== undefined) throw new Mismatch(`${innerWhere}: a step of during has no during of its own`);
      try {
        await runStep(inner, vars, innerWhere, options, clients);
      } catch (err) {
        if (err instanceof Mismatch) throw new Mismatch(`${innerWhere}: ${err.message}`);
        throw err;
      }
    }
  };
  return { after: during.after, run };
}

function checkError(expected: NonNullable<Step["expect"]["error"]>, err: ConnectError): void {
  const code = codeName(err.code);
  const info = err.findDetails(ErrorInfoSchema)[0];
  if (code !== expected.code || info === undefined || info.domain !== "runjournal.dev" || info.reason !== expected.reason) {
    throw new Mismatch(
      `at (error): expected ${expected.code} ${expected.reason}, actual ${code} ${info ? `${info.domain} ${info.reason}` : "(no ErrorInfo)"}: ${err.rawMessage}`,
    );
  }
  if (expected.metadata !== undefined) match(expected.metadata, info.metadata as JsonObject, "metadata");
}
