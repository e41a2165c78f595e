"""Payload messages to and from their proto3 JSON form: the walker the codec uses both ways.

Direct walks over the shapes records use (strings, bools, int32, enums,
nested and repeated messages, string maps, Timestamps) instead of
``json_format``: its generic machinery cost a quarter of a server's CPU per
append, and its parser scans every string with a regex. Being exact is not
this module's job on the way in: ``records.decode`` re-encodes what it parsed
and refuses a line unless the bytes match.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, NoReturn

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


def to_json_dict(message: Message) -> dict[str, object]:
    """The proto3 JSON form of a payload, as ``json_format.MessageToDict(preserving_proto_field_name=True)``.

    A direct walk over the set fields, for the shapes records use (strings,
    bools, int32, enums, nested and repeated messages, string maps,
    Timestamps): MessageToDict's generic machinery cost a quarter of a
    server's CPU per append. Each field's conversion is worked out once
    (``_converter``), so the walk is one call per set field, none per scalar.
    A test pins the two to the same output.
    """
    out: dict[str, object] = {}
    for field, value in message.ListFields():
        name, convert = _converter(field)
        out[name] = value if convert is None else convert(value)
    return out


Convert = Callable[[Any], object]


@functools.cache
def _converter(field: Any) -> tuple[str, Convert | None]:
    """A field's JSON name and how its value converts (None: as it is), worked out once per field.

    Descriptor options are slow to read, and a per-value dispatch on the
    field's shape cost more than the conversion itself.
    """
    convert: Convert | None
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return field.name, dict
    if field.message_type is not None and field.message_type.full_name == "google.protobuf.Timestamp":
        convert = _timestamp
    elif field.message_type is not None:
        convert = to_json_dict
    elif field.enum_type is not None:
        convert = functools.partial(_enum_name, {value.number: value.name for value in field.enum_type.values})
    else:
        return field.name, list if field.is_repeated else None
    if field.is_repeated:
        return field.name, functools.partial(_each, convert)
    return field.name, convert


def _timestamp(value: Any) -> object:
    return value.ToJsonString()


def _enum_name(names: dict[int, str], value: int) -> object:
    return names.get(value, value)


def _each(convert: Convert, values: Any) -> list[object]:
    return [convert(value) for value in values]


def brief(value: object) -> str:
    """A value for an error message, cut short (a corrupt line can hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""Made once: ``json.loads`` with any keyword builds a new decoder per call, which cost more than the parse
of a small record (5 of 11 us for a tool call's input)."""


def load_json(text: str) -> Any:
    """json.loads, refusing NaN/Infinity; raises ValueError or RecursionError."""
    return _DECODER.decode(text)


class PayloadError(Exception):
    pass


_INT32_RANGE = range(-(1 << 31), 1 << 31)
_SCALAR_NAMES = {
    FieldDescriptor.CPPTYPE_STRING: "a string",
    FieldDescriptor.CPPTYPE_BOOL: "true",
    FieldDescriptor.CPPTYPE_INT32: "a 32-bit integer",
    FieldDescriptor.CPPTYPE_ENUM: "an enum value name",
}


def fill(message: Message, obj: object, path: str) -> None:
    """Set ``message`` from the proto3 JSON object ``obj``, accepting only the shapes encode writes.

    Not json_format.ParseDict: it scans every string for unpaired surrogates
    with a regex (about 100 ms per MiB of text), and strict UTF-8 decoding of
    the body already excludes them. Being exact is not this function's job:
    decode re-encodes the result and refuses the line unless the bytes match,
    so a shape this parser mishandles can only be refused, never mis-read.
    """
    if not isinstance(obj, dict):
        raise PayloadError(f"{path}: expected a JSON object")
    fields = message.DESCRIPTOR.fields_by_name
    for name, value in obj.items():
        field = fields.get(name)
        where = f"{path}.{name}"
        if field is None:
            raise PayloadError(f"{where}: unknown field")
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if not isinstance(value, dict) or not all(type(v) is str for v in value.values()):
                raise PayloadError(f"{where}: expected an object of strings")
            getattr(message, name).update(value)
        elif field.is_repeated:
            if not isinstance(value, list):
                raise PayloadError(f"{where}: expected a list")
            container = getattr(message, name)
            for index, item in enumerate(value):
                if field.message_type is not None:
                    fill(container.add(), item, f"{where}[{index}]")
                else:
                    container.append(_scalar(field, item, f"{where}[{index}]"))
        elif field.message_type is not None:
            child = getattr(message, name)
            child.SetInParent()
            if field.message_type.full_name == "google.protobuf.Timestamp":
                if type(value) is not str:
                    raise PayloadError(f"{where}: expected an RFC 3339 string")
                child.FromJsonString(value)
            else:
                fill(child, value, where)
        else:
            setattr(message, name, _scalar(field, value, where))


def _scalar(field: Any, value: object, where: str) -> object:
    """The Python value for a scalar field (``field`` is a FieldDescriptor, Python or upb)."""
    cpp_type = field.cpp_type
    if cpp_type == FieldDescriptor.CPPTYPE_STRING and type(value) is str:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_BOOL and type(value) is bool:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_INT32 and type(value) is int and value in _INT32_RANGE:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_ENUM and type(value) is str:
        enum_value = field.enum_type.values_by_name.get(value)
        if enum_value is not None:
            return enum_value.number
    expected = _SCALAR_NAMES.get(cpp_type, "a supported field type")
    raise PayloadError(f"{where}: expected {expected}, got {brief(value)}")
