import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import { toJson } from "@bufbuild/protobuf";
import { canonicalJson, canonicalTools, FingerprintSchema, makeFingerprint, systemPromptSha256, toolsSha256 } from "../../src/index.js";

interface Vectors {
  system_prompt_sha256: { name: string; text: string; sha256: string }[];
  tools_sha256: { name: string; tools: unknown[]; canonical: string; sha256: string }[];
  tools_invalid: { name: string; tools: unknown[] }[];
  fingerprints: { name: string; input: Record<string, unknown>; fingerprint: Record<string, unknown> }[];
}

const vectors = JSON.parse(
  readFileSync(resolve(import.meta.dirname, "../../../../../testdata/fingerprint_vectors.json"), "utf8"),
) as Vectors;

for (const v of vectors.system_prompt_sha256) {
  test(`system prompt: ${v.name}`, () => assert.equal(systemPromptSha256(v.text), v.sha256));
}
for (const v of vectors.tools_sha256) {
  test(`tools: ${v.name}`, () => {
    assert.equal(canonicalTools(v.tools), v.canonical);
    assert.equal(toolsSha256(v.tools), v.sha256);
  });
}
for (const v of vectors.tools_invalid) {
  test(`tools refused: ${v.name}`, () => assert.throws(() => toolsSha256(v.tools)));
}
for (const v of vectors.fingerprints) {
  test(`fingerprint: ${v.name}`, () => {
    const input = v.input as { provider: string; model: string; system_prompt: string; thinking_mode: string; tools: unknown[]; max_tokens?: number; max_iterations?: number };
    const fingerprint = makeFingerprint({
      provider: input.provider,
      model: input.model,
      systemPrompt: input.system_prompt,
      thinkingMode: input.thinking_mode,
      tools: input.tools,
      maxTokens: input.max_tokens ?? 0,
      maxIterations: input.max_iterations ?? 0,
    });
    const json = toJson(FingerprintSchema, fingerprint, { useProtoFieldName: true, alwaysEmitImplicit: true });
    assert.deepEqual(json, { max_tokens: 0, max_iterations: 0, ...v.fingerprint });
  });
}

test("canonical JSON refuses what other languages cannot represent", () => {
  assert.throws(() => canonicalJson(2n ** 53n), /2\*\*53/);
  assert.equal(canonicalJson(9007199254740991n), "9007199254740991");
  assert.equal(canonicalJson(1e21), "1e+21");
  assert.throws(() => canonicalJson(Number.NaN));
  assert.throws(() => canonicalJson(Infinity));
  assert.throws(() => canonicalJson("\ud800"), /surrogate/);
  assert.throws(() => canonicalJson({ a: undefined }));
  assert.equal(canonicalJson(-0), "0");
  assert.equal(canonicalJson({ b: 1, a: [1.5, "\u2028<&>"] }), '{"a":[1.5,"\u2028<&>"],"b":1}');
  assert.equal(canonicalJson({ "\u{1F600}": 1, "\uFFFF": 2 }), '{"\uFFFF":2,"\u{1F600}":1}');
});
