/** How the conformance runner reads scenario files (FORMAT.md, "Numbers" and "Strings"). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseExact, quoteUnsafeIntegers } from "../conformance/exact-json.js";

test("an integer beyond 2^53 is kept exact as its decimal string; safe numbers stay numbers", () => {
  const value = parseExact('{"a": 9223372036854775807, "b": -9007199254740993, "c": 42, "d": 1.5, "e": "12345678901234567890"}');
  assert.deepEqual(value, { a: "9223372036854775807", b: "-9007199254740993", c: 42, d: 1.5, e: "12345678901234567890" });
});

test("numbers inside strings, escaped quotes included, are left alone", () => {
  const text = '{"s": "x\\" 9223372036854775807 \\\\", "n": [9007199254740993]}';
  assert.equal(quoteUnsafeIntegers(text), '{"s": "x\\" 9223372036854775807 \\\\", "n": ["9007199254740993"]}');
});

test("a lone surrogate is refused, in a value or a key; a pair is accepted", () => {
  assert.throws(() => parseExact('{"a": "x\\ud800y"}'), /lone surrogate/);
  assert.throws(() => parseExact('{"\\udc00": 1}'), /lone surrogate/);
  assert.deepEqual(parseExact('{"a": "\\ud83d\\ude00"}'), { a: "\u{1F600}" });
});
