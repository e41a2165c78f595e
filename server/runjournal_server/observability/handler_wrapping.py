"""One RPC handler rebuilt around wrapped behaviours: what the metrics and tracing interceptors share.

A ``grpc.aio.ServerInterceptor`` that watches a call's end must hand gRPC a
handler of the same kind (unary or streaming, on either side) with the same
serializers; only what wraps the behaviour differs between interceptors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Behaviour = Callable[..., Any]
Wrap = Callable[[Behaviour], Behaviour]


def rewrap(handler: grpc.RpcMethodHandler, *, unary: Wrap, stream: Wrap) -> grpc.RpcMethodHandler:
    """``handler`` with its behaviour wrapped by ``unary`` (a single response) or ``stream`` (a response stream)."""
    serializers = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **serializers)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(stream(handler.unary_stream), **serializers)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(unary(handler.stream_unary), **serializers)
    return grpc.stream_stream_rpc_method_handler(stream(handler.stream_stream), **serializers)
