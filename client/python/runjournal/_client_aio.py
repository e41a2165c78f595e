"""What the asyncio clients share: the channel, the call settings and the retrying call."""

# The sync version, _client_sync.py, is generated from this module by scripts/generate.py.  # unasync: drop

from __future__ import annotations

import asyncio  # unasync: import time
import random
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import grpc
import grpc.aio  # unasync: drop

from runjournal import _common
from runjournal._common import DEFAULT_TIMEOUT_SECONDS
from runjournal._retry import Attempts, RetryPolicy

_Response = TypeVar("_Response")
_Client = TypeVar("_Client", bound="_AsyncClient")


class _AsyncClient:
    """What the asyncio clients share: the channel, the call settings and the retrying call."""

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
            channel = grpc.aio.insecure_channel(address, options=channel_options)
        else:
            channel = grpc.aio.secure_channel(address, credentials, options=channel_options)
        self._setup(channel, address, timeout, retry, tuple(metadata), owns_channel=True)

    def _setup(
        self,
        channel: grpc.aio.Channel,
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

    def _bind(self, channel: grpc.aio.Channel) -> None:
        """Creates the service's stub on the channel."""
        raise NotImplementedError

    def _sharing(self, cls: type[_Client]) -> _Client:
        """A client of another service on this client's channel, with this client's current settings."""
        other = cls.__new__(cls)
        other._setup(self._channel, self.address, self.timeout, self.retry, self._metadata, owns_channel=False)
        return other

    # --- lifecycle ------------------------------------------------------------

    async def close(self) -> None:
        """Closes the channel (calls in flight are cancelled); does nothing on a borrowed channel."""
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- plumbing -------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _attempts(self) -> Attempts:
        return Attempts(self.retry, self._rng)

    async def _call(
        self,
        method: Callable[..., Awaitable[_Response]],
        request: Any,
        timeout: float | None,
        attempts: Attempts | None = None,
    ) -> _Response:
        attempts = attempts if attempts is not None else self._attempts()
        while True:
            try:
                return await method(request, timeout=self._deadline(timeout), metadata=self._metadata)
            except grpc.RpcError as err:
                delay = attempts.delay_after(err)
            await asyncio.sleep(delay)
