"""The error classes of every client, written from the one error table (``testdata/error_metadata.json``).

``scripts/generate.py`` writes the table from ``runjournal.error_metadata``
(each reason's metadata keys, their types, whether they are always present,
and what the reason tells a client), then hands it to the writers here:

- ``python_module``: ``client/python/runjournal/_reason_errors.py``, one class
  per reason on the bases of ``runjournal._error_base``, a property per key
  that base does not already read;
- ``go_file``: ``client/go/reasons.go``, one struct per reason with a
  ``meta``-tagged field per key (``fillMeta`` in errors.go parses them), and
  ``reasonTypes``;
- ``ts_module``: ``client/ts/src/reasons.ts``, one class per reason on the
  bases of ``error-base.ts``, its ``KEYS``, and the ``ErrorMetadata`` fields
  every error may carry.

Each starts by saying it is generated. What a reason's documentation says
comes from the table; a metadata key in backquotes there becomes the name the
language gives it. The writers return text; Go's is already as gofmt
prints it (CI runs gofmt on it), Python's goes through ruff.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

SOURCE = "client/python/runjournal/error_metadata.py"
TABLE = "testdata/error_metadata.json"

BY_CODE_TOO = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
"""Reasons whose gRPC code a layer in front of the server (a proxy, an auth gateway) also answers with, without an
ErrorInfo: the Python and TypeScript clients pick their class by that code too, so it is a ``StatusError``."""

STORED_TASK = frozenset({"ALREADY_COMPLETED"})
"""Reasons whose refusal carries the stored task among its details: their class reads it (``StoredTaskDetail``)."""

_QUOTED = re.compile(r"`([^`]+)`")

Table = Mapping[str, Any]
"""The parsed ``testdata/error_metadata.json``: ``reasons`` (reason -> key -> type, always) and ``docs``."""


def class_name(reason: str) -> str:
    return "".join(word.capitalize() for word in reason.split("_")) + "Error"


def camel(key: str) -> str:
    return re.sub(r"_([a-z])", lambda found: found[1].upper(), key)


def go_name(key: str) -> str:
    return "".join("ID" if word == "id" else word.capitalize() for word in key.split("_"))


def _doc(table: Table, reason: str, name: Callable[[str], str], quote: Callable[[str], str]) -> str:
    """The reason's documentation with each quoted metadata key as the language names it."""
    keys = {key for reason_keys in table["reasons"].values() for key in reason_keys}
    return _QUOTED.sub(lambda m: quote(name(m[1]) if m[1] in keys else m[1]), table["docs"][reason])


def _base(reason: str) -> str:
    """The class a reason's error builds on, in Python and in TypeScript alike."""
    if reason in BY_CODE_TOO:
        return "StatusError"
    return "StoredTaskDetail" if reason in STORED_TASK else "RunJournalError"


def _reasons(table: Table) -> Iterable[tuple[str, Mapping[str, Mapping[str, Any]]]]:
    return sorted(table["reasons"].items())


def _all_keys(table: Table) -> dict[str, str]:
    """Every metadata key of every reason, with its type (one type per key: the table's test holds it)."""
    return {key: spec["type"] for _, keys in _reasons(table) for key, spec in sorted(keys.items())}


# ---------------------------------------------------------------- Python


_PY_TYPES = {
    "int": ("int | None", "_int", "None"),
    "str": ("str | None", "_str", "None"),
    "list": ("list[str]", "_list", "empty"),
}


def python_module(table: Table, inherited: frozenset[str]) -> str:
    """``_reason_errors.py``; ``inherited``: the keys ``RunJournalError`` already has a property for."""
    out = [
        f"# GENERATED from {TABLE} by scripts/generate.py: do not edit by hand.",
        f"# Edit {SOURCE} and run `python scripts/generate.py`; CI fails when this file differs.",
        '"""Every server reason\'s exception class, with a typed property for each of its ErrorInfo metadata keys.',
        "",
        f"Written from ``{TABLE}`` (the table of ``runjournal.error_metadata``) on the",
        "bases of ``runjournal._error_base``; ``runjournal.errors`` is where code imports them from.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from runjournal._error_base import RunJournalError, StatusError, StoredTaskDetail",
    ]
    names = []
    for reason, keys in _reasons(table):
        name = class_name(reason)
        names.append(name)
        base = _base(reason)
        doc = f"{reason}: " + _doc(table, reason, str, lambda text: f"``{text}``")
        out += ["", "", f"class {name}({base}):", *_docstring(doc, "    "), "", f'    REASON = "{reason}"']
        for key, spec in sorted(keys.items()):
            if key in inherited:
                continue
            annotation, reader, absent = _PY_TYPES[spec["type"]]
            presence = f"every {reason} carries it" if spec["always"] else f"{absent} when the refusal has none"
            out += [
                "",
                "    @property",
                f"    def {key}(self) -> {annotation}:",
                f'        """Metadata ``{key}`` ({spec["type"]}): {presence}."""',
                f'        return self.{reader}("{key}")',
            ]
    out += ["", "", "REASON_ERRORS: dict[str, type[RunJournalError]] = {"]
    out += ["    cls.REASON: cls", "    for cls in (", *(f"        {name}," for name in names), "    )", "}"]
    out += ['"""Every reason the server reports, with its class."""', "", "__all__ = ["]
    out += ['    "REASON_ERRORS",', *(f'    "{name}",' for name in sorted(names)), "]", ""]
    return "\n".join(out)


