/**
 * One worker of the cross-language hand-off test (conformance/handoff/README.md):
 *
 *   node client/ts/dist/handoff-step.js --address HOST:PORT --run RUN_ID --plan PATH --from-step N --to-step M
 *
 * Writes steps N..M (inclusive, 0-based) of the plan into the run with the TypeScript
 * client: step 0 creates the run (its meta at seq 1, claim token 1); a later start
 * first claims the run with the worker id of the `workers` entry whose `from_step`
 * is N, the plan's fingerprint, force false and reason "handoff". One Append per step.
 * Exits 0, or prints the error to stderr and exits 1.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  assistantRecord,
  type ContentBlock,
  JournalClient,
  type JournalRecord,
  makeFingerprint,
  type StopReasonLike,
  type TerminalReasonLike,
  terminalRecord,
  textBlock,
  thinkingBlock,
  toolResultRecord,
  toolUseBlock,
  Run,
} from "./index.js";

interface PlanConfig {
  provider: string;
  model: string;
  system_prompt: string;
  thinking_mode: string;
  tools: unknown[];
  max_tokens?: number;
  max_iterations?: number;
}

interface Plan {
  run: { created_at: string; prompt: string; labels?: Record<string, string>; interactive?: boolean; config: PlanConfig };
  steps: Record<string, unknown>[];
  workers: { language: string; worker_id: string; from_step: number; to_step: number }[];
}

type PlanBlock = { text?: string; thinking?: { thinking: string; signature: string }; tool_use?: { id: string; name: string; input: Record<string, unknown> } };

function block(spec: PlanBlock): ContentBlock {
  const keys = Object.keys(spec);
  if (keys.length !== 1) throw new Error(`a content block has exactly one key, got ${JSON.stringify(keys)}`);
  if (spec.text !== undefined) return textBlock(spec.text);
  if (spec.thinking !== undefined) return thinkingBlock(spec.thinking.thinking, spec.thinking.signature);
  if (spec.tool_use !== undefined) return toolUseBlock(spec.tool_use.id, spec.tool_use.name, spec.tool_use.input);
  throw new Error(`unknown content block ${keys[0]}`);
}

/** The draft record of one non-meta step. */
export function stepRecord(step: Record<string, unknown>): JournalRecord {
  const kinds = Object.keys(step);
  if (kinds.length !== 1) throw new Error(`a step has exactly one key, got ${JSON.stringify(kinds)}`);
  const kind = kinds[0]!;
  const body = step[kind] as Record<string, unknown>;
  switch (kind) {
    case "assistant": {
      const usage = (body["usage"] ?? {}) as Record<string, number>;
      return assistantRecord(
        body["iteration"] as number,
        (body["content"] as PlanBlock[]).map(block),
        body["stop_reason"] as StopReasonLike,
        {
          inputTokens: usage["input_tokens"] ?? 0,
          outputTokens: usage["output_tokens"] ?? 0,
          cacheReadTokens: usage["cache_read_tokens"] ?? 0,
          cacheWriteTokens: usage["cache_write_tokens"] ?? 0,
        },
      );
    }
    case "tool_result":
      return toolResultRecord(body["tool_use_id"] as string, (body["content"] as PlanBlock[]).map(block), {
        isError: (body["is_error"] as boolean | undefined) ?? false,
      });
    case "terminal":
      return terminalRecord(body["reason"] as TerminalReasonLike, (body["message"] as string | undefined) ?? "");
    default:
      throw new Error(`step kind ${kind} is not in the plan format`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      address: { type: "string" },
      run: { type: "string" },
      plan: { type: "string" },
      "from-step": { type: "string" },
      "to-step": { type: "string" },
    },
    strict: true,
  });
  for (const flag of ["address", "run", "plan", "from-step", "to-step"] as const) {
    if (values[flag] === undefined) throw new Error(`--${flag} is required`);
  }
  const from = Number(values["from-step"]);
  const to = Number(values["to-step"]);
  const plan = JSON.parse(readFileSync(values.plan!, "utf8")) as Plan;
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || to >= plan.steps.length) {
    throw new Error(`bad step range ${values["from-step"]}..${values["to-step"]} for ${plan.steps.length} steps`);
  }
  const config = plan.run.config;
  const fingerprint = makeFingerprint({
    provider: config.provider,
    model: config.model,
    systemPrompt: config.system_prompt,
    thinkingMode: config.thinking_mode,
    tools: config.tools,
    maxTokens: config.max_tokens ?? 0,
    maxIterations: config.max_iterations ?? 0,
  });
  const runId = values.run!;
  const client = new JournalClient({ address: values.address! });
  try {
    let run: Run;
    let first = from;
    if (from === 0) {
      if (!("meta" in plan.steps[0]!)) throw new Error("step 0 must be meta");
      run = await Run.create(client, runId, fingerprint, plan.run.prompt, {
        createdAt: new Date(plan.run.created_at),
        labels: plan.run.labels ?? {},
        interactive: plan.run.interactive ?? false,
      });
      first = 1;
    } else {
      const worker = plan.workers.find((w) => w.from_step === from);
      if (worker === undefined) throw new Error(`no worker of the plan starts at step ${from}`);
      run = await Run.claim(client, runId, worker.worker_id, fingerprint, { force: false, reason: "handoff" });
    }
    for (let index = first; index <= to; index++) {
      await run.append(stepRecord(plan.steps[index]!));
    }
  } finally {
    client.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`handoff-step: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
