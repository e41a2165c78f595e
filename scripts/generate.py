"""Regenerate the Python gRPC code from proto/ into client/python/runjournal/v1.

The generated folder is wiped and rebuilt, so a stale file cannot survive a
removed proto. CI runs this and fails when git sees any difference.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "client" / "python"
PACKAGE_DIR = OUT_DIR / "runjournal" / "v1"
INIT_TEXT = '"""Generated from proto/runjournal/v1 by scripts/generate.py. Do not edit."""\n'


def main() -> int:
    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "runjournal" / "v1").glob("*.proto"))
    if PACKAGE_DIR.exists():
        shutil.rmtree(PACKAGE_DIR)
    PACKAGE_DIR.mkdir(parents=True)
    well_known = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={OUT_DIR}",
        f"--pyi_out={OUT_DIR}",
        f"--grpc_python_out={OUT_DIR}",
        *protos,
    ]
    code = protoc.main(args)
    if code != 0:
        print(f"protoc failed with exit code {code}", file=sys.stderr)
        return code
    (PACKAGE_DIR / "__init__.py").write_text(INIT_TEXT)
    (PACKAGE_DIR / "py.typed").write_text("")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
