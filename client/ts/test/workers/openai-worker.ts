/**
 * A TypeScript agent worker on the OpenAI adapter: the loop of tests/adapters/workers/openai_agent.json
 * through the real `openai` SDK (the twin of tests/adapters/workers/openai_worker.py).
 *
 *   node client/ts/build/test/workers/openai-worker.js --journal HOST:PORT --model-url URL --agent PATH
 *     --run RUN_ID (--create | --claim WORKER_ID) [--stream] [--die-after-results N]
 *
 * Every step is decided from the folded run alone: calls of the pending batch first, then a model call
 * built by `requestParams`, a follow-up after the turns the agent lists, or the terminal record.
 * `--die-after-results N` SIGKILLs the process right after the N-th tool result it appended.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import type { ResponseCreateParamsBase } from "openai/resources/responses/responses";
import * as oai from "../../src/adapters/openai.js";
import { JournalClient, Role, Run, type RunState } from "../../src/index.js";

interface Agent {
  model: string;
  instructions: string;
  tools: NonNullable<ResponseCreateParamsBase["tools"]>;
  reasoning: ResponseCreateParamsBase["reasoning"];
  max_output_tokens: number;
  store: boolean;
  include: NonNullable<ResponseCreateParamsBase["include"]>;
  question: string;
  follow_ups: Record<string, string>;
  tool_outputs: Record<string, string>;
}

function endedTurn(state: RunState): boolean {
  const last = state.conversation[state.conversation.length - 1];
  return last !== undefined && last.role === Role.ASSISTANT;
}

async function loop(run: Run, model: OpenAI, agent: Agent, stream: boolean, dieAfter: number): Promise<void> {
  const params = {
    model: agent.model,
    instructions: agent.instructions,
    tools: agent.tools,
    reasoning: agent.reasoning,
    max_output_tokens: agent.max_output_tokens,
    store: agent.store,
    include: agent.include,
  };
  let written = 0;
  for (;;) {
    const state = await run.fold();
    if (state.pending !== undefined) {
      const calls = oai.pendingCalls(state);
      if (calls.length === 0) return; // only calls waiting for a person
      for (const { call } of calls) {
        const output = agent.tool_outputs[call.name]!;
        await run.append(oai.toolResultRecord({ type: "function_call_output", call_id: call.call_id, output }));
        written += 1;
        if (written === dieAfter) process.kill(process.pid, "SIGKILL");
      }
      continue;
    }
    if (endedTurn(state)) {
      const followUp = agent.follow_ups[String(state.counters?.llmCalls ?? 0n)];
      if (followUp === undefined) {
        await run.terminal("completed");
        return;
      }
      await run.user(oai.userBlocks(followUp));
      continue;
    }
    const request = { ...params, ...oai.requestParams(state, { instructions: agent.instructions }) };
    const response = stream
      ? await model.responses.stream(request).finalResponse()
      : await model.responses.create(request);
    await run.append(oai.assistantRecord(response, { iteration: state.nextIteration }));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      journal: { type: "string" },
      "model-url": { type: "string" },
      agent: { type: "string" },
      run: { type: "string" },
      create: { type: "boolean", default: false },
      claim: { type: "string" },
      stream: { type: "boolean", default: false },
      "die-after-results": { type: "string", default: "0" },
    },
  });
  const agent = JSON.parse(readFileSync(values.agent!, "utf8")) as Agent;
  const runId = values.run!;
  const model = new OpenAI({
    baseURL: `${values["model-url"]!}/v1`,
    apiKey: "sk-fake",
    maxRetries: 0,
    defaultHeaders: { "x-runjournal-run": runId },
  });
  const client = new JournalClient({ address: values.journal!, timeoutMs: 30_000 });
  try {
    const fingerprint = oai.fingerprint(agent);
    const run = values.create
      ? await Run.create(client, runId, fingerprint, oai.userBlocks(agent.question))
      : await Run.claim(client, runId, values.claim!, fingerprint, { reason: "hand-off" });
    await loop(run, model, agent, values.stream!, Number(values["die-after-results"]));
  } finally {
    client.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
