/**
 * The OpenAI adapter through the real `openai` SDK against a fake Responses API (node http on a loopback
 * port) and a real runjournal server: each item type SDK object -> record -> request param, JSON and
 * streamed. The fake plays the conversation of testdata/provider_content/openai/ (the one
 * tests/fake_model/openai.py plays for the Python tests), chosen from the request alone, and answers 400
 * when an item it issued comes back changed, as the real API does.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import OpenAI from "openai";
import type { Response } from "openai/resources/responses/responses";
import * as oai from "../../src/adapters/openai.js";
import { JournalClient, Role, Run, type RunState } from "../../src/index.js";
import { startServer, unavailable } from "./server.js";

const skip = unavailable();
const ROOT = new URL("../../../../../", import.meta.url);
type Json = Record<string, unknown>;
const fixture = (name: string): Json =>
  JSON.parse(readFileSync(new URL(`testdata/provider_content/openai/${name}.json`, ROOT), "utf8")) as Json;
const agent = JSON.parse(readFileSync(new URL("tests/adapters/workers/openai_agent.json", ROOT), "utf8")) as Json & {
  question: string;
  follow_ups: Record<string, string>;
  tool_outputs: Record<string, string>;
};

const SCRIPT: [userText: string, outputs: number, items: string[]][] = [
  [agent.question, 0, ["reasoning", "message_commentary", "function_call", "function_call_forecast"]],
  [agent.question, 2, ["reasoning_final", "message_final_answer"]],
  [agent.follow_ups["2"]!, 0, ["compaction", "web_search_call", "message_after_compaction"]],
  [agent.follow_ups["3"]!, 0, ["message_closing"]],
];

/** A fake `POST /v1/responses`: the recorded-shape items of the script, JSON or as server-sent events. */
class FakeResponses {
  readonly requests: Json[] = [];
  private readonly issued = new Map<string, string>();
  private server?: HttpServer;
  url = "";

  constructor() {
    for (const [, , items] of SCRIPT) for (const name of items) this.issued.set(String(fixture(name)["id"]), JSON.stringify(fixture(name)));
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Json;
    this.requests.push(body);
    const input = body["input"] as Json[];
    for (const item of input) {
      const id = item["id"];
      if (typeof id === "string" && this.issued.has(id) && !deepEqual(item, JSON.parse(this.issued.get(id)!))) {
        return refuse(res, `Item '${id}' is not the item the model produced.`);
      }
    }
    const users = input.map((item, index) => [item, index] as const).filter(([item]) => item["role"] === "user");
    const [last, at] = users[users.length - 1] ?? [undefined, 0];
    const text = ((last?.["content"] as Json[] | undefined) ?? []).map((part) => part["text"]).join("");
    const outputs = input.slice(at).filter((item) => item["type"] === "function_call_output").length;
    const index = SCRIPT.findIndex(([user, count]) => user === text && count === outputs);
    if (index < 0) return refuse(res, `no answer after ${JSON.stringify(text)} with ${outputs} outputs`);
    const response = {
      id: `resp_${index}`,
      object: "response",
      created_at: 1757540000 + index,
      status: "completed",
      error: null,
      incomplete_details: null,
      model: body["model"],
      output: SCRIPT[index]![2].map(fixture),
      usage: {
        input_tokens: 1200 + 700 * index,
        input_tokens_details: { cached_tokens: 512 * index, cache_write_tokens: 64 },
        output_tokens: 150 + 10 * index,
        output_tokens_details: { reasoning_tokens: 64 },
        total_tokens: 1350 + 710 * index,
      },
    };
    if (body["stream"] !== true) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(response));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const events: Json[] = [{ type: "response.created", response: { ...response, status: "in_progress", output: [] } }];
    response.output.forEach((item, outputIndex) => {
      events.push({ type: "response.output_item.added", output_index: outputIndex, item: { ...item, ...(item["type"] === "message" ? { content: [] } : {}) } });
      if (item["type"] === "message") {
        (item["content"] as Json[]).forEach((part, contentIndex) => {
          const at = { output_index: outputIndex, item_id: item["id"], content_index: contentIndex };
          events.push({ type: "response.content_part.added", ...at, part: { ...part, text: "" } });
          events.push({ type: "response.output_text.delta", ...at, delta: part["text"] });
          events.push({ type: "response.content_part.done", ...at, part });
        });
      }
      events.push({ type: "response.output_item.done", output_index: outputIndex, item });
    });
    events.push({ type: "response.completed", response });
    res.end(events.map((event, n) => `event: ${String(event["type"])}\ndata: ${JSON.stringify({ ...event, sequence_number: n })}\n\n`).join(""));
  }
}

