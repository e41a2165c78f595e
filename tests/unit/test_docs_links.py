"""The README is a front door and the docs point at files that exist.

Modules move (this round moved 31 of them into packages); a link or a path in
the docs that names the old place is a stale promise. Every relative Markdown
link must reach a file (and a heading, when it names one), and every path
written in backticks from the repository root (or, in a client's README, from
its folder) must exist, unless it is a git-ignored output such as
``bench/results/latest.json``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted([README, *(ROOT / "docs").glob("*.md"), *(ROOT / "client").glob("*/README.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
ROOTS = (
    "bench/",
    "client/",
    "conformance/",
    "docs/",
    "examples/",
    "proto/",
    "scripts/",
    "server/",
    "testdata/",
    "tests/",
)
PATH = re.compile(r"`((?:" + "|".join(map(re.escape, ROOTS)) + r")[A-Za-z0-9_./-]+)`")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def ignored_dirs() -> list[str]:
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line.strip("/") + "/" for line in lines if line.startswith("/") and line.endswith("/")]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_the_readme_is_a_front_door_of_at_most_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readmes_two_commands_are_the_ones_that_serve_and_test() -> None:
    readme = README.read_text(encoding="utf-8")
    serve = "python3 -m venv .venv && .venv/bin/pip install -e '.[server]' && .venv/bin/runjournal serve"
    assert serve in readme and "\nbash scripts/test.sh\n" in readme
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert (ROOT / "scripts" / "test.sh").is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in anchors(path)):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_repository_path_named_exists(page: Path) -> None:
    ignored = ignored_dirs()
    missing = [
        path
        for path in PATH.findall(page.read_text(encoding="utf-8"))
        if not any((base / path.rstrip("/")).exists() for base in (ROOT, page.parent))
        and not any(path.startswith(prefix) for prefix in ignored)
    ]
    assert missing == []
