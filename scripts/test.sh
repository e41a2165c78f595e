#!/usr/bin/env bash
# The whole test suite, every language: the README's test command, and what .ci/run runs.
#
# Installs what each language needs from its registry (pip into .venv, npm ci
# from client/ts/package-lock.json, Go modules from client/go/go.sum), then
# runs, two at a time:
#   - the TypeScript and Go clients' suites and conformance runners (each
#     starts its own servers; see client/ts/ci.sh, client/go/ci.sh), then the
#     Python suite but its api, backends and unit tests: it holds the
#     three-language hand-off, which runs the Go and TypeScript step programs
#     built before it. Their output is shown as it comes.
#   - the Python suite's api, backends and unit tests, from the start (chosen
#     so that both take about as long); their output is shown once they are done.
# The fourth conformance runner (conformance/java: raw grpc-java stubs, no
# runjournal client) is built with Maven from the start too (mostly downloads
# and one javac) and replayed at the end, against the servers it starts.
# Each Python half starts its own servers and nats-server. Most of the suite
# waits on one server or a sync at a time, so on two cores the halves take
# little longer side by side than alone; nothing is shared between them but
# the machine. Exits non-zero if any part failed, after every part has ended.
set -euo pipefail
cd "$(dirname "$0")/.."
export TEST_SH_STARTED="$(date +%s)"  # for the times in the step lines, the background run's too
step() { printf '== %s (at %ss)\n' "$1" "$(($(date +%s) - TEST_SH_STARTED))"; }

step "python: install"
python3 -m venv .venv
.venv/bin/pip install -q -e '.[test]'
export RUNJOURNAL_PYTHON="$PWD/.venv/bin/python"

# The half that runs beside the clients; every other folder of tests/ is in the other half.
side=(tests/api tests/backends tests/unit)
ignored=()
for folder in "${side[@]}"; do ignored+=("--ignore=$folder"); done

logs="$(mktemp -d)"
side_pid=""
java_pid=""
# The background parts run in their own process groups: if this script ends early (interrupted,
# or set -e), they end with it, the servers and nats-server their runs started included.
trap 'for pid in "$side_pid" "$java_pid"; do [ -z "$pid" ] || kill -TERM -- "-$pid" 2>/dev/null || true; done
      rm -rf "$logs"' EXIT
step "java conformance runner: build (in the background; shown when done)"
setsid bash conformance/java/ci.sh build >"$logs/java.log" 2>&1 &
java_pid=$!
step "python: ${side[*]} (in the background; shown when done)"
setsid bash -c '
  status=0
  .venv/bin/pytest "$@" || status=$?
  printf "(the background run ended at %ss)\n" "$(($(date +%s) - TEST_SH_STARTED))"
  exit "$status"' side "${side[@]}" >"$logs/side.log" 2>&1 &
side_pid=$!

failed=()
step "typescript client"
bash client/ts/ci.sh || failed+=("typescript client")

step "go client"
bash client/go/ci.sh || failed+=("go client")

step "python: the rest of the suite (${ignored[*]})"
.venv/bin/pytest "${ignored[@]}" || failed+=("python suite without ${side[*]}")

step "python: ${side[*]} (output of the background run)"
side_status=0
wait "$side_pid" || side_status=$?
side_pid=""
cat "$logs/side.log"
[ "$side_status" -eq 0 ] || failed+=("python ${side[*]}")

step "java conformance runner: the build's output, then the replay"
java_status=0
wait "$java_pid" || java_status=$?
java_pid=""
cat "$logs/java.log"
if [ "$java_status" -eq 0 ]; then
  bash conformance/java/ci.sh replay || failed+=("java conformance runner")
else
  failed+=("java conformance runner (build)")
fi

if [ "${#failed[@]}" -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
step "every language's tests passed"
