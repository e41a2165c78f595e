"""Read: a run's stored records streamed from the store, up to what is acknowledged."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

from runjournal_server.core import records
from runjournal_server.core.errors import CorruptJournalError


class RecordReader:
    """Records of one run from the store's stream, up to what is acknowledged.

    An iterator object rather than a generator: a suspended generator frame
    would keep the last record it yielded alive while the consumer waits on a
    stalled client, and a stalled reader must hold as little as possible.
    """

    def __init__(
        self,
        run_id: str,
        source: AsyncGenerator[records.StoredRecord, None],
        acknowledged: Callable[[str, int], bool],
        on_corrupt: Callable[[CorruptJournalError], None],
    ) -> None:
        self._run_id = run_id
        self._source = source
        self._acknowledged = acknowledged
        self._on_corrupt = on_corrupt

    def __aiter__(self) -> RecordReader:
        return self

    async def __anext__(self) -> records.StoredRecord:
        try:
            item = await anext(self._source)
        except CorruptJournalError as err:
            self._on_corrupt(err)  # the listing shows it from now on
            raise
        if not self._acknowledged(self._run_id, item.seq):
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stop reading: the store's stream releases its descriptor or window."""
        await self._source.aclose()
