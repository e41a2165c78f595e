#!/usr/bin/env bash
# What CI runs for the TypeScript client. Run from anywhere; exits non-zero on any failure.
#   1. npm ci (the committed lockfile)
#   2. regenerate src/gen with buf and the local protoc-gen-es; fail on any difference
#   3. type-check and build (dist/ for the package and the hand-off program, build/ for the tests)
#   4. unit and integration tests (node:test; the integration tests start their own server)
#   5. the conformance runner against the four servers of conformance/servers.py
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export RUNJOURNAL_PYTHON="${RUNJOURNAL_PYTHON:-$root/.venv/bin/python}"
start=$SECONDS
step() { printf '\n== %s (%ss)\n' "$1" "$((SECONDS - start))"; }

step "npm ci"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error

step "regenerate src/gen and diff"
cd "$root"
npx --yes @bufbuild/buf@1.75.0 generate --template client/ts/buf.gen.yaml
git diff --exit-code -- client/ts/src/gen
untracked="$(git ls-files --others --exclude-standard -- client/ts/src/gen)"
if [[ -n "$untracked" ]]; then
  echo "generated files not committed:" >&2
  echo "$untracked" >&2
  exit 1
fi

step "tsc: type-check and build"
cd "$here"
rm -rf dist build
npx tsc -p tsconfig.json
npx tsc -p tsconfig.test.json

step "unit and integration tests"
node --test --test-concurrency=2 build/test/unit/*.test.js build/test/integration/*.test.js

if [[ -f "$root/conformance/servers.py" ]]; then
  step "conformance runner (all servers) and its self-test"
  cd "$root"
  "$RUNJOURNAL_PYTHON" conformance/servers.py -- node --test client/ts/build/test/conformance/conformance.test.js
else
  echo "conformance/servers.py not present yet: conformance runner not run" >&2
  [[ "${CI:-}" != "true" ]] || exit 1
fi

step "done"
