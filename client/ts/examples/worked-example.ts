/**
 * A worked example: a run that crashes, is resumed, waits for people, and finishes
 * (the TypeScript twin of examples/worked_example.py).
 *
 * Start a server (`runjournal serve`), then, from client/ts:
 *
 *     npx tsc -p tsconfig.test.json && node build/examples/worked-example.js --address 127.0.0.1:50051
 *
 * Three workers take turns on one run, each with its own client as if they were
 * separate processes:
 *
 * 1. worker-a creates the run, records a model turn asking for two tool calls and
 *    the result of the first one, then crashes.
 * 2. worker-b claims the run, sees the pending batch (one of two calls answered),
 *    finishes it and records the next turn, which asks a person a question and
 *    wants to deploy. It defers the question to a person and the deploy to an
 *    operator's decision (`needsApproval`), and suspends.
 * 3. People read the inbox, answer the question and approve the deploy.
 * 4. worker-c claims the run, runs the approved deploy and finishes.
 *
 * The workers speak `@anthropic-ai/sdk`'s objects through `@runjournal/client/adapters/anthropic`: each
 * model turn is the `Message` that `client.messages.create` returned (written out here, so the example needs
 * no API key), recorded with `assistantRecord`; each result is the `tool_result` block the loop sends back,
 * recorded with `toolResultRecord`; a worker that resumes rebuilds the next call's `messages` from the fold
 * with `requestMessages`.
 *
 * Every step checks what the server reports; the program exits 1 on anything
 * unexpected. Each execution uses a new run id.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type { Message, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages";
import * as adapter from "../src/adapters/anthropic.js";
import {
  AlreadyAnsweredError,
  AlreadyDecidedError,
  Decision,
  JournalClient,
  Run,
  RunClaimedError,
  RunJournalError,
  type RunState,
  RunStatus,
  toolResultRecord,
  WaitingFor,
} from "../src/index.js";

const SYSTEM_PROMPT = "You are a release assistant. Check the weather and the news, then ask before deploying.";
const TOOLS = [
  { name: "weather", description: "Weather for a city", input_schema: { type: "object" } },
  { name: "news", description: "Headlines for a topic", input_schema: { type: "object" } },
  { name: "deploy", description: "Deploy a release", input_schema: { type: "object" } },
  { name: "ask_person", description: "Ask a person a question", input_schema: { type: "object" } },
];
/** The arguments of every `client.messages.create({ ...CALL, messages })` of the run. */
const CALL = { model: "claude-sonnet-4-5", max_tokens: 4096, system: SYSTEM_PROMPT, tools: TOOLS };
const FINGERPRINT = adapter.fingerprint(CALL, { maxIterations: 10 });

/** A model turn as `client.messages.create` returns it. */
function answer(content: object[], stopReason: string, inputTokens: number, outputTokens: number): Message {
  return {
    id: "msg_example", type: "message", role: "assistant", model: CALL.model, content, stop_reason: stopReason,
    stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: outputTokens },
  } as unknown as Message;
}
const toolUse = (id: string, name: string, input: object) => ({ type: "tool_use", id, name, input });
/** The `tool_result` block a loop sends back for a call. */
const result = (toolUseId: string, content: string): ToolResultBlockParam => ({ type: "tool_result", tool_use_id: toolUseId, content });

const TURN_1 = answer(
  [
    { type: "text", text: "Let me check the weather and the news first." },
    toolUse("call_weather", "weather", { city: "Lisbon" }),
    toolUse("call_news", "news", { topic: "outages" }),
  ],
  "tool_use",
  812,
  64,
);
const TURN_2 = answer(
  [
    { type: "text", text: "All clear. I need the release notes' audience, and deploying needs a sign-off." },
    toolUse("call_ask", "ask_person", { question: "Who gets the release notes?" }),
    toolUse("call_deploy", "deploy", { release: "2.4" }),
  ],
  "tool_use",
  901,
  41,
);
const TURN_3 = answer([{ type: "text", text: "Release 2.4 is deployed." }], "end_turn", 0, 9);
const LABELS = { example: "worked" };

/** The server reported something this example does not expect. */
class Unexpected extends Error {}

