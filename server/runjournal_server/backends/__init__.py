"""Storage backends behind one contract (``base.py``).

The registry is a plain mapping from a backend name to a factory that imports
its module lazily, so the file backend never pays for nats-py and nothing
registers itself at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from runjournal_server.backends.base import Backend
from runjournal_server.config import Config


def _file(config: Config, executor: Executor) -> Backend:
    from runjournal_server.backends.file import FileBackend

    return FileBackend(config.data_dir, executor=executor)


FACTORIES: dict[str, Callable[[Config, Executor], Backend]] = {"file": _file}


def make_backend(config: Config, executor: Executor) -> Backend:
    """The backend ``config.backend`` names; unknown names list the known ones."""
    try:
        factory = FACTORIES[config.backend]
    except KeyError:
        raise ValueError(f"unknown backend {config.backend!r}; known: {', '.join(sorted(FACTORIES))}") from None
    return factory(config, executor)
