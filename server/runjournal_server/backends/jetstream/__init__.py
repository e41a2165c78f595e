"""The NATS JetStream backend: one write-once message per record, fenced on the record before it.

One idea a module:

* ``backend.py``: ``JetStreamBackend``: connecting, starting, each call delegated;
* ``stream.py``: the stream at start: read, created when asked, checked, warned about;
* ``config.py``: what the server and stream must be (pure rules, each with its fix);
* ``connect.py``: the NATS connection's options;
* ``layout.py``: every subject built and parsed (records, tombstones, tasks),
  message ids, and the fence headers every write sends;
* ``creating.py``: a run's creation, fenced on the run having no message;
* ``staging.py``: a creation larger than one atomic batch, staged then committed;
* ``journal.py``: ``JetStreamJournal``, a held run and its fenced appends and refresh;
* ``publish.py``: publish once, then read the targets back to settle an unclear answer;
* ``ride_through.py``: a write the stream cannot take now, published again through a leader change;
* ``reading.py``: loads, bounded stream windows, the ends and tail, the stray-subject check;
* ``fetch.py``: a long run's records read through one consumer;
* ``tombstones.py``: deleting a run: its tombstone fenced on the run, then its erasure;
* ``erasing.py``: erasures in the background, one per run;
* ``feed.py``: the news of other replicas' writes and deletions;
* ``own_writes.py``: this replica's writes and deletions, which the feed leaves to ``runs/``;
* ``listing_store.py``: the listing index in a KV bucket, and the news since it;
* ``tasks.py``: the create-only task documents in the same stream;
* ``api.py``: the raw JetStream API calls, driver errors translated.

See docs/jetstream-backend.md; the contract is in ``backends/base.py``.
"""

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from runjournal_server.backends.jetstream.config import StreamConfigError
from runjournal_server.backends.jetstream.connect import nats_connect_options
from runjournal_server.backends.jetstream.journal import JetStreamJournal
from runjournal_server.backends.jetstream.layout import message_id

__all__ = ["JetStreamBackend", "JetStreamJournal", "StreamConfigError", "message_id", "nats_connect_options"]
