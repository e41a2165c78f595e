"""The listing's page token: a position that continues only the listing that made it (AIP-158)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.page_token import decode_page_token, encode_page_token, filters_digest

LABELS = {"team": "a", "env": "prod"}


def test_a_token_decodes_to_its_position_with_the_same_filters() -> None:
    digest = filters_digest({"status": 0, "labels": LABELS})
    token = encode_page_token((1700000000, 5, "run-b"), digest)
    assert decode_page_token(token, digest) == (1700000000, 5, "run-b")


def test_the_digest_does_not_depend_on_key_order() -> None:
    reordered = dict(reversed(list(LABELS.items())))
    assert filters_digest({"labels": LABELS, "status": 0}) == filters_digest({"status": 0, "labels": reordered})


@pytest.mark.parametrize(
    "other",
    [
        {"status": 1, "labels": LABELS},
        {"status": 0, "labels": {"team": "a"}},
        {"status": 0, "labels": {**LABELS, "env": "dev"}},
        {"status": 0, "labels": LABELS, "run_id_prefixes": ["tenant-"]},
    ],
)
def test_a_token_sent_with_other_filters_is_invalid_argument_naming_page_token(other: dict[str, object]) -> None:
    token = encode_page_token((1, 2, "r"), filters_digest({"status": 0, "labels": LABELS}))
    with pytest.raises(InvalidArgumentError) as caught:
        decode_page_token(token, filters_digest(other))
    assert caught.value.metadata["field"] == "page_token"
    assert "other filters" in caught.value.message


def test_a_token_without_a_digest_is_refused_not_continued() -> None:
    """A token of the old form (a position alone) names no listing, so it continues none."""
    legacy = base64.urlsafe_b64encode(json.dumps([1, 2, "r"]).encode()).decode().rstrip("=")
    with pytest.raises(InvalidArgumentError):
        decode_page_token(legacy, filters_digest({}))


def test_no_position_is_the_empty_token_and_the_empty_token_is_the_first_page() -> None:
    assert encode_page_token(None, filters_digest({})) == ""
    assert decode_page_token("", filters_digest({"status": 3})) is None


@given(st.text(max_size=200))
def test_any_forged_token_is_invalid_argument_or_a_position_never_another_error(token: str) -> None:
    digest = filters_digest({})
    try:
        position = decode_page_token(token, digest)
    except InvalidArgumentError as err:
        assert err.metadata["field"] == "page_token"
    else:
        assert position is None or isinstance(position, tuple)
