/**
 * A TypeScript worker of the Anthropic hand-off: the tool loop of tests/fake_model/anthropic_loop.py through
 * `@anthropic-ai/sdk` (the twin of tests/adapters/workers/anthropic_worker.py; same arguments, same tools).
 *
 *   node client/ts/build/test/workers/anthropic-worker.js --journal HOST:PORT --model-url URL --run RUN_ID
 *     (--create [--die-after-results N] | --resume WORKER_ID)
 *
 * `--create` creates the run and runs the loop as any SDK loop does (the conversation in memory, every call
 * and result recorded through the adapter); with `--die-after-results N` it SIGKILLs itself right after the
 * N-th tool result of a turn is stored. `--resume` claims the run, runs the unanswered calls and rebuilds the
 * conversation from the fold with `requestMessages`. Every request carries `x-runjournal-run`. Exits 0 when
 * the run completed.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import type { BetaMessage, BetaMessageParam } from "@anthropic-ai/sdk/resources/beta/messages";

type UserContent = Extract<BetaMessageParam, { role: "user" }>["content"];
import * as adapter from "../../src/adapters/anthropic.js";
import { JournalClient, Run } from "../../src/index.js";

const FIXTURES = new URL("../../../../../testdata/provider_content/anthropic/", import.meta.url);
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")) as Record<string, unknown>;

// The same call as tests/fake_model/anthropic_loop.py and the Python worker.
const CALL = {
  model: "claude-fake-4-5",
  max_tokens: 4096,
  system: "You compare revenue figures with exchange rates. Quote figures exactly and name their source.",
  tools: [
    {
      name: "get_exchange_rate",
      description: "The reference rate between two currencies on a date",
      input_schema: {
        type: "object" as const,
        properties: { base: { type: "string" }, quote: { type: "string" }, date: { type: "string" } },
        required: ["base", "quote"],
      },
    },
    {
      name: "render_revenue_chart",
      description: "A chart of revenue by month",
      input_schema: {
        type: "object" as const,
        properties: {
          quarter: { type: "string" },
          months: { type: "array", items: { type: "string" } },
          currency: { type: "string" },
        },
      },
    },
    { type: "web_search_20250305" as const, name: "web_search" as const, max_uses: 2 },
  ],
  thinking: { type: "enabled" as const, budget_tokens: 2048 },
  context_management: { edits: [{ type: "compact_20260112" as const, pause_after_compaction: true }] },
};
const BETAS = ["compact-2026-01-12"];
const QUESTION = "Compare Q3 revenue in the report with today's EUR/USD rate and the latest news.";
const STREAMED_ITERATION = 2;

const prompt = (): object[] => [fixture("document"), fixture("text_cache_control"), { type: "text", text: QUESTION }];

function toolOutput(name: string): string | object[] {
  if (name === "get_exchange_rate") return "1 EUR = 1.0842 USD (ECB reference rate, 2025-10-01)";
  if (name === "render_revenue_chart") return [fixture("image"), { type: "text", text: "Q3 revenue by month, EUR" }];
  throw new Error(`no tool ${name}`);
}

type ToolResult = { type: "tool_result"; tool_use_id: string; content: string | object[] };

async function start(journal: JournalClient, runId: string, resume: string | undefined): Promise<[Run, BetaMessageParam[], number]> {
  const fingerprint = adapter.fingerprint(CALL, { maxIterations: 10 });
  if (resume === undefined) {
    const run = await Run.create(journal, runId, fingerprint, adapter.userBlocks(prompt()));
    return [run, [{ role: "user", content: prompt() as UserContent }], 1];
  }
  const run = await Run.claim(journal, runId, resume, fingerprint, { reason: "resume after a crash" });
  let state = run.state!;
  if (state.pending !== undefined) {
    for (const call of state.pending.calls) {
      if (call.answered) continue;
      const result: ToolResult = { type: "tool_result", tool_use_id: call.toolUse!.id, content: toolOutput(call.toolUse!.name) };
      await run.append(adapter.toolResultRecord(result as never));
    }
    state = await run.fold();
  }
  const request = adapter.requestMessages(state, { system: CALL.system, records: await adapter.readRecords(journal, runId) });
  return [run, request.messages as unknown as BetaMessageParam[], state.nextIteration];
}

async function work(journal: JournalClient, model: Anthropic, runId: string, resume: string | undefined, dieAfter: number): Promise<void> {
  let [run, messages, iteration] = await start(journal, runId, resume);
  for (;;) {
    const params = { ...CALL, messages, betas: BETAS };
    const message: BetaMessage =
      iteration === STREAMED_ITERATION
        ? await model.beta.messages.stream(params).finalMessage()
        : await model.beta.messages.create(params);
    await run.append(adapter.assistantRecord(message, { iteration }));
    iteration += 1;
    if (message.stop_reason === "tool_use") {
      const results: ToolResult[] = [];
      for (const block of message.content) {
        if (block.type !== "tool_use") continue;
        const result: ToolResult = { type: "tool_result", tool_use_id: block.id, content: toolOutput(block.name) };
        await run.append(adapter.toolResultRecord(result as never));
        results.push(result);
        if (results.length === dieAfter) process.kill(process.pid, "SIGKILL");
      }
      messages = [...messages, { role: "assistant", content: message.content }, { role: "user", content: results as UserContent }];
    } else if (message.stop_reason === "pause_turn") {
      messages = [...messages, { role: "assistant", content: message.content }];
    } else if (message.stop_reason === "compaction") {
      // The API takes the conversation from the compaction block on.
      const first = message.content.findIndex((block) => block.type === "compaction");
      messages = [{ role: "assistant", content: message.content.slice(first) }];
    } else if (message.stop_reason === "end_turn") {
      await run.terminal("completed");
      return;
    } else {
      throw new Error(`unexpected stop_reason ${message.stop_reason}: ${JSON.stringify(message)}`);
    }
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      journal: { type: "string" },
      "model-url": { type: "string" },
      run: { type: "string" },
      create: { type: "boolean", default: false },
      resume: { type: "string" },
      "die-after-results": { type: "string", default: "0" },
    },
  });
  if (!values.journal || !values["model-url"] || !values.run || values.create === (values.resume !== undefined)) {
    throw new Error("usage: --journal ADDR --model-url URL --run RUN (--create [--die-after-results N] | --resume WORKER)");
  }
  const model = new Anthropic({
    apiKey: "fake-key",
    baseURL: values["model-url"],
    defaultHeaders: { "x-runjournal-run": values.run },
    maxRetries: 0,
  });
  const journal = new JournalClient({ address: values.journal });
  try {
    await work(journal, model, values.run, values.resume, Number(values["die-after-results"]));
  } finally {
    journal.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
