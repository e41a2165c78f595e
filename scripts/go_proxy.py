"""Write the Go client as a module proxy layout, so ``GOPROXY=file://DIR`` resolves it.

    python scripts/go_proxy.py OUT_DIR [VERSION]

The module path ``runjournal.dev/client/go`` is served by no host, so the go
command cannot fetch it from its import path; a proxy layout
(``OUT_DIR/runjournal.dev/client/go/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}``,
the GOPROXY protocol's files) lets a project outside this checkout resolve it
with ``GOPROXY=file://OUT_DIR,https://proxy.golang.org`` and ``GONOSUMDB=runjournal.dev``
(the checksum database has never seen it). See docs/clients.md, "Installing".

The zip holds the module's files tracked by git (``git ls-files``), each under
``<module>@<version>/``, as the go command's module zip format requires.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULE_DIR = REPO / "client" / "go"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
"""A fixed timestamp in every zip entry, so the same tree gives the same zip (and the same go.sum hash)."""


def module_path() -> str:
    """The module path from client/go/go.mod's ``module`` line."""
    for line in (MODULE_DIR / "go.mod").read_text().splitlines():
        if line.startswith("module "):
            return line.split()[1]
    raise SystemExit("client/go/go.mod has no module line")


def tracked_files() -> list[str]:
    """The module's files as git tracks them, relative to client/go."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "."], cwd=MODULE_DIR, check=True, capture_output=True
    ).stdout.decode()
    return sorted(name for name in out.split("\0") if name)


def commit_time() -> str:
    """The RFC 3339 time of HEAD, for the ``.info`` file."""
    return subprocess.run(
        ["git", "log", "-1", "--format=%cI"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()


def write_layout(out_dir: Path, version: str) -> Path:
    """Write the proxy files for ``version``; return the zip's path."""
    path = module_path()
    at_v = out_dir / path / "@v"  # module paths here are lower case: no "!" escaping needed
    at_v.mkdir(parents=True, exist_ok=True)
    (at_v / "list").write_text(f"{version}\n")
    (at_v / f"{version}.info").write_text(json.dumps({"Version": version, "Time": commit_time()}) + "\n")
    (at_v / f"{version}.mod").write_bytes((MODULE_DIR / "go.mod").read_bytes())
    zip_path = at_v / f"{version}.zip"
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in tracked_files():
            entry = zipfile.ZipInfo(f"{path}@{version}/{name}", date_time=ZIP_DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, (MODULE_DIR / name).read_bytes())
    return zip_path


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    version = argv[1] if len(argv) == 2 else "v0.1.0"
    print(write_layout(Path(argv[0]).resolve(), version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
