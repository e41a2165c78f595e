"""The client's typed error properties read ``ERROR_METADATA`` as the server writes it (issue 10, item 15).

Walks every reason of the shared table: its client class exposes a property
for each declared key, returning the declared type; a property a class adds
for its own reason reads only a key declared for that reason. The client may
not import the server, so this side imports only ``runjournal``.
"""

from __future__ import annotations

import grpc
import pytest

from runjournal import errors
from runjournal.error_metadata import ERROR_METADATA, parse_metadata

WIRE_SAMPLES: dict[type, str] = {int: "7", str: "sample", list: "provider,model"}

# Properties that read something other than ErrorInfo metadata.
NOT_METADATA = {"stored_task"}


def test_the_client_knows_exactly_the_reasons_of_the_table() -> None:
    assert set(errors.REASON_ERRORS) == set(ERROR_METADATA)


def test_a_key_has_one_type_whatever_the_reason() -> None:
    types: dict[str, set[type]] = {}
    for keys in ERROR_METADATA.values():
        for name, key in keys.items():
            types.setdefault(name, set()).add(key.type)
    assert {name: kinds for name, kinds in types.items() if len(kinds) > 1} == {}


@pytest.mark.parametrize("reason", sorted(ERROR_METADATA))
def test_every_declared_key_is_a_typed_property_of_its_class(reason: str) -> None:
    declared = ERROR_METADATA[reason]
    metadata = {name: WIRE_SAMPLES[key.type] for name, key in declared.items()}
    cls = errors.REASON_ERRORS[reason]
    err = cls("m", code=grpc.StatusCode.UNKNOWN, reason=reason, metadata=metadata)
    for name, key in declared.items():
        assert isinstance(getattr(type(err), name, None), property), f"{cls.__name__} has no {name!r} property"
        value = getattr(err, name)
        assert isinstance(value, key.type), (name, value)
        assert value == parse_metadata(key.type, metadata[name]), name


@pytest.mark.parametrize("reason", sorted(ERROR_METADATA))
def test_a_class_reads_only_keys_declared_for_its_reason(reason: str) -> None:
    cls = errors.REASON_ERRORS[reason]
    own = {
        name
        for klass in cls.__mro__
        if klass not in (errors.RunJournalError, errors.StatusError, object, Exception, BaseException)
        for name, value in vars(klass).items()
        if isinstance(value, property)
    }
    assert own - NOT_METADATA <= set(ERROR_METADATA[reason])


@pytest.mark.parametrize("reason", sorted(ERROR_METADATA))
def test_an_absent_optional_key_reads_as_none(reason: str) -> None:
    declared = ERROR_METADATA[reason]
    metadata = {name: WIRE_SAMPLES[key.type] for name, key in declared.items() if key.always}
    err = errors.REASON_ERRORS[reason]("m", reason=reason, metadata=metadata)
    for name, key in declared.items():
        if not key.always:
            assert getattr(err, name) is None, name
