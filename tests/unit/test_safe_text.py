"""``safe_text``: the one escape every journal string passes before the CLI prints it (issue 10, item 19)."""

from __future__ import annotations

import pytest

from runjournal.render import safe_text

CONTROLS = [
    *map(chr, range(0x00, 0x20)),
    "\x7f",
    *map(chr, range(0x80, 0xA0)),
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
    "\u2028",
    "\u2029",
]


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_character_is_shown_as_its_escape(char: str) -> None:
    code = ord(char)
    expected = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    assert safe_text(f"a{char}b") == f"a{expected}b"


def test_ordinary_text_of_any_script_is_kept_as_written() -> None:
    text = "deploy to prod? ok — 日本語, עברית, العربية, emoji 🚀, tab-free \\x1b literal"
    assert safe_text(text) == text
