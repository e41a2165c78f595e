#!/usr/bin/env bash
# The whole test suite, every language: the README's test command, and what .ci/run runs.
#
# Installs what each language needs from its registry (pip into .venv, npm ci
# from client/ts/package-lock.json, Go modules from client/go/go.sum), then
# runs the TypeScript and Go clients' suites and conformance runners (each
# starts its own servers; see client/ts/ci.sh, client/go/ci.sh) and last the
# Python suite (servers, a real nats-server, the Python conformance runner and
# the three-language hand-off, which runs the Go and TypeScript step programs
# built above). Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== python: install"
python3 -m venv .venv
.venv/bin/pip install -q -e '.[test]'
export RUNJOURNAL_PYTHON="$PWD/.venv/bin/python"

echo "== typescript client"
bash client/ts/ci.sh

echo "== go client"
bash client/go/ci.sh

echo "== python: the test suite"
.venv/bin/pytest
