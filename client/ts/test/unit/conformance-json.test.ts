/** How the conformance runner reads scenario files (FORMAT.md, "Numbers", "Strings" and "Strict JSON"). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseExact, quoteUnsafeIntegers } from "../conformance/exact-json.js";
import { checkShape } from "../conformance/shape.js";

test("an integer beyond 2^53 is kept exact as its decimal string; safe numbers stay numbers", () => {
  const value = parseExact('{"a": 9223372036854775807, "b": -9007199254740993, "c": 42, "e": "12345678901234567890"}');
  assert.deepEqual(value, { a: "9223372036854775807", b: "-9007199254740993", c: 42, e: "12345678901234567890" });
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

test("what strict JSON forbids is refused: a key twice, a fraction or exponent, NaN, a comment, text after the value", () => {
  for (const text of ['{"a": 1, "a": 2}', '{"a": {"b": 1, "b": 1}}', '{"n": 2.0}', '{"n": 1e3}', '{"n": NaN}', '{"a": 1} // c', '{"a": 1,}', '{"a": 1} {}']) {
    assert.throws(() => parseExact(text), Error, text);
  }
  assert.deepEqual(parseExact('{"a": [{"k": 1}, {"k": 2}], "b": {"k": ":"}, "k": "a"}'), { a: [{ k: 1 }, { k: 2 }], b: { k: ":" }, k: "a" });
});

test("what the schema refuses is refused: an unknown key at any level, two expectations, take with exact, a bad name", () => {
  const good = '{"name": "x", "description": "d", "steps": [{"rpc": "Fold", "request": {}, "expect": {"response": {}}}]}';
  assert.doesNotThrow(() => checkShape(parseExact(good)));
  for (const text of [
    good.replace('"name"', '"extra": 1, "name"'),
    good.replace('"rpc"', '"extra": 1, "rpc"'),
    good.replace('{"response": {}}', '{"response": {}, "error": {"code": "NOT_FOUND", "reason": "X"}}'),
    good.replace('{"response": {}}', '{"stream": {"items": [], "take": 1, "exact": true}}'),
    good.replace('"request": {}', '"request": {}, "metadata": {"token": "root"}'),
    good.replace('"x"', '"X-1"'),
  ]) {
    assert.throws(() => checkShape(parseExact(text)), Error, text);
  }
});
