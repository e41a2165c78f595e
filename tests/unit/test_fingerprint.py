"""Canonical fingerprint hashing: the shared test vectors and the canonical JSON rules."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runjournal.fingerprint import (
    MAX_SAFE_INTEGER,
    canonical_json,
    canonical_tools,
    make_fingerprint,
    system_prompt_sha256,
    tools_sha256,
)
from runjournal.v1.records_pb2 import Fingerprint

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "testdata" / "fingerprint_vectors.json").read_text(encoding="utf-8")
)


def by_name(section: str) -> list[Any]:
    return [pytest.param(case, id=case["name"]) for case in VECTORS[section]]


@pytest.mark.parametrize("case", by_name("system_prompt_sha256"))
def test_system_prompt_vectors(case: dict[str, Any]) -> None:
    assert system_prompt_sha256(case["text"]) == case["sha256"]


@pytest.mark.parametrize("case", by_name("tools_sha256"))
def test_tools_vectors(case: dict[str, Any]) -> None:
    assert canonical_tools(case["tools"]) == case["canonical"]
    assert tools_sha256(case["tools"]) == case["sha256"]


@pytest.mark.parametrize("case", by_name("tools_invalid"))
def test_invalid_tool_lists_are_refused(case: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        tools_sha256(case["tools"])


@pytest.mark.parametrize("case", by_name("fingerprints"))
def test_fingerprint_vectors(case: dict[str, Any]) -> None:
    assert make_fingerprint(**case["input"]) == Fingerprint(**case["fingerprint"])


def test_vectors_cover_the_cases_other_languages_get_wrong() -> None:
    prompts = {case["name"]: case for case in VECTORS["system_prompt_sha256"]}
    assert prompts["empty"]["sha256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert prompts["nfc"]["sha256"] != prompts["nfd_is_not_normalised"]["sha256"]
    assert prompts["lf"]["sha256"] != prompts["crlf_is_not_normalised"]["sha256"]
    tools = {case["name"]: case for case in VECTORS["tools_sha256"]}
    assert tools["given_out_of_order"]["sha256"] == tools["given_in_order"]["sha256"]
    assert [t["name"] for t in tools["given_out_of_order"]["tools"]] != sorted(
        t["name"] for t in tools["given_out_of_order"]["tools"]
    )
    assert any(ord(ch) > 0xFFFF for ch in tools["names_sorted_by_code_point_not_utf16"]["canonical"])


def test_system_prompt_is_not_normalised() -> None:
    assert system_prompt_sha256("be brief") != system_prompt_sha256("be brief ")
    assert system_prompt_sha256("x") == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_numbers_are_written_as_ecmascript_writes_them() -> None:
    assert canonical_json([1.0, -0.0, 0.5, 1e21, 1e20, 1e-6, 1e-7, 123.456, -2.5e-300]) == (
        "[1,0,0.5,1e+21,100000000000000000000,0.000001,1e-7,123.456,-2.5e-300]"
    )


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        MAX_SAFE_INTEGER + 1,
        -(MAX_SAFE_INTEGER + 1),
        "\ud800",
        {1: "x"},
        b"x",
        {"x"},
    ],
    ids=["nan", "inf", "-inf", "big_int", "big_negative_int", "lone_surrogate", "int_key", "bytes", "set"],
)
def test_values_other_languages_cannot_reproduce_are_refused(value: object) -> None:
    with pytest.raises(ValueError):
        canonical_json({"v": value})


json_without_floats = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@given(json_without_floats)
def test_canonical_json_is_python_json_with_sorted_keys_for_float_free_values(value: object) -> None:
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_canonical_numbers_parse_back_to_the_same_float(value: float) -> None:
    assert float(canonical_json(value)) == value


tool_lists = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=8), "description": st.text(max_size=8)},
        optional={"input_schema": st.dictionaries(st.text(max_size=4), json_without_floats, max_size=3)},
    ),
    max_size=5,
    unique_by=lambda tool: str(tool["name"]),
)


@given(tool_lists, st.randoms(use_true_random=False))
def test_tool_order_does_not_change_the_hash(tools: list[dict[str, Any]], random: Any) -> None:
    shuffled = random.sample(tools, len(tools))
    assert tools_sha256(shuffled) == tools_sha256(tools)


def test_a_changed_tool_changes_the_hash() -> None:
    tool = {"name": "search", "description": "Search.", "input_schema": {"type": "object"}}
    assert tools_sha256([tool]) != tools_sha256([{**tool, "description": "Search!"}])
    assert tools_sha256([]) != tools_sha256([tool])
