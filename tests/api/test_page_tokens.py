"""A page token continues only the listing that made it (AIP-158), the token's caller's included."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import reason
from tests.servers import ServerProcess
from tests.support import builders as b

WIDE_TOKEN = "a-token-that-sees-every-run"
TEAM_TOKEN = "a-token-that-sees-team-runs-only"


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture
def server(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> ServerProcess:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f"""
[[tokens]]
name = "wide"
sha256 = "{token_sha256(WIDE_TOKEN)}"
scopes = ["worker", "operator"]
run_id_prefixes = [""]

[[tokens]]
name = "team"
sha256 = "{token_sha256(TEAM_TOKEN)}"
scopes = ["worker", "operator"]
run_id_prefixes = ["team-"]
"""
    )
    return server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens))


def test_pages_of_other_sizes_continue_the_listing_and_another_callers_token_is_refused(server: ServerProcess) -> None:
    wide = bearer(WIDE_TOKEN)
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        created = [f"team-{i}" for i in range(7)]
        for run_id in created:
            record = b.meta(run_id=run_id)
            record.meta.labels["suite"] = "tokens"
            stub.Append(pb.AppendRequest(run_id=run_id, record=record), metadata=wide)
        labels = {"suite": "tokens"}
        listed: list[str] = []
        token = ""
        for size in (2, 1, 3, 5):  # AIP-158: the page size may change between pages, the filters may not
            page = stub.ListRuns(pb.ListRunsRequest(page_size=size, page_token=token, labels=labels), metadata=wide)
            listed += [summary.run_id for summary in page.runs]
            token = page.next_page_token
            if not token:
                break
        assert sorted(listed) == sorted(created)
        assert len(listed) == len(set(listed))

        first = stub.ListRuns(pb.ListRunsRequest(page_size=2, labels=labels), metadata=wide)
        request = pb.ListRunsRequest(page_size=2, labels=labels, page_token=first.next_page_token)
        # The same filters, sent by a token of other run-id prefixes: another listing, though it holds these runs.
        with pytest.raises(grpc.RpcError) as caught:
            stub.ListRuns(request, metadata=bearer(TEAM_TOKEN))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason(caught.value) == "INVALID_ARGUMENT"
        continued = stub.ListRuns(request, metadata=wide)  # its own caller continues it
        assert len(continued.runs) == 2
        assert not {r.run_id for r in continued.runs} & {r.run_id for r in first.runs}
