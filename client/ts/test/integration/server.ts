/**
 * Starts a real runjournal server for a test: `$RUNJOURNAL_PYTHON -m runjournal_server.cli serve
 * --listen 127.0.0.1:0 --data-dir <tmp>`, reading its first stdout line "runjournal listening on ADDR".
 * Without a server the tests skip, except under CI=true, where they fail.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { JournalClient } from "../../src/index.js";

export const PYTHON = process.env["RUNJOURNAL_PYTHON"] ?? "/work/main/.venv/bin/python";

/** Why the server cannot run here (to skip the tests), or undefined; under CI it never skips. */
export function unavailable(): string | undefined {
  if (existsSync(PYTHON) || process.env["CI"] === "true") return undefined;
  return `no Python for the server at ${PYTHON} (set RUNJOURNAL_PYTHON)`;
}

export interface Server {
  address: string;
  dataDir: string;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** token name -> [secret, scopes]; turns token auth on. */
  tokens?: Record<string, { token: string; scopes: string[]; prefixes?: string[] }>;
  extraArgs?: string[];
}

export async function startServer(options: ServerOptions = {}): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "runjournal-ts-"));
  const dataDir = join(dir, "data");
  const args = ["-m", "runjournal_server.cli", "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...(options.extraArgs ?? [])];
  if (options.tokens !== undefined) {
    const file = join(dir, "tokens.toml");
    writeFileSync(
      file,
      Object.entries(options.tokens)
        .map(
          ([name, t]) =>
            `[[tokens]]\nname = "${name}"\nsha256 = "${createHash("sha256").update(t.token).digest("hex")}"\n` +
            `run_id_prefixes = ${JSON.stringify(t.prefixes ?? [""])}\nscopes = ${JSON.stringify(t.scopes)}\n\n`,
        )
        .join(""),
    );
    args.push("--auth-tokens-file", file);
  }
  const child: ChildProcess = spawn(PYTHON, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start in 30 s:\n${stderr}`)), 30_000);
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      clearTimeout(timer);
      const match = /^runjournal listening on (\S+)/.exec(line);
      if (match) resolve(match[1]!);
      else reject(new Error(`unexpected first line ${JSON.stringify(line)}:\n${stderr}`));
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code}:\n${stderr}`));
    });
  });
  return {
    address,
    dataDir,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A real server and a client of it with 10 s calls: what most integration suites start with. */
export interface Live {
  server: Server;
  client: JournalClient;
}

export async function startWithClient(): Promise<Live> {
  const server = await startServer();
  return { server, client: new JournalClient({ address: server.address, timeoutMs: 10_000 }) };
}

/** Closes the client and stops the server; either may be missing (a `before` that failed). */
export async function stopWithClient(live: Partial<Live>): Promise<void> {
  live.client?.close();
  await live.server?.stop();
}

/** Runs `work` against a server and client of its own, stopped whatever happens. */
export async function withServer(work: (client: JournalClient) => Promise<void>): Promise<void> {
  const live = await startWithClient();
  try {
    await work(live.client);
  } finally {
    await stopWithClient(live);
  }
}
