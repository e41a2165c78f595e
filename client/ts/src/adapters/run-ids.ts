/**
 * Run ids for keys the server does not choose: an SDK's session ids, project keys and subpaths.
 *
 * The rule of client/python/runjournal/adapters/_run_ids.py, kept the same so both languages reach one run for
 * one key: `<namespace>_<tag><part>...`, letters, digits and `-` kept, every other character written `_` + two
 * lower-case hex digits per UTF-8 byte; tags are letters that are not hex digits, so the mapping is injective;
 * an id over 128 characters becomes `<namespace>_h<sha256 of the long id, hex>` (the key stays in the labels).
 */
import { createHash } from "node:crypto";

export const MAX_RUN_ID_CHARS = 128;
export const MAX_NAMESPACE_CHARS = 40;
const KEPT = /^[A-Za-z0-9-]$/;
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9-]*$/;

/** `namespace` unchanged, or a RangeError: 1-40 of `[A-Za-z0-9-]`, starting with a letter or digit. */
export function checkNamespace(namespace: string): string {
  if (typeof namespace !== "string" || namespace.length > MAX_NAMESPACE_CHARS || !NAMESPACE.test(namespace)) {
    throw new RangeError(
      `namespace ${JSON.stringify(namespace)} must be 1-${MAX_NAMESPACE_CHARS} characters of [A-Za-z0-9-], ` +
        "starting with a letter or digit (it begins every run id and holds no '_')",
    );
  }
  return namespace;
}

/** `text` with every character outside `[A-Za-z0-9-]` written as `_` + hex per UTF-8 byte. */
export function escape(text: string): string {
  let out = "";
  for (const ch of text) {
    if (KEPT.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, "utf8")) out += `_${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

/** The run id of a key: `parts` are `[tag, value]` pairs, tags being letters that are not hex digits. */
export function runIdOf(namespace: string, parts: readonly (readonly [string, string])[]): string {
  const longId = namespace + parts.map(([tag, value]) => `_${tag}${escape(value)}`).join("");
  if (longId.length <= MAX_RUN_ID_CHARS) return longId;
  return `${namespace}_h${createHash("sha256").update(longId, "ascii").digest("hex")}`;
}
