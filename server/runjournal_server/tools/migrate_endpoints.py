"""Where a migration reads and writes: the SPECs (``file:DIR``, ``jetstream:URL/STREAM?...``) as backend settings."""

from __future__ import annotations

import dataclasses
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from runjournal_server import config as config_module


class SpecError(ValueError):
    """A --from/--to SPEC that cannot be used; the message shows the grammar."""


# ---------------------------------------------------------------- endpoints


@dataclass(frozen=True)
class Endpoint:
    """One end of a migration: the settings of the backend it names, and how to name it to people."""

    config: config_module.Config
    label: str

    @property
    def identity(self) -> tuple[object, ...]:
        """Equal for two endpoints that are the same store."""
        c = self.config
        if c.backend == "file":
            return ("file", c.data_dir.resolve())
        return ("jetstream", c.nats_url, c.nats_stream, c.nats_subject_prefix)


def parse_spec(spec: str, settings: config_module.Config, *, target: bool) -> Endpoint:
    """``file:DIR`` or ``jetstream:URLS/STREAM[?prefix=P&create=1&replicas=N]`` (see ``DESCRIPTION``)."""
    kind, sep, rest = spec.partition(":")
    if sep and kind == "file":
        if not rest:
            raise SpecError(f"{spec!r}: name the directory, e.g. file:./runjournal-data")
        return Endpoint(dataclasses.replace(settings, backend="file", data_dir=Path(rest)), spec)
    if sep and kind == "jetstream":
        return Endpoint(_jetstream_config(spec, rest, settings, target=target), spec)
    raise SpecError(f"{spec!r}: a SPEC is file:DIR or jetstream:NATS_URL/STREAM[?prefix=P&create=1]")


def _jetstream_config(spec: str, rest: str, settings: config_module.Config, *, target: bool) -> config_module.Config:
    from runjournal_server.backends.jetstream.config import validate_stream_name, validate_subject_prefix

    location, _, query = rest.partition("?")
    urls, stream = settings.nats_url, settings.nats_stream
    if location:
        scheme_end = location.rfind("://")
        slash = location.find("/", scheme_end + 3) if scheme_end >= 0 else -1
        if slash < 0:
            raise SpecError(f"{spec!r}: name the stream after the URL, e.g. jetstream:nats://127.0.0.1:4222/RUNJOURNAL")
        urls, stream = location[:slash], location[slash + 1 :]
    options = {"prefix": settings.nats_subject_prefix, "create": "0", "replicas": str(settings.nats_replicas)}
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError as err:
        raise SpecError(f"{spec!r}: the options after '?' are not NAME=VALUE pairs joined by '&'") from err
    for name, value in pairs:
        if name not in options:
            raise SpecError(f"{spec!r}: unknown option {name!r}; known: {', '.join(options)}")
        options[name] = value
    try:
        create = _flag(options["create"])
        replicas = int(options["replicas"])
        validate_stream_name(stream)
        validate_subject_prefix(options["prefix"])
    except ValueError as err:
        raise SpecError(f"{spec!r}: {err}") from err
    if create and not target:
        raise SpecError(f"{spec!r}: create=1 applies to the target only; a source stream must exist")
    return dataclasses.replace(
        settings,
        backend="jetstream",
        nats_url=urls,
        nats_stream=stream,
        nats_subject_prefix=options["prefix"],
        nats_create_stream=create,
        nats_replicas=replicas,
    )


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"create={text!r} must be 1 or 0")
