"""The NATS JetStream backend: one write-once message per record, fenced on the record before it.

One idea a module:

* ``backend.py``: ``JetStreamBackend``: start against a checked stream, create and open runs;
* ``journal.py``: ``JetStreamJournal``, a held run and its fenced appends and refresh;
* ``reading.py``: loads, bounded stream windows, the ends and tail, the stray-subject check;
* ``publish.py``: publish once, then read the targets back to settle an unclear answer;
* ``layout.py``: where a run's records live (subjects) and message ids;
* ``tasks.py``: the create-only task documents in the same stream;
* ``api.py``: the raw JetStream API calls, driver errors translated;
* ``config.py``: what the server and stream must be, checked at start;
* ``connect.py``: the NATS connection's options.

See docs/jetstream-backend.md; the contract is in ``backends/base.py``.
"""

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.backends.jetstream.config import StreamConfigError
from runjournal_server.backends.jetstream.connect import nats_connect_options
from runjournal_server.backends.jetstream.journal import JetStreamJournal
from runjournal_server.backends.jetstream.layout import message_id

__all__ = ["JetStreamBackend", "JetStreamJournal", "StreamConfigError", "message_id", "nats_connect_options"]
