"""Shared test support.

- ``builders``: journal records as protos, one builder per kind, and content blocks;
- ``encoded``: the same records as stored (``StoredRecord``), for the backend tests;
- ``strategies`` and ``journals``: hypothesis strategies for records and random valid journals;
- ``raw_nats``: a plain NATS connection that reaches around the JetStream backend;
- ``otlp_receiver``: a real OTLP trace receiver;
- ``environment``: what a test needs from the machine (missing under CI is a failure).
"""
