"""The assertions every fixture gets, wherever it lands: Read, the stored line, the store and Fold agree with it.

For an opaque block, "kept" means the ``json`` string is the provider's text
character for character (and so byte for byte in UTF-8) in the record Read
decodes, in the stored line's JSON, in the folded conversation, and that the
stored line holds it as one JSON string (the canonical escaping of that very
text), the store holding the same line.
"""

from __future__ import annotations

import json

from tests.provider_content.fixtures import provider_json
from tests.provider_content.loops import Place
from tests.provider_content.roundtrip import RoundTrip


def assert_stored_as_read(loop: RoundTrip) -> None:
    """Read's stored lines are the store's bytes, and each decodes to the record appended."""
    assert [item.stored_line for item in loop.items] == loop.store
    assert [item.record for item in loop.items] == loop.appended


def assert_opaque_kept(loop: RoundTrip, provider: str, name: str, places: list[Place]) -> str:
    """The fixture came back verbatim at each of its places; returns its text."""
    text = provider_json(provider, name)
    kind = json.loads(text)["type"]
    for place in places:
        for block in (loop.read_block(place), loop.folded_block(place)):
            assert block.WhichOneof("block") == "opaque", (name, block)
            assert (block.opaque.provider, block.opaque.type) == (provider, kind)
            assert block.opaque.json == text
            assert block.opaque.json.encode() == text.encode()
        stored = loop.line_block(place)
        assert stored == {"opaque": {"provider": provider, "type": kind, "json": text}}
        line = loop.store[place.seq - 1]
        assert json.dumps(text, ensure_ascii=False).encode() in line
    return text
