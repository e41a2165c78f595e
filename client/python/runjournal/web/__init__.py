"""The web inbox (``runjournal web``): people answer, approve and deny the calls waiting for them in a browser.

A small aiohttp server that talks gRPC to the journal server through
``AsyncJournalClient``, never to the store: the inbox (runs waiting for a
person, with each call's tool, arguments, reason, expected answerer and how
long it has waited), a run page (the pending calls, the last turns of the
conversation, the answer and decision forms), and live updates by server-sent
events from WatchRuns (or from listing again, where the server has no
WatchRuns), and a runs browser (every run, filtered and paged; a run's
journal as a timeline, usage per model, fork lineage, fork and delete).
Needs the ``web`` extra (aiohttp, aiohttp-sse, Jinja2).

- ``settings``: what it is configured with; ``access``: sign-in (read-only too) and form tokens;
- ``views``: the journal's messages as escaped values for the templates;
- ``live``: the inbox feed; ``app``: routes and checks; ``command``: the CLI;
- ``browser`` and ``listing``: the runs browser; ``run_pages``, ``timeline``, ``usage``, ``lineage``:
  a run's page; ``run_actions``: fork and delete; ``pages``: rendering and refusals.
"""
