"""The run-id grammar: 1-128 of [A-Za-z0-9_-], starting with a letter or digit, full match."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.ids import MAX_RUN_ID_CHARS, is_valid_run_id, validate_run_id
from tests.support.strategies import run_ids

REFUSED = {
    "path escape": "../x",
    "dot": "a.b",
    "subject wildcard": "a*",
    "subject tail wildcard": "a>",
    "empty": "",
    "129 characters": "a" * 129,
    "trailing newline": "run-1\n",
    "leading dash": "-run",
    "leading underscore": "_run",
    "slash": "a/b",
    "space": "a b",
    "non-ascii letter": "rün",
    "nul": "a\x00",
}

ACCEPTED = {
    "one character": "a",
    "one digit": "7",
    "128 characters": "a" * 128,
    "dashes and underscores": "Run_1-b",
    "uuid": "0b7c3e4e-5a5c-4f5e-9d7e-2f1f2a3b4c5d",
}


@pytest.mark.parametrize("run_id", REFUSED.values(), ids=REFUSED.keys())
def test_a_run_id_outside_the_grammar_is_refused_naming_the_field(run_id: str) -> None:
    assert not is_valid_run_id(run_id)
    with pytest.raises(InvalidArgumentError) as caught:
        validate_run_id(run_id, field="request.run_id")
    assert caught.value.field == "request.run_id"
    assert caught.value.metadata == {"field": "request.run_id"}


@pytest.mark.parametrize("run_id", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_a_run_id_in_the_grammar_is_accepted_unchanged(run_id: str) -> None:
    assert is_valid_run_id(run_id)
    assert validate_run_id(run_id) == run_id


def test_the_longest_run_id_is_128_characters() -> None:
    assert MAX_RUN_ID_CHARS == 128
    assert is_valid_run_id("a" * MAX_RUN_ID_CHARS)
    assert not is_valid_run_id("a" * (MAX_RUN_ID_CHARS + 1))


def test_a_run_id_that_is_not_a_string_is_refused() -> None:
    assert not is_valid_run_id(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        validate_run_id(b"run-1")  # type: ignore[arg-type]


@given(run_ids)
def test_every_run_id_in_the_grammar_is_accepted(run_id: str) -> None:
    assert validate_run_id(run_id) == run_id


@given(st.text(max_size=140))
def test_the_check_agrees_with_the_character_rule(text: str) -> None:
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    expected = 1 <= len(text) <= 128 and text[0] not in "_-" and set(text) <= allowed
    assert is_valid_run_id(text) is expected