def _docstring(text: str, indent: str) -> list[str]:
    """A docstring: one line when it fits, else its first sentence, a blank line and the rest."""
    width = 114 - len(indent)
    if len(text) <= width:
        return [f'{indent}"""{text}"""']
    summary, _, rest = text.partition(". ")
    if not rest or len(summary) >= width:
        summary, rest = "", text
    body = [f"{indent}{line}" for line in textwrap.wrap(rest, width)]
    opening = [f'{indent}"""{summary}.', ""] if summary else [f'{indent}"""{body.pop(0).strip()}']
    return [*opening, *body, f'{indent}"""']


# ---------------------------------------------------------------- Go


def _go_type(spec: Mapping[str, Any]) -> str:
    if spec["type"] == "int":
        return "int64" if spec["always"] else "*int64"
    return "[]string" if spec["type"] == "list" else "string"


def go_file(table: Table) -> str:
    out = [
        f"// Code generated by scripts/generate.py from {TABLE}; DO NOT EDIT.",
        f"// Edit {SOURCE} and run `python scripts/generate.py`; CI fails when this file differs.",
        "// unit_test.go checks every reason of the table has a type here and every key a field of its type.",
        "",
        "package runjournal",
    ]
    for reason, keys in _reasons(table):
        name = class_name(reason)
        doc = (
            f"{name} is the {reason} refusal: "
            + _doc(table, reason, go_name, str)
            + " Its fields are the ErrorInfo metadata."
        )
        out += ["", *(f"// {line}" for line in textwrap.wrap(doc, 77)), f"type {name} struct {{", "\tStatusError"]
        fields = [(go_name(key), _go_type(spec), f'`meta:"{key}"`') for key, spec in sorted(keys.items())]
        name_width = max((len(field) for field, _, _ in fields), default=0)
        type_width = max((len(kind) for _, kind, _ in fields), default=0)
        out += [f"\t{field:<{name_width}} {kind:<{type_width}} {tag}" for field, kind, tag in fields]
        out.append("}")
    out += [
        "",
        "// reasonTypes builds the typed error of each reason.",
        "var reasonTypes = map[string]func(StatusError) error{",
    ]
    width = max(len(reason) for reason, _ in _reasons(table)) + 3
    for reason, _ in _reasons(table):
        build = f"func(s StatusError) error {{ e := &{class_name(reason)}{{StatusError: s}}; fillMeta(e); return e }}"
        key = f'"{reason}":'
        out.append(f"\t{key:<{width}} {build},")
    out += ["}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- TypeScript

_TS_TYPES = {"int": "bigint", "str": "string", "list": "string[]"}


def ts_module(table: Table) -> str:
    out = [
        f"// GENERATED from {TABLE} by scripts/generate.py: do not edit by hand.",
        f"// Edit {SOURCE} and run `python scripts/generate.py`; CI fails when this file differs.",
        "/**",
        " * Every server reason's error class, with a typed field for each of its ErrorInfo metadata keys",
        f" * (written from {TABLE} on the bases of error-base.ts; import them from errors.ts).",
        " */",
        'import { type MetadataKeys, RunJournalError, StatusError, StoredTaskDetail } from "./error-base.js";',
        "",
        "/** The typed metadata an error may carry: each set when its reason declares it and the refusal has it. */",
        "export interface ErrorMetadata {",
        *(f"  readonly {camel(key)}?: {_TS_TYPES[kind]};" for key, kind in sorted(_all_keys(table).items())),
        "}",
    ]
    names = []
    for reason, keys in _reasons(table):
        name = class_name(reason)
        names.append(name)
        base = _base(reason)
        doc = f"{reason}: " + _doc(table, reason, camel, lambda text: f"`{text}`")
        lines = textwrap.wrap(doc, 114)
        out += ["", *([f"/** {lines[0]} */"] if len(lines) == 1 else ["/**", *(f" * {line}" for line in lines), " */"])]
        declared = ", ".join(f'{key}: "{spec["type"]}"' for key, spec in sorted(keys.items()))
        out += [
            f"export class {name} extends {base} {{",
            f'  static override readonly REASON = "{reason}";',
            f"  static override readonly KEYS: MetadataKeys = {{{' ' + declared + ' ' if declared else ''}}};",
            *(
                f"  declare readonly {camel(key)}: {_TS_TYPES[spec['type']]};"
                for key, spec in sorted(keys.items())
                if spec["always"]
            ),
            "}",
        ]
    out += ["", "/** Every reason the server reports, with its class. */"]
    out += ["export const REASON_ERRORS: Readonly<Record<string, typeof RunJournalError>> = Object.fromEntries(", "  ["]
    out += [*(f"    {name}," for name in names), "  ].map((cls) => [cls.REASON, cls]),", ");", ""]
    return "\n".join(out)
