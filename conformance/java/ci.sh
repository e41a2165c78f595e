#!/usr/bin/env bash
# The Java conformance runner (conformance/FORMAT.md, "Runners"), what CI runs for it:
#   build   Maven, from the pinned pom.xml: protoc and protoc-gen-grpc-java (classified executables
#           from Maven Central) generate the stubs from proto/ into target/ (never committed), javac
#           compiles them with the runner;
#   replay  every scenario on the four servers of conformance/servers.py, in one JVM (arguments
#           after the word go to servers.py: `replay --scenarios DIR`).
# With neither word: build, then replay. .ci/run builds in the background from its start and
# replays once the suite has installed the server. Run from anywhere; exits non-zero on any failure.
#   RUNJOURNAL_PYTHON      the interpreter with the server installed (default: <repo>/.venv/bin/python)
#   RUNJOURNAL_MAVEN_REPO  a Maven local repository instead of ~/.m2/repository (an empty one times
#                          a cold build, as on a fresh CI machine)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export RUNJOURNAL_PYTHON="${RUNJOURNAL_PYTHON:-$root/.venv/bin/python}"
start=$SECONDS

build() {
  echo "== java conformance: build (mvn compile)"
  command -v mvn >/dev/null || { echo "mvn not found: the Java runner needs a JDK 17 and Maven" >&2; exit 1; }
  local repo=()
  [ -z "${RUNJOURNAL_MAVEN_REPO:-}" ] || repo=("-Dmaven.repo.local=$RUNJOURNAL_MAVEN_REPO")
  # Mostly javac over ~95,000 generated lines, once: C1 alone halves its CPU time here (12 s, not 25 s).
  MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}" mvn -B -q -ntp -f "$here/pom.xml" "${repo[@]}" compile
  echo "(java conformance runner built in $((SECONDS - start))s)"
}

replay() {
  echo "== java conformance: every scenario on every conformance server"
  local classpath began=$SECONDS
  classpath="$here/target/classes:$(cat "$here/target/classpath.txt")"
  # A short run on 2 cores: the C1 compiler alone and the serial collector start fastest.
  "$RUNJOURNAL_PYTHON" "$root/conformance/servers.py" "$@" -- \
    java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$classpath" \
    dev.runjournal.conformance.Main "$root/conformance/selftest"
  echo "(java conformance replayed in $((SECONDS - began))s)"
}

case "${1:-}" in
  build) build ;;
  replay) shift; replay "$@" ;;
  *) build; replay "$@" ;;
esac
