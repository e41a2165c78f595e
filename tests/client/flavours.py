"""One scenario, both clients: the asyncio source and the sync code generated from it.

A test takes the ``flavour`` fixture and builds its clients and run handles
from it. A test written in the sync style uses ``flavour.JournalClient``,
``flavour.TaskClient`` and ``flavour.Run``; one written in the asyncio style
uses ``flavour.AsyncJournalClient``, ``flavour.AsyncTaskClient`` and
``flavour.AsyncRun``. Each runs twice:

- ``sync``: the sync-style names are the real sync classes; the asyncio-style
  ones are the sync classes behind ``Awaiting``, which runs every call in a
  worker thread (so ``asyncio.gather`` makes the calls truly concurrent).
- ``asyncio``: the asyncio-style names are the real asyncio classes; the
  sync-style ones are the asyncio classes behind ``Blocking``, which awaits
  every call on the test's own event loop.

Either way the calls, their arguments and the assertions are the same; a
returned iterator arrives as a list.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from runjournal import AsyncJournalClient, AsyncRun, AsyncTaskClient, JournalClient, Run, TaskClient

_ASYNC_FACED = (AsyncJournalClient, AsyncTaskClient, AsyncRun)
_SYNC_FACED = (JournalClient, TaskClient, Run)


def _targets(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments with every face replaced by the object behind it (a client passed to ``Run.create``)."""

    def target(value: Any) -> Any:
        return value._target if isinstance(value, Blocking | Awaiting) else value

    return tuple(target(a) for a in args), {k: target(v) for k, v in kwargs.items()}


class Blocking:
    """A blocking face over an asyncio client, run handle, or their class."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._target = target
        self._loop = loop

    def _face(self, value: Any) -> Any:
        return Blocking(value, self._loop) if isinstance(value, _ASYNC_FACED) else value

    def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _targets(args, kwargs)

        async def settle() -> Any:
            # Called inside the loop: a client is created in the loop that will use it.
            result = function(*args, **kwargs)
            if inspect.isawaitable(result):
                return await result
            if isinstance(result, AsyncIterator):
                return [item async for item in result]
            return result

        return self._face(self._loop.run_until_complete(settle()))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: self._call(value, *args, **kwargs)
        return self._face(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(self._target, *args, **kwargs)

    def __enter__(self) -> Any:
        return self._call(self._target.__aenter__)

    def __exit__(self, *exc_info: Any) -> None:
        self._call(self._target.__aexit__, *exc_info)


class _Pending:
    """A sync call not made yet: awaiting it runs it in a worker thread; iterating it drains what it returns."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self._work = work

    def __await__(self) -> Generator[Any, None, Any]:
        result = yield from asyncio.to_thread(self._work).__await__()
        return Awaiting(result) if isinstance(result, _SYNC_FACED) else result

    async def _items(self) -> AsyncIterator[Any]:
        for item in await asyncio.to_thread(lambda: list(self._work())):
            yield item

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items()


class Awaiting:
    """An asyncio face over a sync client, run handle, or their class."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: self._pending(value, args, kwargs)
        return Awaiting(value) if isinstance(value, _SYNC_FACED) else value

    def _pending(self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Pending:
        args, kwargs = _targets(args, kwargs)
        return _Pending(lambda: function(*args, **kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _targets(args, kwargs)
        return Awaiting(self._target(*args, **kwargs))

    async def __aenter__(self) -> Awaiting:
        await asyncio.to_thread(self._target.__enter__)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await asyncio.to_thread(self._target.__exit__, *exc_info)


@dataclass(frozen=True)
class Flavour:
    """The client classes of one flavour, in both styles (see the module docstring)."""

    name: str
    JournalClient: Any
    TaskClient: Any
    Run: Any
    AsyncJournalClient: Any
    AsyncTaskClient: Any
    AsyncRun: Any


FLAVOURS = ("sync", "asyncio")


def flavour_named(name: str) -> Iterator[Flavour]:
    """The flavour, for one test (the asyncio flavour's sync-style faces get a private event loop)."""
    if name == "sync":
        yield Flavour(
            name, JournalClient, TaskClient, Run, Awaiting(JournalClient), Awaiting(TaskClient), Awaiting(Run)
        )
        return
    loop = asyncio.new_event_loop()
    try:
        yield Flavour(
            name,
            Blocking(AsyncJournalClient, loop),
            Blocking(AsyncTaskClient, loop),
            Blocking(AsyncRun, loop),
            AsyncJournalClient,
            AsyncTaskClient,
            AsyncRun,
        )
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
