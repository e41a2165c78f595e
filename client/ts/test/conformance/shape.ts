/**
 * What conformance/format.schema.json asks of a scenario, checked by hand (FORMAT.md, "The schema"):
 * no key the schema does not name, the names and enums it pins, exactly one expectation.
 * An unknown rpc or status code name is left to replay time, where it fails its step.
 */
import type { JsonValue } from "@bufbuild/protobuf";

type JsonObject = { [key: string]: JsonValue };

const TOKENS = ["worker", "operator", "tenant", "none", "bad"];

function object(value: JsonValue | undefined, where: string, ...allowed: string[]): JsonObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error(`${where} must be an object`);
  for (const key of Object.keys(value)) {
    if (allowed.length > 0 && !allowed.includes(key)) throw new Error(`${where}: unknown key ${JSON.stringify(key)}`);
  }
  return value;
}

function nonEmptyArray(value: JsonValue | undefined, where: string): JsonValue[] {
  if (!Array.isArray(value) || value.length === 0) throw new Error(`${where} must be a non-empty array`);
  return value;
}

/** Throws naming the first thing the schema would refuse. */
export function checkShape(value: JsonValue): void {
  const scenario = object(value, "the scenario", "name", "description", "requires", "steps");
  if (typeof scenario["name"] !== "string" || !/^[a-z0-9_]+$/.test(scenario["name"])) throw new Error("name must be [a-z0-9_]+");
  if (typeof scenario["description"] !== "string" || scenario["description"] === "") throw new Error("no description");
  if (scenario["requires"] !== undefined) {
    const requires = object(scenario["requires"], "requires", "auth", "backends");
    if (requires["auth"] !== undefined && typeof requires["auth"] !== "boolean") throw new Error("requires.auth must be a boolean");
    if (requires["backends"] !== undefined) {
      for (const b of nonEmptyArray(requires["backends"], "requires.backends")) {
        if (b !== "file" && b !== "jetstream") throw new Error(`requires.backends: unknown backend ${JSON.stringify(b)}`);
      }
    }
  }
  checkSteps(scenario["steps"], "steps");
}

function checkSteps(value: JsonValue | undefined, where: string): void {
  nonEmptyArray(value, where).forEach((item, i) => {
    const at = `${where}.${i}`;
    const step = object(item, at, "rpc", "request", "metadata", "expect", "save", "during");
    if (typeof step["rpc"] !== "string") throw new Error(`${at}: no rpc`);
    object(step["request"], `${at}.request`);
    if (step["metadata"] !== undefined) {
      const metadata = object(step["metadata"], `${at}.metadata`, "token");
      if (metadata["token"] !== undefined && !TOKENS.includes(metadata["token"] as string)) {
        throw new Error(`${at}.metadata.token: unknown token ${JSON.stringify(metadata["token"])}`);
      }
    }
    checkExpect(step["expect"], `${at}.expect`);
    if (step["save"] !== undefined) {
      for (const [name, path] of Object.entries(object(step["save"], `${at}.save`))) {
        if (!/^[A-Za-z0-9_]+$/.test(name) || typeof path !== "string" || path === "") throw new Error(`${at}.save: bad entry ${name}`);
      }
    }
    if (step["during"] !== undefined) {
      const during = object(step["during"], `${at}.during`, "after", "steps");
      if (!Number.isInteger(during["after"]) || (during["after"] as number) < 1) throw new Error(`${at}.during.after must be >= 1`);
      checkSteps(during["steps"], `${at}.during.steps`);
    }
  });
}

function checkExpect(value: JsonValue | undefined, at: string): void {
  const expect = object(value, at, "response", "stream", "error");
  if (Object.keys(expect).length !== 1) throw new Error(`${at}: exactly one of response, stream, error`);
  if (expect["response"] !== undefined) object(expect["response"], `${at}.response`);
  if (expect["stream"] !== undefined) {
    const stream = object(expect["stream"], `${at}.stream`, "items", "exact", "take");
    if (!Array.isArray(stream["items"])) throw new Error(`${at}.stream.items must be an array`);
    if (stream["exact"] !== undefined && stream["take"] !== undefined) throw new Error(`${at}.stream: take and exact do not go together`);
  }
  if (expect["error"] !== undefined) {
    const error = object(expect["error"], `${at}.error`, "code", "reason", "metadata");
    if (typeof error["code"] !== "string") throw new Error(`${at}.error.code must be a string`);
    if (typeof error["reason"] !== "string" || !/^[A-Z][A-Z_]*$/.test(error["reason"])) throw new Error(`${at}.error.reason must be [A-Z][A-Z_]*`);
    if (error["metadata"] !== undefined) object(error["metadata"], `${at}.error.metadata`);
  }
}