function expect(condition: boolean, what: string): void {
  if (!condition) throw new Unexpected(what);
  console.log(`   ok: ${what}`);
}

function step(title: string): void {
  console.log(`\n== ${title}`);
}

const lower = (name: string | undefined) => (name ?? "?").toLowerCase();

function showPending(state: RunState): void {
  const pending = state.pending!;
  console.log(`   pending batch of iteration ${pending.iteration} (assistant at seq ${pending.assistantSeq}):`);
  for (const call of pending.calls) {
    // What the call waits for is the server's word (PendingCall.waitingFor), not worked out here.
    let where: string;
    if (call.waitingFor === WaitingFor.NOTHING) where = `answered at seq ${call.resultSeq}`;
    else if (call.waitingFor === WaitingFor.ANSWER || call.waitingFor === WaitingFor.DECISION) {
      const what = call.waitingFor === WaitingFor.DECISION ? "a decision" : "an answer";
      where = `deferred at seq ${call.deferralSeq}: waits for ${what} from '${call.deferral?.expectedAnswerer}'`;
    } else if (call.decision) {
      where = `${lower(Decision[call.decision])} by '${call.approval?.approver}' at seq ${call.approvalSeq}, not run yet`;
    } else where = "NOT answered yet";
    console.log(`     - ${call.toolUse?.id} ${call.toolUse?.name}(${call.toolUse?.inputJson}): ${where}`);
  }
}

/** What the worker sends the model next: the folded run as `messages.create`'s arguments. */
async function showNextCall(client: JournalClient, run: Run): Promise<void> {
  const state = await run.fold();
  const { messages } = adapter.requestMessages(state, { system: SYSTEM_PROMPT, records: await adapter.readRecords(client, run.runId) });
  console.log(`   the next call: client.messages.create({ ...CALL, messages }) with ${messages.length} messages:`);
  for (const message of messages) {
    const blocks = typeof message.content === "string" ? [message.content] : message.content.map((block) => block.type);
    console.log(`     - ${message.role}: ${JSON.stringify(blocks)}`);
  }
  const last = messages.at(-1)!;
  expect(
    last.role === "user" && Array.isArray(last.content) && last.content.every((block) => block.type === "tool_result"),
    "it ends with the results of every call of the last turn",
  );
}

function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").slice(0, 15);
  return `worked-example-${stamp}-${randomBytes(4).toString("hex")}`;
}

async function inboxOf(client: JournalClient) {
  const found = new Map<string, Awaited<ReturnType<typeof client.listRuns>>["runs"][number]>();
  for await (const summary of client.inbox({ labels: LABELS })) found.set(summary.runId, summary);
  return found;
}

async function workerACrashes(address: string, runId: string): Promise<void> {
  step(`1. worker-a creates run ${runId}`);
  const client = new JournalClient({ address });
  try {
    const run = await Run.create(client, runId, FINGERPRINT, "Is it a good day to ship release 2.4?", { labels: LABELS });
    console.log(`   seq 1 meta written; claim token ${run.claimToken}, next seq ${run.nextSeq}`);
    let seq = await run.append(adapter.assistantRecord(TURN_1, { iteration: 1 }));
    console.log(`   seq ${seq} assistant turn 1 asks for call_weather and call_news`);
    seq = await run.append(adapter.toolResultRecord(result("call_weather", "Sunny, 24°C")));
    console.log(`   seq ${seq} tool_result for call_weather`);
    expect(run.nextSeq === 4n, "worker-a's next record would be seq 4");
  } finally {
    client.close();
  }
  console.log("   worker-a crashes before running call_news (its client is gone)");
}

