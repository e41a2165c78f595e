/**
 * Canonical fingerprint hashing, so workers in every language agree byte for byte
 * (docs/fingerprint.md; vectors in testdata/fingerprint_vectors.json).
 *
 * - `systemPromptSha256`: SHA-256 of the prompt's UTF-8 bytes, lower-case hex, no
 *   normalisation of any kind. Hash the prompt before adding a resume reminder.
 * - `toolsSha256`: SHA-256 of the canonical JSON of the tool list: sorted by name
 *   (code point order), duplicate names refused; object keys sorted by code
 *   point; no whitespace; non-ASCII written as itself; numbers as ECMAScript
 *   writes a float64; bigints beyond 2**53 - 1, non-finite numbers and lone surrogates refused.
 */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { type Fingerprint, FingerprintSchema } from "./gen/runjournal/v1/records_pb.js";

/** The largest integer every JSON implementation represents exactly. */
export const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

/** A JSON value as `JSON.parse` returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

function sha256Hex(text: string): string {
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

/** Lower-case hex SHA-256 of `text` as UTF-8, with no normalisation. */
export function systemPromptSha256(text: string): string {
  checkText(text, "$");
  return sha256Hex(text);
}

/** Compares two strings by Unicode code point (not UTF-16 code unit). */
export function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function checkText(text: string, path: string): void {
  if (!text.isWellFormed()) throw new RangeError(`${path}: text is not valid Unicode (a lone surrogate)`);
}

/** The canonical JSON text of `value` (see the module comment). */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  write(value, out, "$");
  return out.join("");
}

function write(value: unknown, out: string[], path: string): void {
  if (value === null) {
    out.push("null");
  } else if (value === true || value === false) {
    out.push(String(value));
  } else if (typeof value === "string") {
    checkText(value, path);
    out.push(JSON.stringify(value));
  } else if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RangeError(`${path}: ${value} is not a JSON number`);
    // A JS number is a float64 already, written as ECMAScript writes it (1e21 stays 1e+21);
    // integers beyond 2**53 can only be refused before parsing, or as a bigint.
    out.push(Object.is(value, -0) ? "0" : JSON.stringify(value));
  } else if (typeof value === "bigint") {
    if (value > BigInt(MAX_SAFE_INTEGER) || value < -BigInt(MAX_SAFE_INTEGER)) {
      throw new RangeError(`${path}: integer ${value} is beyond 2**53 - 1 and not portable`);
    }
    out.push(value.toString());
  } else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, index) => {
      if (index) out.push(",");
      write(item, out, `${path}[${index}]`);
    });
    out.push("]");
  } else if (typeof value === "object" && value !== undefined) {
    const entries = Object.entries(value as Record<string, unknown>);
    entries.sort(([a], [b]) => compareCodePoints(a, b));
    out.push("{");
    entries.forEach(([key, item], index) => {
      if (index) out.push(",");
      checkText(key, path);
      out.push(JSON.stringify(key), ":");
      write(item, out, `${path}.${key}`);
    });
    out.push("}");
  } else {
    throw new TypeError(`${path}: ${typeof value} is not a JSON value`);
  }
}

/** The canonical JSON text of a tool list: sorted by name, duplicates refused. */
export function canonicalTools(tools: readonly unknown[]): string {
  const byName = new Map<string, unknown>();
  tools.forEach((tool, index) => {
    if (tool === null || typeof tool !== "object" || Array.isArray(tool)) {
      throw new TypeError(`tools[${index}] must be a JSON object`);
    }
    const name = (tool as Record<string, unknown>)["name"];
    if (typeof name !== "string" || name === "") {
      throw new TypeError(`tools[${index}] needs a non-empty string 'name'`);
    }
    if (byName.has(name)) {
      throw new RangeError(`tools[${index}]: duplicate tool name ${JSON.stringify(name)}; tool names must be unique`);
    }
    byName.set(name, tool);
  });
  const names = [...byName.keys()].sort(compareCodePoints);
  return canonicalJson(names.map((name) => byName.get(name)));
}

/** Lower-case hex SHA-256 of the canonical tool list's UTF-8 bytes. */
export function toolsSha256(tools: readonly unknown[]): string {
  return sha256Hex(canonicalTools(tools));
}

export interface FingerprintConfig {
  provider: string;
  model: string;
  /** The system prompt itself (only its hash is kept). */
  systemPrompt: string;
  thinkingMode: string;
  /** The tool list as given to the provider. */
  tools: readonly unknown[];
  /** 0 means unset. */
  maxTokens?: number;
  /** 0 means unset. */
  maxIterations?: number;
}

/** The fingerprint of a worker's configuration. */
export function makeFingerprint(config: FingerprintConfig): Fingerprint {
  return create(FingerprintSchema, {
    provider: config.provider,
    model: config.model,
    systemPromptSha256: systemPromptSha256(config.systemPrompt),
    thinkingMode: config.thinkingMode,
    toolsSha256: toolsSha256(config.tools),
    maxTokens: config.maxTokens ?? 0,
    maxIterations: config.maxIterations ?? 0,
  });
}
