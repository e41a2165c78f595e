"""Run ids are case-sensitive; the file backend names files after them, so it starts only where names are too.

``Case-Run`` and ``case-run`` are two runs (``core/ids.py``). On a volume
that folds case (macOS's default APFS, Windows and WSL's ``/mnt/c``, vfat
and exFAT, many network shares) their journals, locks, tombstones and task
documents would be one file: the second run's reads would return the
first's records and its appends would land in the first's journal. So
``start`` creates a probe whose name mixes cases in each directory where
ids become file names (the data directory, and its ``deleted`` and
``tasks`` directories where they exist already: on Windows case
sensitivity is set per directory), looks it up with every letter's case
swapped, and refuses to start where that finds it.

Refusing rather than encoding ids into case-free names keeps one layout
(``<run>.jsonl``, found by its id, by operators, backups and ``migrate``) and
no rename at start; docs/file-backend.md says why and what to use instead.
The listing index names no file after an id (its files hold ids as data),
so it needs no probe.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runjournal_server.backends.base import BackendStartError

PROBE_PREFIX = ".Case-Probe-"
"""Upper- and lower-case letters, so the probe's name changes when every letter's case is swapped."""


def folds_case(directory: Path) -> bool:
    """True when ``directory`` finds a file under its name with every letter's case swapped.

    Existence, not the inode, decides: a FUSE file system may number one
    file differently on each lookup.
    """
    fd, probe = tempfile.mkstemp(dir=directory, prefix=PROBE_PREFIX)
    os.close(fd)
    try:
        return os.path.lexists(Path(probe).with_name(Path(probe).name.swapcase()))
    finally:
        os.unlink(probe)


def check_case_sensitive(data_dir: Path, subdirectories: tuple[str, ...]) -> None:
    """Raise ``BackendStartError`` naming the fix where the data directory (or one of its id-named ones) folds case."""
    for directory in (data_dir, *(data_dir / name for name in subdirectories)):
        if directory.is_dir() and folds_case(directory):
            raise BackendStartError(
                f"{directory} is on a case-insensitive file system, but run ids are case-sensitive: runs 'Case-Run' "
                "and 'case-run' would share one journal file. Put the data directory on a case-sensitive volume "
                "(macOS: a 'Case-sensitive APFS' volume or disk image; Windows/WSL: a directory inside the Linux "
                "file system, or 'fsutil file setCaseSensitiveInfo <dir> enable' on an empty directory), or use "
                "the JetStream backend; see docs/file-backend.md"
            )