async function workerBResumesAndSuspends(address: string, runId: string): Promise<void> {
  step("2. worker-b claims the run");
  const client = new JournalClient({ address });
  try {
    const run = await Run.claim(client, runId, "worker-b", FINGERPRINT);
    console.log(`   claim token ${run.claimToken}, next seq ${run.nextSeq}`);
    const state = run.state!;
    expect(run.gate!.allowed && run.gate!.differences.length === 0, "the resume gate allows the same configuration");
    expect(state.pending !== undefined, "the claim reports a pending batch");
    showPending(state);
    expect(JSON.stringify(state.pending!.calls.map((c) => c.answered)) === "[true,false]", "one of the two calls is answered");
    console.log(`   resume reminder: ${JSON.stringify(run.resumeReminder)}`);

    step("2b. worker-a comes back and tries to write with its old token");
    const stale = toolResultRecord("call_news", "stale");
    stale.seq = run.nextSeq;
    try {
      await client.append(runId, 1n, stale);
      throw new Unexpected("a stale worker was allowed to append");
    } catch (err) {
      if (!(err instanceof RunClaimedError)) throw err;
      console.log(`   refused: ${err.reason} (claimed by '${err.claimedBy}' at token ${err.claimToken})`);
      expect(err.claimToken === run.claimToken, "the refusal names worker-b's claim");
    }

    step("2c. worker-b finishes the batch; the model asks a question and wants to deploy");
    let seq = await run.append(adapter.toolResultRecord(result("call_news", "No outages reported today.")));
    console.log(`   seq ${seq} tool_result for call_news (batch complete)`);
    await showNextCall(client, run);
    seq = await run.append(adapter.assistantRecord(TURN_2, { iteration: 2 }));
    console.log(`   seq ${seq} assistant turn 2 asks for call_ask and call_deploy`);
    const [ask, deploy] = TURN_2.content.filter((block): block is ToolUseBlock => block.type === "tool_use");
    seq = await run.append(adapter.deferralRecord(ask!, "only a person knows the audience", "release-manager"));
    console.log(`   seq ${seq} deferral of call_ask to release-manager (awaits an answer)`);
    const reason = "production deploys need an on-call sign-off";
    seq = await run.append(adapter.deferralRecord(deploy!, reason, "on-call", { needsApproval: true }));
    console.log(`   seq ${seq} deferral of call_deploy to on-call (awaits a decision)`);
    seq = await run.terminal("suspended", "waiting for people");
    console.log(`   seq ${seq} terminal: suspended`);
    const folded = await client.fold(runId);
    expect(folded.status === RunStatus.SUSPENDED, "the run is suspended");
    showPending(folded);
  } finally {
    client.close();
  }
}

async function peopleAnswerAndApprove(address: string, runId: string): Promise<void> {
  step("3. people read the inbox");
  const client = new JournalClient({ address });
  try {
    console.log(`   equivalent command line: runjournal inbox --address ${address}`);
    const inbox = await inboxOf(client);
    expect(inbox.has(runId), "the run is in the inbox");
    const calls = inbox.get(runId)!.waitingCalls;
    for (const call of calls) {
      console.log(`     - ${call.toolUseId} ${call.toolName}: ${lower(WaitingFor[call.waitingFor])} from '${call.expectedAnswerer}': ${call.reason}`);
    }
    expect(
      JSON.stringify(calls.map((c) => [c.toolUseId, c.waitingFor])) ===
        JSON.stringify([["call_ask", WaitingFor.ANSWER], ["call_deploy", WaitingFor.DECISION]]),
      "call_ask waits for an answer, call_deploy for a decision",
    );

    step("3b. the release manager answers call_ask");
    console.log(`   equivalent command line: runjournal answer ${runId} call_ask --result-file FILE --address ${address}`);
    const seq = await client.answer(runId, "call_ask", "The whole company, plus the two customers who asked for 2.4.");
    console.log(`   seq ${seq} tool_result for call_ask (remote), written by the server`);
    try {
      await client.answer(runId, "call_ask", "answering twice");
      throw new Unexpected("a second answer was accepted");
    } catch (err) {
      if (!(err instanceof AlreadyAnsweredError)) throw err;
      console.log(`   a second answer is refused: ${err.reason} at seq ${err.answeredAtSeq}`);
      expect(err.answeredAtSeq === seq, "the refusal points at the first answer");
    }

    step("3c. on-call approves call_deploy");
    console.log(`   equivalent command line: runjournal approve ${runId} call_deploy --approve --reason 'change window open' --address ${address}`);
    const approvalSeq = await client.approve(runId, "call_deploy", "approved", "on-call", { reason: "change window open" });
    console.log(`   seq ${approvalSeq} approval of call_deploy, written by the server`);
    try {
      await client.approve(runId, "call_deploy", "denied", "someone-else");
      throw new Unexpected("a second decision was accepted");
    } catch (err) {
      if (!(err instanceof AlreadyDecidedError)) throw err;
      console.log(`   a second decision is refused: ${err.reason} at seq ${err.decidedAtSeq}`);
      expect(err.decidedAtSeq === approvalSeq, "the refusal points at the first decision");
    }
    expect(!(await inboxOf(client)).has(runId), "nothing of the run waits for a person any more");
    const state = await client.fold(runId);
    expect(state.status === RunStatus.OPEN, "the run is open again");
  } finally {
    client.close();
  }
}

