"""The journal operations the RPCs call, one module per operation, over one backend.

Modules:

* ``runs.py``: ``Runs``, the facade the RPCs, the listing, retention and the
  app call; it wires the others and holds no rule.
* ``appending.py``: Append. ``claiming.py``: Claim. ``answering.py``: Answer
  and Approve. ``folding.py``: Fold, now or as of a past seq.
  ``forking.py``: ForkRun. ``deleting.py``: DeleteRun. ``reading.py``:
  Read, the reads Watch makes, and records 1..N.
* ``writing.py``: the write step those operations share. ``requests.py``: a
  request's records validated and encoded. ``handles.py``: per-run locks,
  open journals and warm states, bounded. ``events.py``: the news of writes
  and deletions Watch and WatchRuns wait on. ``past_states.py``: the LRU of
  past states. ``response_limit.py``: the largest answer sent.

The ordering rules, each stated (with its reason) in the module that keeps it:

* Validate before writing; a refusal changes nothing (``writing.py``,
  ``requests.py``).
* One ``asyncio.Lock`` per run serialises its writers; no lock is shared
  between runs (``handles.py``).
* Nobody sees the warm state run ahead of the store: a batch is checked on
  a scratch copy and adopted once durable (one record on an exclusive
  writer lock on the warm state itself, hidden from lock-free readers until
  durable); a refused batch or a lost race catches up with the tail, a
  storage failure reopens the run (``writing.py``, ``handles.py``).
* A refusal decided on the warm state is final only after one catch-up
  with other writers (``appending.py``).
* A batch that creates a run goes to the backend whole (``writing.py``).
* Claim gates first, without a lock, writes the claim, then reads
  ``last_seq`` (``claiming.py``); Answer and Approve validate before any
  lock (``answering.py``); a worker's ``reconfigure`` passes the resume gate
  (``writing.py``).
* Listeners hear of a write only once it is durable (``writing.py``,
  ``events.py``).
* A reader sees only acknowledged records, a chunk at a time; long folds and
  large encodings run in a thread, so one large run never stalls the others
  (``reading.py``, ``handles.py``, ``requests.py``).
"""
