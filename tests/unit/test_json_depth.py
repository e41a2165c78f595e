"""The JSON-depth rule of tool inputs and outputs: the bracket-count shortcut never changes a verdict."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runjournal_server.core.json_text import MAX_JSON_DEPTH, json_text_problem, nesting_exceeds

_leaves = st.none() | st.booleans() | st.integers() | st.text(alphabet='ab{[]}"\\', max_size=4)
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=200,
)


def _wrapped(value: object, depth: int) -> object:
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


@settings(max_examples=300)
@given(_values, st.integers(min_value=0, max_value=MAX_JSON_DEPTH + 3))
def test_a_json_text_is_refused_for_depth_exactly_when_the_walk_says_it_is_too_deep(value, extra):
    value = _wrapped(value, extra)
    text = json.dumps(value)
    too_deep = nesting_exceeds(value, MAX_JSON_DEPTH)
    problem = json_text_problem(text)
    assert (problem is not None and "nested" in problem) == too_deep, (problem, too_deep)
