"""Storage backends behind one contract, and the registry that makes one from the settings.

The contract, a module per part (each says what it promises and why):

* ``base.py``: ``Backend``, the store of run journals (the names of the whole
  contract are importable from here);
* ``journal.py``: ``Journal``, a run opened for writing, and its appends' promises;
* ``deletion.py``: deleting runs, and "is this run deleted", decided here alone;
* ``tombstone.py``: what a deleted run keeps, and its one stored document;
* ``reading.py``: checking a record read back, and the backward walk;
* ``task_store.py``: the task documents kept beside the journals;
* ``index_store.py``: how a backend persists the listing index.

The backends: ``file/`` (a directory of files, fsync and flock) and
``jetstream/`` (a NATS JetStream stream). This package imports only
``core``: no feature above it.

The registry is a plain mapping from a backend name to a factory that imports
its module lazily, so the file backend never pays for nats-py and nothing
registers itself at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Protocol

from runjournal_server.backends.base import Backend, BackendStartError


class BackendConfig(Protocol):
    """What the registry reads of the server's settings (``config.Config`` has these and more).

    Stated here so that the backends import nothing above them: the settings
    table lives with the command line, which imports the backends.
    """

    @property
    def backend(self) -> str: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def nats_url(self) -> str: ...
    @property
    def nats_stream(self) -> str: ...
    @property
    def nats_subject_prefix(self) -> str: ...
    @property
    def nats_create_stream(self) -> bool: ...
    @property
    def nats_replicas(self) -> int: ...
    @property
    def max_record_bytes(self) -> int | None: ...
    @property
    def nats_request_timeout_seconds(self) -> float: ...
    @property
    def nats_creds(self) -> Path | None: ...
    @property
    def nats_tls_ca(self) -> Path | None: ...
    @property
    def nats_tls_cert(self) -> Path | None: ...
    @property
    def nats_tls_key(self) -> Path | None: ...
    @property
    def nats_user(self) -> str: ...
    @property
    def nats_password(self) -> str: ...
    @property
    def nats_token(self) -> str: ...


def _file(config: BackendConfig, executor: Executor) -> Backend:
    from runjournal_server.backends.file import FileBackend

    return FileBackend(config.data_dir, executor=executor)


def _jetstream(config: BackendConfig, executor: Executor) -> Backend:
    from runjournal_server.backends.jetstream import JetStreamBackend, nats_connect_options

    return JetStreamBackend(
        [url.strip() for url in config.nats_url.split(",") if url.strip()],
        stream=config.nats_stream,
        subject_prefix=config.nats_subject_prefix,
        create_stream=config.nats_create_stream,
        replicas=config.nats_replicas,
        max_record_bytes=config.max_record_bytes,
        request_timeout_seconds=config.nats_request_timeout_seconds,
        connect_options=nats_connect_options(
            creds_file=config.nats_creds,
            tls_ca_file=config.nats_tls_ca,
            tls_cert_file=config.nats_tls_cert,
            tls_key_file=config.nats_tls_key,
            user=config.nats_user or None,
            password=config.nats_password or None,
            token=config.nats_token or None,
        ),
    )


__all__ = ["FACTORIES", "Backend", "BackendConfig", "BackendStartError", "make_backend"]

FACTORIES: dict[str, Callable[[BackendConfig, Executor], Backend]] = {"file": _file, "jetstream": _jetstream}


def make_backend(config: BackendConfig, executor: Executor) -> Backend:
    """The backend ``config.backend`` names; unknown names list the known ones."""
    try:
        factory = FACTORIES[config.backend]
    except KeyError:
        raise ValueError(f"unknown backend {config.backend!r}; known: {', '.join(sorted(FACTORIES))}") from None
    return factory(config, executor)