async function workerCFinishes(address: string, runId: string): Promise<void> {
  step("4. worker-c claims the run, runs the approved deploy and finishes");
  const client = new JournalClient({ address });
  try {
    const run = await Run.claim(client, runId, "worker-c", FINGERPRINT);
    showPending(run.state!);
    const left = run.state!.pending!.calls.filter((c) => !c.answered);
    expect(
      JSON.stringify(left.map((c) => [c.toolUse?.id, c.decision])) === JSON.stringify([["call_deploy", Decision.APPROVED]]),
      "only the approved call_deploy is left to run",
    );
    expect(run.state!.nextIteration === 3, "the run resumes at iteration 3");
    console.log(`   claim token ${run.claimToken}, next seq ${run.nextSeq}`);
    let seq = await run.append(adapter.toolResultRecord(result("call_deploy", "Release 2.4 deployed to production.")));
    console.log(`   seq ${seq} tool_result for call_deploy: worker-c ran the approved call`);
    await showNextCall(client, run);
    seq = await run.append(adapter.assistantRecord(TURN_3, { iteration: 3 }));
    console.log(`   seq ${seq} assistant turn 3 (end_turn)`);
    seq = await run.terminal("completed", "release 2.4 shipped");
    console.log(`   seq ${seq} terminal: completed`);
    const state = await run.fold();
    expect(state.status === RunStatus.COMPLETED, "the run is completed");
    const c = state.counters!;
    console.log(
      `   ${state.conversation.length} messages; ${c.llmCalls} model calls, ${c.toolCalls} tool results ` +
        `(${c.remoteToolCalls} remote), ${c.deferrals} deferrals; last seq ${state.lastSeq}`,
    );
    expect(
      c.llmCalls === 3n && c.toolCalls === 4n && c.remoteToolCalls === 1n && c.deferrals === 2n,
      "3 model calls, 4 tool results (one of them remote) and 2 deferrals",
    );

    step("5. the journal, as stored");
    const kinds: string[] = [];
    for await (const item of client.read(runId)) {
      const kind = item.record.payload.case ?? "unknown";
      kinds.push(kind);
      console.log(`   seq ${String(item.seq).padStart(2)} ${kind.padEnd(12)} ${String(item.storedLine.length).padStart(4)} bytes`);
    }
    const expectedKinds = [
      "meta", "assistant", "toolResult", "claim", "toolResult", "assistant", "deferral",
      "deferral", "terminal", "toolResult", "approval", "claim", "toolResult", "assistant", "terminal",
    ];
    expect(JSON.stringify(kinds) === JSON.stringify(expectedKinds), "the journal holds exactly the records above");
    let listed: RunStatus | undefined;
    for await (const summary of client.iterRuns({ labels: LABELS })) if (summary.runId === runId) listed = summary.status;
    expect(listed !== undefined, "the run is listed under its label");
    console.log(`   listed as ${lower(RunStatus[listed!])}`);
  } finally {
    client.close();
  }
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { address: { type: "string", default: "127.0.0.1:50051" } } });
  const address = values.address!;
  const runId = newRunId();
  try {
    await workerACrashes(address, runId);
    await workerBResumesAndSuspends(address, runId);
    await peopleAnswerAndApprove(address, runId);
    await workerCFinishes(address, runId);
  } catch (err) {
    if (err instanceof Unexpected) console.error(`\nUNEXPECTED: ${err.message}`);
    else if (err instanceof RunJournalError) console.error(`\nUNEXPECTED server error: ${err.name}: ${err.message}`);
    else throw err;
    return 1;
  }
  console.log(`\nrun ${runId} completed`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main();
}
