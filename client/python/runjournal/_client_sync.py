# GENERATED from client/python/runjournal/_client_aio.py by scripts/generate.py: do not edit by hand.
# Edit _client_aio.py and run `python scripts/generate.py`; CI fails when this file differs.
"""What the sync clients share: the channel, the call settings and the retrying call."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc

from runjournal import _common
from runjournal._common import DEFAULT_TIMEOUT_SECONDS
from runjournal._retry import Attempts, RetryPolicy

_Response = TypeVar("_Response")
_Client = TypeVar("_Client", bound="_SyncClient")


class _SyncClient:
    """What the sync clients share: the channel, the call settings and the retrying call."""

    def __init__(
        self,
        address: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        channel_options = _common.channel_options(options)
        if credentials is None:
            channel = grpc.insecure_channel(address, options=channel_options)
        else:
            channel = grpc.secure_channel(address, credentials, options=channel_options)
        self._setup(channel, address, timeout, retry, tuple(metadata), owns_channel=True)

    def _setup(
        self,
        channel: grpc.Channel,
        address: str,
        timeout: float,
        retry: RetryPolicy | None,
        metadata: tuple[tuple[str, str], ...],
        *,
        owns_channel: bool,
    ) -> None:
        self._channel = channel
        self._owns_channel = owns_channel
        self.address = address
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._metadata = metadata
        self._rng = random.Random()
        self._bind(channel)

    def _bind(self, channel: grpc.Channel) -> None:
        """Creates the service's stub on the channel."""
        raise NotImplementedError

    def _sharing(self, cls: type[_Client]) -> _Client:
        """A client of another service on this client's channel, with this client's current settings."""
        other = cls.__new__(cls)
        other._setup(self._channel, self.address, self.timeout, self.retry, self._metadata, owns_channel=False)
        return other

    # --- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel (calls in flight are cancelled); does nothing on a borrowed channel."""
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- plumbing -------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _attempts(self) -> Attempts:
        return Attempts(self.retry, self._rng)

    def _call(
        self,
        method: Callable[..., _Response],
        request: Any,
        timeout: float | None,
        attempts: Attempts | None = None,
    ) -> _Response:
        attempts = attempts if attempts is not None else self._attempts()
        while True:
            try:
                return method(request, timeout=self._deadline(timeout), metadata=self._metadata)
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            time.sleep(delay)
