#!/usr/bin/env bash
# CI for the Go client: module download, reproducible generated code, vet,
# unit + integration tests (they start their own server), the SDK adapters
# module (vet + tests; its hand-off with Python runs in
# tests/adapters/test_*_handoff_go.py), and the Go conformance runner against
# the four conformance servers.
# Run from anywhere: bash client/go/ci.sh. Exits non-zero on any failure.
#   RUNJOURNAL_PYTHON  the interpreter with the server installed
#                      (default: <repo>/.venv/bin/python)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
export RUNJOURNAL_PYTHON="${RUNJOURNAL_PYTHON:-$root/.venv/bin/python}"
start=$SECONDS

echo "== go: download modules"
(cd tools/go && go mod download)
(cd client/go && go mod download)
(cd client/go/adapters && go mod download)

echo "== go: regenerate the stubs and compare"
(cd tools/go && go build -p 1 -o bin/ google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc)
npx --yes @bufbuild/buf@1.75.0 generate --template client/go/buf.gen.yaml
if ! git diff --exit-code --stat -- client/go/gen \
   || [ -n "$(git status --porcelain --untracked-files=all -- client/go/gen)" ]; then
  echo "client/go/gen differs from proto/: run the generation (see client/go/buf.gen.yaml) and commit" >&2
  exit 1
fi

cd client/go
echo "== go: gofmt and vet"
unformatted="$(gofmt -l $(git ls-files '*.go' | grep -v '^gen/'))"
if [ -n "$unformatted" ]; then echo "not gofmt'ed: $unformatted" >&2; exit 1; fi
go vet ./...

echo "== go: unit and integration tests"
# ./conformance needs the conformance servers: it runs in the next step.
go test -p 1 -count=1 $(go list ./... | grep -v '/conformance$')

echo "== go: the SDK adapters module (runjournal.dev/client/go/adapters)"
# A module of its own, so the base client never requires a provider SDK.
if go list -m all | grep -E 'anthropic-sdk-go|openai-go'; then
  echo "the base module requires a provider SDK: only client/go/adapters may" >&2; exit 1
fi
(cd adapters && go vet ./... && go test -p 1 -count=1 ./...)

echo "== go: conformance runner on every conformance server"
"$RUNJOURNAL_PYTHON" "$root/conformance/servers.py" -- go test -count=1 -v ./conformance/... >"${TMPDIR:-/tmp}/go-conformance.log" 2>&1 || {
  cat "${TMPDIR:-/tmp}/go-conformance.log"; echo "go conformance failed" >&2; exit 1; }
grep -E 'conformance .*scenarios passed|failed as expected' "${TMPDIR:-/tmp}/go-conformance.log" || true
grep -E '^(ok|FAIL)' "${TMPDIR:-/tmp}/go-conformance.log"

echo "go CI passed in $((SECONDS - start))s"
