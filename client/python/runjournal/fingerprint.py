"""Canonical fingerprint hashing, so workers in every language agree byte for byte.

A run's ``Fingerprint`` holds two hashes (docs/fingerprint.md states the rules
for other languages; ``testdata/fingerprint_vectors.json`` has test vectors):

* ``system_prompt_sha256``: SHA-256 of the system prompt's UTF-8 bytes, as
  lower-case hex. No normalisation of any kind (no trimming, no newline or
  Unicode normalisation): a prompt that differs by one byte is a different
  prompt. Hash the prompt *before* adding a resume reminder; the reminder is
  never part of the fingerprint.
* ``tools_sha256``: SHA-256 of the canonical JSON of the tool list. Each tool
  is a JSON object as the provider receives it (``name``, ``description``,
  ``input_schema``, ...). The list is sorted by ``name`` (by Unicode code
  point), duplicate names are refused, and the array is serialised with object
  keys sorted by code point, no insignificant whitespace, non-ASCII characters
  written as themselves, and UTF-8 bytes. Numbers are written the way
  ECMAScript and Go write a float64 (``1.0`` is ``1``, ``1e-07`` is ``1e-7``);
  integers beyond 2**53 and non-finite numbers are refused because other
  languages cannot represent them exactly.

Only the standard library and the generated proto are used.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence

from runjournal.v1.records_pb2 import Fingerprint

__all__ = [
    "MAX_SAFE_INTEGER",
    "canonical_json",
    "canonical_tools",
    "make_fingerprint",
    "system_prompt_sha256",
    "tools_sha256",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON implementation represents exactly (a float64 mantissa)."""


def system_prompt_sha256(text: str) -> str:
    """Lower-case hex SHA-256 of ``text`` as UTF-8, with no normalisation."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(value: object) -> str:
    """The canonical JSON text of ``value`` (see the module docstring)."""
    parts: list[str] = []
    _write(value, parts, "$")
    return "".join(parts)


def canonical_tools(tools: Sequence[Mapping[str, object]]) -> str:
    """The canonical JSON text of a tool list: sorted by name, duplicates refused."""
    by_name: dict[str, Mapping[str, object]] = {}
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ValueError(f"tools[{index}] must be a JSON object, got {type(tool).__name__}")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{index}] needs a non-empty string 'name'")
        if name in by_name:
            raise ValueError(f"tools[{index}]: duplicate tool name {name!r}; tool names must be unique")
        by_name[name] = tool
    return canonical_json([by_name[name] for name in sorted(by_name)])


def tools_sha256(tools: Sequence[Mapping[str, object]]) -> str:
    """Lower-case hex SHA-256 of the canonical tool list's UTF-8 bytes."""
    return hashlib.sha256(canonical_tools(tools).encode("utf-8")).hexdigest()


def make_fingerprint(
    provider: str,
    model: str,
    system_prompt: str,
    thinking_mode: str,
    tools: Sequence[Mapping[str, object]],
    max_tokens: int = 0,
    max_iterations: int = 0,
) -> Fingerprint:
    """The fingerprint of a worker's configuration (0 means unset for the budgets)."""
    return Fingerprint(
        provider=provider,
        model=model,
        system_prompt_sha256=system_prompt_sha256(system_prompt),
        thinking_mode=thinking_mode,
        tools_sha256=tools_sha256(tools),
        max_tokens=max_tokens,
        max_iterations=max_iterations,
    )


def _write(value: object, out: list[str], path: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        _check_text(value, path)
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"{path}: integer {value} is beyond 2**53 - 1 and not portable")
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_number(value, path))
    elif isinstance(value, Mapping):
        out.append("{")
        keys = list(value)
        for key in keys:
            if not isinstance(key, str):
                raise ValueError(f"{path}: object keys must be strings, got {key!r}")
        for index, key in enumerate(sorted(keys)):
            if index:
                out.append(",")
            _check_text(key, path)
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write(value[key], out, f"{path}.{key}")
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, f"{path}[{index}]")
        out.append("]")
    else:
        raise ValueError(f"{path}: {type(value).__name__} is not a JSON value")


def _check_text(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{path}: text is not valid Unicode (a lone surrogate)") from err


def _number(value: float, path: str) -> str:
    """A float as ECMAScript's Number::toString writes it (what JSON.stringify and Go produce)."""
    if not math.isfinite(value):
        raise ValueError(f"{path}: {value} is not a JSON number")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, as ECMAScript requires;
    # rewrite them as value = int(digits) * 10**(point - len(digits)).
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = (int(exp_text) if exp_text else 0) - len(fraction)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exponent
    k = len(digits)
    if k <= point <= 21:
        text = digits + "0" * (point - k)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * (-point) + digits
    else:
        head = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{head}e{'+' if point > 0 else '-'}{abs(point - 1)}"
    return sign + text
