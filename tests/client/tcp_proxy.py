"""A loopback TCP proxy whose connections a test can cut: a real transport failure under a live stream.

The client talks to the real server through it; ``cut()`` resets every
connection open at that moment (as a dropped network or a restarted load
balancer would) while the proxy keeps accepting, so the client's reconnect
reaches the same server again.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType

_BUFFER_BYTES = 64 * 1024


class CuttableProxy:
    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.cuts = 0
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(_BUFFER_BYTES):
                sink.sendall(data)
        except OSError:
            pass  # the other direction, or cut(), closed it
        finally:
            for end in (source, sink):
                _reset(end)

    def cut(self) -> None:
        """Reset every connection open now; new ones are accepted as before."""
        with self._lock:
            doomed, self._open = self._open, []
            self.cuts += 1
        for end in doomed:
            _reset(end)

    def close(self) -> None:
        self._listener.close()
        self.cut()

    def __enter__(self) -> CuttableProxy:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _reset(end: socket.socket) -> None:
    """End the connection for both peers now, as a lost network does.

    ``shutdown`` first: closing a socket another thread is blocked reading
    would neither wake that thread nor tell the peer anything.
    """
    with contextlib.suppress(OSError):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        end.shutdown(socket.SHUT_RDWR)
    end.close()
