"""The providers' JSON as the tests hold it: the files of ``testdata/provider_content/``.

Each file holds one block (Anthropic Messages API) or one item (OpenAI
Responses API) in the provider's wire shape, followed by one newline that is
not part of it: Anthropic's compact, OpenAI's indented, as each API sends
them. ``provider_json`` is those exact characters; ``opaque`` puts them in an
opaque block untouched (never parsed and re-serialised, which would sort keys
and rewrite escapes, as ``runjournal.opaque_block`` does with a value).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runjournal.v1.records_pb2 import ContentBlock, OpaqueBlock

ROOT = Path(__file__).resolve().parents[2] / "testdata" / "provider_content"
PROVIDERS = ("anthropic", "openai")


def fixture_path(provider: str, name: str) -> Path:
    return ROOT / provider / f"{name}.json"


def provider_json(provider: str, name: str) -> str:
    """The provider's JSON text of fixture ``name``, character for character."""
    text = fixture_path(provider, name).read_text(encoding="utf-8")
    assert text.endswith("\n") and not text.endswith("\n\n"), f"{name}: one trailing newline expected"
    return text[:-1]


def provider_value(provider: str, name: str) -> Any:
    return json.loads(provider_json(provider, name))


def opaque(provider: str, name: str) -> ContentBlock:
    """An opaque block holding the fixture verbatim; its type is the provider's own type name."""
    text = provider_json(provider, name)
    return ContentBlock(opaque=OpaqueBlock(provider=provider, type=json.loads(text)["type"], json=text))


def raw_member(text: str, key: str) -> str:
    """The exact text of the top-level member ``key`` of a JSON object (e.g. a tool_use's ``input``).

    A typed tool_use keeps its input as text; taking the provider's own
    characters (rather than re-serialising the parsed value) is how a client
    keeps them. The key must occur once in ``text``.
    """
    marker = json.dumps(key) + ":"
    assert text.count(marker) == 1, f"{key!r} must occur once"
    start = text.index(marker) + len(marker)
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]
