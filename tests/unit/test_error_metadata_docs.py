"""The documented metadata of every reason (proto comment, README) is ``ERROR_METADATA`` (issue 10, item 15).

Clients in other languages read the table in journal_service.proto, people
read the README; both are checked against the one table the server and the
Python client use, so the documentation cannot drift from it.
"""

from __future__ import annotations

import re
from pathlib import Path

from runjournal.error_metadata import ERROR_METADATA

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"\b([a-z][a-z_]*)(\?)?")

Documented = dict[str, dict[str, bool]]  # reason -> key -> always present


def table() -> Documented:
    return {reason: {name: key.always for name, key in keys.items()} for reason, keys in ERROR_METADATA.items()}


def keys_of(text: str) -> dict[str, bool]:
    text = re.sub(r"\([^)]*\)", "", text)  # "(list)", "(may be empty)", "(none)": notes, not keys
    return {name: not optional for name, optional in KEY.findall(text) if name != "or"}


def proto_table() -> Documented:
    text = (ROOT / "proto" / "runjournal" / "v1" / "journal_service.proto").read_text(encoding="utf-8")
    block = text.split("The metadata of each reason", 1)[1].split("`index` is set only", 1)[0]
    documented: Documented = {}
    for line in block.splitlines():
        found = re.match(r"//\s+((?:[A-Z_]+(?:, )?)+)\s{2,}(.*)$", line)
        if found:
            for reason in found.group(1).split(", "):
                documented[reason.strip()] = keys_of(found.group(2))
    return documented


def readme_table() -> Documented:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Error reasons", 1)[1].split("\n## ", 1)[0]
    documented: Documented = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            documented[cells[0].strip("`")] = keys_of(" ".join(re.findall(r"`([^`]*)`", cells[3])))
    return documented


def test_the_proto_documents_every_reasons_metadata_as_the_table_pins_it() -> None:
    assert proto_table() == table()


def test_the_readme_documents_every_reasons_metadata_as_the_table_pins_it() -> None:
    assert readme_table() == table()