function refuse(res: ServerResponse, message: string): void {
  res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
}

function deepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

const PARAMS = ["model", "instructions", "tools", "reasoning", "max_output_tokens", "store", "include"] as const;

/** The agent loop, as the worker runs it; returns the SDK's responses. */
async function runLoop(run: Run, model: OpenAI, stream: boolean): Promise<Response[]> {
  const params = Object.fromEntries(PARAMS.map((name) => [name, agent[name]])) as never as Parameters<typeof oai.fingerprint>[0] & Json;
  const responses: Response[] = [];
  for (;;) {
    const state: RunState = await run.fold();
    if (state.pending !== undefined) {
      for (const { call } of oai.pendingCalls(state)) {
        await run.append(oai.toolResultRecord({ type: "function_call_output", call_id: call.call_id, output: agent.tool_outputs[call.name]! }));
      }
      continue;
    }
    const last = state.conversation[state.conversation.length - 1];
    if (last?.role === Role.ASSISTANT) {
      const followUp = agent.follow_ups[String(state.counters?.llmCalls)];
      if (followUp === undefined) return responses;
      await run.user(oai.userBlocks(followUp));
      continue;
    }
    const request = { ...params, ...oai.requestParams(state, { instructions: String(agent["instructions"]) }) } as never;
    const response: Response = stream ? await model.responses.stream(request).finalResponse() : await model.responses.create(request);
    responses.push(response);
    await run.append(oai.assistantRecord(response, { iteration: state.nextIteration }));
  }
}

test("every item type: SDK object -> record -> request param, JSON and streamed", { skip }, async () => {
  const server = await startServer();
  const fake = new FakeResponses();
  await fake.start();
  const client = new JournalClient({ address: server.address, timeoutMs: 10_000 });
  try {
    const model = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-fake", maxRetries: 0 });
    const records: string[][] = [];
    for (const stream of [false, true]) {
      const before = fake.requests.length;
      const runId = `ts-oai-${randomBytes(5).toString("hex")}`;
      const fingerprint = oai.fingerprint(Object.fromEntries(PARAMS.map((name) => [name, agent[name]])) as never);
      const run = await Run.create(client, runId, fingerprint, oai.userBlocks(agent.question));
      const responses = await runLoop(run, model, stream);
      const requests = fake.requests.slice(before);
      assert.equal(responses.length, 4);
      assert.deepEqual(requests.map((r) => r["stream"]), Array(4).fill(stream ? true : undefined));

      // SDK object -> record: every item kept, the SDK's parsed fields left out.
      const texts: string[] = [];
      for await (const item of client.read(runId)) {
        const payload = item.record.payload;
        if (payload.case !== "assistant") continue;
        for (const { block } of payload.value.content) {
          texts.push(block.case === "toolUse" ? block.value.providerJson : block.case === "opaque" ? block.value.json : "");
        }
      }
      const items = SCRIPT.flatMap(([, , names]) => names.map(fixture));
      assert.deepEqual(texts.map((text) => JSON.parse(text) as unknown), items);
      records.push(texts);

      // record -> request param: the items come back as the API sent them, in order; a reasoning item with what it produced.
      const issued = (names: string[]) => names.map(fixture);
      const outputs = ["function_call_output", "function_call_output_forecast"].map(fixture);
      assert.deepEqual((requests[1]!["input"] as Json[]).slice(1), [...issued(SCRIPT[0]![2]), ...outputs]);
      assert.deepEqual((requests[2]!["input"] as Json[]).slice(7, 9), issued(SCRIPT[1]![2]));
      // After the compaction item the request starts with it.
      assert.deepEqual((requests[3]!["input"] as Json[]).slice(0, 3), issued(SCRIPT[2]![2]));

      const state = await client.fold(runId);
      assert.equal(state.counters?.llmCalls, 4n);
      assert.equal(state.counters?.cacheReadTokens, BigInt(512 * (0 + 1 + 2 + 3)));
      assert.deepEqual(oai.inputItemTexts(state.conversation).slice(0, 3), texts.slice(6, 9));
    }
    // A streamed response makes the record an unstreamed one makes, byte for byte.
    assert.deepEqual(records[1], records[0]);
  } finally {
    client.close();
    await fake.stop();
    await server.stop();
  }
});
