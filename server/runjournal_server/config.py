"""Strict server configuration: defaults < TOML file < environment < flags.

One table (``SETTINGS``) declares every setting once; the flags, the
``RUNJOURNAL_*`` environment variables and the TOML keys are all derived from
it, and docs/configuration.md is generated from it (scripts/generate_docs.py; CI diffs it).
Unknown TOML keys and unparsable values are refused, never ignored. Nothing is
read at import time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runjournal_server.core.records import DEFAULT_MAX_RECORD_BYTES
from runjournal_server.runs.handles import DEFAULT_MAX_WARM_BYTES

ENV_PREFIX = "RUNJOURNAL_"
CONFIG_FILE_ENV = "RUNJOURNAL_CONFIG"
BACKENDS = ("file", "jetstream")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
EVENT_LOOPS = ("uvloop", "asyncio")
DEFAULT_MAX_BATCH_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_CONCURRENT_RPCS = 128
DEFAULT_MAX_HEALTH_RPCS = 32


class ConfigError(ValueError):
    """A setting is unknown or its value is invalid; the message names it."""


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str
    aliases: tuple[str, ...] = ()
    """Extra flag spellings, e.g. ``--stream`` for ``nats_stream``."""
    secret: bool = False
    """Never shown: help text prints no default, messages never echo the value."""


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _replicas(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 5:
        raise ValueError("must be 1 to 5 (JetStream's limit; use 3 in production)")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise ValueError("must be > 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """A duration such as ``30d``, ``12h``, ``90m`` or ``45s`` (or plain seconds) in seconds; empty or 0: off."""
    text = text.strip().lower()
    if not text:
        return 0.0
    unit = _DURATION_UNITS.get(text[-1])
    number = text[:-1] if unit is not None else text
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise ValueError("must be a duration such as 30d, 12h, 90m or 45s (empty: off)") from None
    if value < 0 or value != value or value == float("inf"):
        raise ValueError("must be a duration >= 0")
    return value


def _choice(options: Sequence[str], *, upper: bool = False) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.upper() if upper else text
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return value

    return parse


def _optional(parse: Callable[[str], str]) -> Callable[[str], str]:
    """``parse``, except that an empty value stays empty (the setting is off)."""

    def parse_optional(text: str) -> str:
        return parse(text) if text.strip() else ""

    return parse_optional


def _listen(text: str) -> str:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:50051 or [::]:50051")
    return text


SETTINGS: tuple[Setting, ...] = (
    Setting("backend", _choice(BACKENDS), "file", "storage backend"),
    Setting("data_dir", Path, Path("runjournal-data"), "file backend: directory of the run journals"),
    Setting("listen", _listen, "127.0.0.1:50051", "address to serve gRPC on (HOST:PORT)"),
    Setting(
        "metrics_listen",
        _optional(_listen),
        "",
        "address to serve Prometheus metrics on at /metrics (HOST:PORT); empty: no metrics",
    ),
    Setting(
        "tracing",
        _bool,
        False,
        "export an OpenTelemetry span per RPC over OTLP, configured by the standard OTEL_* variables "
        "(needs runjournal[otel])",
    ),
    Setting(
        "max_record_bytes",
        _positive_int,
        None,
        f"largest stored record line, in bytes (unset: {DEFAULT_MAX_RECORD_BYTES}, "
        "on jetstream lowered to what the NATS server's max_payload carries)",
    ),
    Setting(
        "max_batch_bytes",
        _positive_int,
        DEFAULT_MAX_BATCH_BYTES,
        "largest AppendBatch request; with max_record_bytes it sets the receive limit",
    ),
    Setting(
        "max_message_bytes",
        _positive_int,
        DEFAULT_MAX_MESSAGE_BYTES,
        "largest gRPC answer (Fold and Claim carry whole states); also a ceiling on the receive limit",
    ),
    Setting(
        "max_concurrent_rpcs",
        _positive_int,
        DEFAULT_MAX_CONCURRENT_RPCS,
        "journal and task calls served at once (Read and Watch streams included), from callers with a valid "
        "token when auth is on; more are refused TOO_MANY_CALLS",
    ),
    Setting(
        "max_health_rpcs",
        _positive_int,
        DEFAULT_MAX_HEALTH_RPCS,
        "health and reflection calls served at once (Watch streams included), apart from max_concurrent_rpcs; "
        "more are refused TOO_MANY_CALLS",
    ),
    Setting(
        "max_open_journals",
        _positive_int,
        1024,
        "journals kept open (locked, warm) at once; LRU beyond; lowered to what the fd limit allows",
    ),
    Setting(
        "max_warm_bytes",
        _positive_int,
        DEFAULT_MAX_WARM_BYTES,
        "memory of the warm states of all open runs together (each counted as the stored bytes folded into it "
        "times a measured 3.5); LRU closed beyond",
    ),
    Setting(
        "retention",
        duration_seconds,
        0.0,
        "delete stopped runs whose last record is older than this duration (30d, 12h, 90m, 45s); 0: keep runs",
    ),
    Setting("retention_interval_seconds", _positive_float, 60.0, "retention: seconds between two passes"),
    Setting("retention_max_deletions", _positive_int, 100, "retention: most runs deleted in one pass"),
    Setting(
        "list_without_index",
        _bool,
        False,
        "ListRuns reads every run, keeping no listing index (slow with many runs: for comparison and diagnosis)",
    ),
    Setting("io_threads", _positive_int, 32, "threads for disk I/O and fsync"),
    Setting(
        "event_loop",
        _choice(EVENT_LOOPS),
        "uvloop",
        "the event loop the server runs on: uvloop (libuv, in C: less CPU per call) or the standard asyncio one",
    ),
    Setting("shutdown_grace_seconds", _non_negative_float, 10.0, "time to drain in-flight calls on SIGTERM"),
    Setting("log_level", _choice(LOG_LEVELS, upper=True), "INFO", "logging level"),
    Setting("tls_cert", Path, None, "PEM server certificate chain; enables TLS (with tls_key)"),
    Setting("tls_key", Path, None, "PEM private key of tls_cert"),
    Setting(
        "tls_client_ca", Path, None, "PEM CA bundle; when set, clients must present a certificate it signed (mTLS)"
    ),
    Setting("auth_tokens_file", Path, None, "TOML file of bearer tokens and their run-id prefixes; enables auth"),
    Setting("nats_url", str, "nats://127.0.0.1:4222", "jetstream backend: NATS server URLs, comma-separated"),
    Setting("nats_stream", str, "RUNJOURNAL", "jetstream backend: the stream holding the journals", ("--stream",)),
    Setting("nats_subject_prefix", str, "runjournal", "jetstream backend: records live on <prefix>.<run>.<seq>"),
    Setting(
        "nats_create_stream", _bool, False, "jetstream backend: create the stream if missing", ("--create-stream",)
    ),
    Setting("nats_replicas", _replicas, 1, "jetstream backend: replicas of a created stream", ("--replicas",)),
    Setting("nats_creds", Path, None, "jetstream backend: NATS credentials file"),
    Setting("nats_tls_ca", Path, None, "jetstream backend: CA bundle to verify the NATS servers"),
    Setting("nats_tls_cert", Path, None, "jetstream backend: client certificate for NATS"),
    Setting("nats_tls_key", Path, None, "jetstream backend: key of nats_tls_cert"),
    Setting("nats_user", str, "", "jetstream backend: NATS user"),
    Setting("nats_password", str, "", "jetstream backend: NATS password", secret=True),
    Setting("nats_token", str, "", "jetstream backend: NATS token", secret=True),
    Setting(
        "nats_request_timeout_seconds",
        _positive_float,
        5.0,
        "jetstream backend: how long an append waits for its ack before reading back",
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class Config:
    backend: str = "file"
    data_dir: Path = Path("runjournal-data")
    listen: str = "127.0.0.1:50051"
    metrics_listen: str = ""
    """Empty: no metrics endpoint."""
    tracing: bool = False
    """Off: OpenTelemetry is never imported (see observability/tracing.py)."""
    max_record_bytes: int | None = None
    """None: the backend's default (see ``record_limit``); set, a limit the backend must carry or refuse to start."""
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS
    max_health_rpcs: int = DEFAULT_MAX_HEALTH_RPCS
    max_open_journals: int = 1024
    max_warm_bytes: int = DEFAULT_MAX_WARM_BYTES
    retention: float = 0.0
    """Seconds; 0: retention is off (see retention.py)."""
    retention_interval_seconds: float = 60.0
    retention_max_deletions: int = 100
    list_without_index: bool = False
    """True: no listing index (listing/upkeep.py); every ListRuns reads every run."""
    io_threads: int = 32
    event_loop: str = "uvloop"
    shutdown_grace_seconds: float = 10.0
    log_level: str = "INFO"
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    auth_tokens_file: Path | None = None
    nats_url: str = "nats://127.0.0.1:4222"
    nats_stream: str = "RUNJOURNAL"
    nats_subject_prefix: str = "runjournal"
    nats_create_stream: bool = False
    nats_replicas: int = 1
    nats_creds: Path | None = None
    nats_tls_ca: Path | None = None
    nats_tls_cert: Path | None = None
    nats_tls_key: Path | None = None
    nats_user: str = ""
    nats_password: str = field(default="", repr=False)
    nats_token: str = field(default="", repr=False)
    nats_request_timeout_seconds: float = 5.0

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert and tls_key go together: set both to serve TLS, or neither")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ConfigError("tls_client_ca (mTLS) needs tls_cert and tls_key")
        if self.max_message_bytes < self.record_limit + 64 * 1024:
            raise ConfigError(
                "max_message_bytes must exceed max_record_bytes by at least 64 KiB so a maximal record fits"
            )

    @property
    def record_limit(self) -> int:
        """The record limit before the backend has a say: the one set, else the default."""
        return self.max_record_bytes or DEFAULT_MAX_RECORD_BYTES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one flag per setting (all defaulting to 'not given')."""
    parser.add_argument("--config", type=Path, help=f"TOML file of settings (or ${CONFIG_FILE_ENV})")
    for setting in SETTINGS:
        flags = ["--" + setting.name.replace("_", "-"), *setting.aliases]
        default = "unset" if setting.secret or setting.default is None else setting.default
        help_text = f"{setting.help} (env {ENV_PREFIX}{setting.name.upper()}; default {default})"
        if setting.parse is _bool:
            # A switch: given means true; the environment or the file can say false.
            parser.add_argument(*flags, dest=setting.name, action="store_const", const="true", help=help_text)
        else:
            parser.add_argument(*flags, dest=setting.name, default=None, help=help_text)


def load(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """Merge the sources; flags win over the environment, which wins over the file."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    config_file = getattr(args, "config", None) or environ.get(CONFIG_FILE_ENV)
    if config_file:
        values.update(_from_toml(Path(config_file)))
    for setting in SETTINGS:
        env_value = environ.get(ENV_PREFIX + setting.name.upper())
        if env_value is not None:
            values[setting.name] = _parse(setting, env_value, f"${ENV_PREFIX}{setting.name.upper()}")
        flag_value = getattr(args, setting.name, None)
        if flag_value is not None:
            values[setting.name] = _parse(setting, flag_value, "--" + setting.name.replace("_", "-"))
    return Config(**values)


def _from_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"cannot read config file {path}: {err.strerror}") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {path} is not valid TOML: {err}") from err
    unknown = sorted(set(data) - set(_BY_NAME))
    if unknown:
        known = ", ".join(s.name for s in SETTINGS)
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(unknown)}; known: {known}")
    return {name: _parse(_BY_NAME[name], str(value), f"{path}: {name}") for name, value in data.items()}


def _parse(setting: Setting, text: str, source: str) -> Any:
    try:
        return setting.parse(text)
    except ValueError as err:
        shown = "(hidden)" if setting.secret else repr(text)
        raise ConfigError(f"{source}: invalid value {shown}: {err}") from err


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Config)]
