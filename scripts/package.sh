#!/usr/bin/env bash
# Build every distributable into dist/ (no network needed once the dependencies are installed:
# .venv for Python, client/ts/node_modules for TypeScript):
#   dist/runjournal-VERSION-py3-none-any.whl, dist/runjournal-VERSION.tar.gz
#       one Python distribution: the client, and the server with the [server] extra
#   dist/runjournal-client-VERSION.tgz
#       the npm package @runjournal/client, its built dist/ inside (`npm pack` runs "prepare")
#   dist/goproxy/
#       the Go module runjournal.dev/client/go as a GOPROXY file layout (scripts/go_proxy.py)
# How a project outside this checkout installs each: docs/clients.md, "Installing".
# Run from anywhere. Exits non-zero on any failure.
#   RUNJOURNAL_PYTHON  the interpreter with setuptools (default: <repo>/.venv/bin/python)
#   RUNJOURNAL_DIST    where the distributables go (default: <repo>/dist; emptied first)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${RUNJOURNAL_PYTHON:-$root/.venv/bin/python}"
dist="${RUNJOURNAL_DIST:-$root/dist}"
cd "$root"
rm -rf "$dist"
mkdir -p "$dist"

version="$("$python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"

echo "== python: wheel and sdist (PEP 517 hooks of setuptools, no isolation: nothing downloaded)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Build from a copy of the tracked files, so a local build/ or egg-info never leaks into the archives.
git ls-files -z | grep -zv '^client/ts/\|^client/go/\|^tests/\|^bench/\|^docs/screenshots/' \
  | xargs -0 cp --parents -t "$scratch"
for hook in build_sdist build_wheel; do
  (cd "$scratch" && "$python" -c "
import sys
from setuptools import build_meta
print(build_meta.$hook(sys.argv[1]), file=sys.stderr)
" "$dist" 2>&1 >"$scratch/$hook.log" | tail -n1 | sed 's/^/built /') || { cat "$scratch/$hook.log"; exit 1; }
done

echo "== npm: npm pack (its prepare script builds dist/ with tsc)"
if [[ ! -d client/ts/node_modules ]]; then
  (cd client/ts && npm ci --no-audit --no-fund --loglevel=error --prefer-offline)
fi
(cd client/ts && npm pack --pack-destination "$dist" --loglevel=error) | sed 's/^/built /'

echo "== go: module proxy layout"
"$python" scripts/go_proxy.py "$dist/goproxy" "v$version" | sed 's/^/built /'

ls -l "$dist"
