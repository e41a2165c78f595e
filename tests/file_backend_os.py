"""Fault injection into the file backend's ``os``: every module of the package that calls it sees the replacement."""

from __future__ import annotations

from typing import Any

import pytest

from runjournal_server.backends.file import backend, directory, files, intent, journal, lines, opening, reading

JOURNAL_MODULES = (files, lines, intent, reading, journal, directory, opening, backend)
"""The modules that read and write journals and lock files (``tasks`` has its own ``os``)."""


def replace_os(replacement: Any) -> None:
    """For a child process that runs the server: every journal module's ``os`` is ``replacement`` from now on."""
    for module in JOURNAL_MODULES:
        module.os = replacement  # type: ignore[attr-defined]


def patch_os(monkeypatch: pytest.MonkeyPatch, replacement: Any) -> None:
    """For a test: every journal module's ``os`` is ``replacement`` until the test ends."""
    for module in JOURNAL_MODULES:
        monkeypatch.setattr(module, "os", replacement)
