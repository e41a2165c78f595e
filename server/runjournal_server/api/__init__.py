"""The gRPC edge: requests in, responses and statuses out; no rule of the journal lives here.

``handlers`` (what every RPC handler shares: lenient parsing, authorization,
ending a failure), ``journal_servicer`` (JournalService over ``runs`` and the
listing) and ``task_servicer`` (TaskService over ``tasks``), each handler a few
lines; ``watch`` (the stream responses of Read and Watch) and ``watch_runs``
(WatchRuns); ``auth`` (bearer tokens: who may call, which ids and scopes each
token has) and ``status`` (the one table of gRPC codes: how every failed call
ends).

Imports everything below it (core, backends, observability, runs, listing,
tasks) and nothing above: ``app.py`` wires it (``tests/unit/test_layers.py``).
"""
