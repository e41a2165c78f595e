"""What the server tells about its work, to whoever listens; nothing here changes what a call does.

``observer`` (the events the server reports as it works: each write, each
stream; the base class tells no one), ``metrics`` (the Prometheus series, the
gRPC interceptor that feeds the RPC ones and the /metrics endpoint),
``tracing`` (an OpenTelemetry span per call, imported only when tracing is on)
and ``handler_wrapping`` (how both interceptors rebuild a handler around what
they wrap).

Imports only the core (``tests/unit/test_layers.py``): the backends, runs and
api tell an observer what happened; it never calls back into them.
"""
