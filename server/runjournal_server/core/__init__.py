"""The pure core: the rules of a journal, with no I/O.

``errors`` (the one error vocabulary), ``ids`` (the run-id grammar), ``kinds``
(the record kinds), ``records`` (the codec: canonical line, checksum),
``schema`` (validation by kind), ``authorship`` (the parts of a record only the
server writes), ``payload_json`` (payloads to and from proto3 JSON),
``sequence`` (the append rule), ``fold`` (records to state) and ``turns`` (the
open turn and its calls), ``gate`` (the resume classes), ``resume`` and
``answering`` (the refusals built on them), ``summary`` (the one listing rule),
``inbox`` (who a run waits for) and ``page_token`` (the listing's page-token
codec).

Nothing here imports grpc, nats, asyncio, the file system or the network:
``tests/unit/test_core_purity.py`` checks it. The rest of the server (runs,
backends, the servicer) calls into the core; the core never calls out.
"""
