/**
 * Scenario files read as FORMAT.md asks: UTF-8 only, no string that is not
 * valid UTF-16 (a lone surrogate written as `\ud800`), and every integer kept
 * exact. `JSON.parse` rounds an integer beyond 2^53 to the nearest double, so
 * such a number is read as the string of its decimal digits instead: what
 * proto3 JSON writes for an int64 anyway, and what a proto3 JSON parser
 * accepts for one (FORMAT.md, "Numbers").
 */
import { readFileSync } from "node:fs";
import type { JsonValue } from "@bufbuild/protobuf";

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * The text with each integer that a double cannot hold exactly put in quotes. What `JSON.parse`
 * would let through against FORMAT.md ("Strict JSON") throws: a key twice in one object (it keeps
 * the last silently) and a number with a fraction or exponent.
 */
export function quoteUnsafeIntegers(text: string): string {
  let out = "";
  let i = 0;
  const keys: (Set<string> | null)[] = []; // per open object (null: an array) the keys seen so far
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1; // to the closing quote, over escapes
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const token = text.slice(i, j + 1);
      const seen = keys.at(-1);
      if (seen && /^\s*:/.test(text.slice(j + 1, j + 64))) {
        const key = JSON.parse(token) as string;
        if (seen.has(key)) throw new Error(`the key ${token} appears twice in one object (FORMAT.md, "Strict JSON")`);
        seen.add(key);
      }
      out += token;
      i = j + 1;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(text)?.[0] ?? c;
      const integer = /^-?[0-9]+$/.test(token);
      if (!integer) throw new Error(`the number ${token} is not an integer written in plain digits (FORMAT.md, "Strict JSON")`);
      out += !Number.isSafeInteger(Number(token)) ? `"${token}"` : token;
      i += token.length;
    } else {
      if (c === "{") keys.push(new Set());
      else if (c === "[") keys.push(null);
      else if (c === "}" || c === "]") keys.pop();
      out += c;
      i += 1;
    }
  }
  return out;
}

/** Throws when a string anywhere in the value (keys included) holds a lone surrogate. */
export function refuseLoneSurrogates(value: JsonValue, path = ""): void {
  if (typeof value === "string") {
    if (!value.isWellFormed()) throw new Error(`${path || "(root)"}: a string with a lone surrogate (FORMAT.md, "Strings")`);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => refuseLoneSurrogates(item, `${path}.${i}`));
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      refuseLoneSurrogates(key, path);
      refuseLoneSurrogates(item, `${path}.${key}`);
    }
  }
}

/** Parses scenario JSON text: integers exact, lone surrogates refused. */
export function parseExact(text: string): JsonValue {
  const value = JSON.parse(quoteUnsafeIntegers(text)) as JsonValue;
  refuseLoneSurrogates(value);
  return value;
}

/** Reads a scenario file: bytes that are not UTF-8 are refused, not replaced with U+FFFD. */
export function readExact(path: string): JsonValue {
  return parseExact(new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(path)));
}
