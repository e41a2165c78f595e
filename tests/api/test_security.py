"""TLS, mutual TLS and bearer tokens with run-id prefixes (tenants)."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.api.auth import token_sha256
from tests.api.rpc import reason
from tests.certs import make_pki
from tests.support import builders as b

TEAM_A_TOKEN = "a-secret-token-for-team-a"
TEAM_B_TOKEN = "b-secret-token-for-team-b"


@pytest.fixture
def authed_server(server_factory, tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f"""
[[tokens]]
name = "team-a"
sha256 = "{token_sha256(TEAM_A_TOKEN)}"
run_id_prefixes = ["team-a-"]

[[tokens]]
name = "team-b"
sha256 = "{token_sha256(TEAM_B_TOKEN)}"
run_id_prefixes = ["team-b-"]
"""
    )
    return server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens), "--log-level", "DEBUG")


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def test_no_token_is_unauthenticated_but_health_answers(authed_server):
    with grpc.insecure_channel(authed_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for call in (
            lambda md: stub.Fold(pb.FoldRequest(run_id="team-a-1"), metadata=md),
            lambda md: stub.ListRuns(pb.ListRunsRequest(), metadata=md),
            lambda md: list(stub.Read(pb.ReadRequest(run_id="team-a-1"), metadata=md)),
        ):
            for metadata in ((), bearer("wrong-token"), (("authorization", "Basic abc"),)):
                with pytest.raises(grpc.RpcError) as caught:
                    call(metadata)
                assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert reason(caught.value) == "UNAUTHENTICATED"
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING


def test_a_team_token_cannot_read_list_or_write_another_teams_runs(authed_server):
    with grpc.insecure_channel(authed_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for team, token in (("team-a", TEAM_A_TOKEN), ("team-b", TEAM_B_TOKEN)):
            run_id = f"{team}-run"
            stub.Append(pb.AppendRequest(run_id=run_id, record=b.meta(run_id=run_id)), metadata=bearer(token))
        a = bearer(TEAM_A_TOKEN)
        refused = [
            lambda: stub.Fold(pb.FoldRequest(run_id="team-b-run"), metadata=a),
            lambda: list(stub.Read(pb.ReadRequest(run_id="team-b-run"), metadata=a)),
            lambda: stub.Append(pb.AppendRequest(run_id="team-b-run", claim_token=1, record=b.note(2)), metadata=a),
            lambda: stub.Claim(
                pb.ClaimRequest(run_id="team-b-run", worker_id="w", fingerprint=b.fingerprint()), metadata=a
            ),
            lambda: stub.Answer(pb.AnswerRequest(run_id="team-b-run", tool_use_id="c"), metadata=a),
        ]
        for call in refused:
            with pytest.raises(grpc.RpcError) as caught:
                call()
            assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert reason(caught.value) == "PERMISSION_DENIED"
        listed = stub.ListRuns(pb.ListRunsRequest(), metadata=a).runs
        assert [r.run_id for r in listed] == ["team-a-run"]
        assert stub.Fold(pb.FoldRequest(run_id="team-b-run"), metadata=bearer(TEAM_B_TOKEN)).state.last_seq == 1
    data_files = b"".join(p.read_bytes() for p in authed_server.data_dir.iterdir() if p.is_file())
    logs = authed_server.log()
    for token in (TEAM_A_TOKEN, TEAM_B_TOKEN):
        assert token.encode() not in data_files
        assert token not in logs


@pytest.fixture
def pki(tmp_path):
    return make_pki(tmp_path / "pki")


def test_plaintext_client_cannot_talk_to_a_tls_server(server_factory, tmp_path, pki):
    server = server_factory(tmp_path / "data", "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key))
    with grpc.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            journal_service_pb2_grpc.JournalServiceStub(channel).ListRuns(pb.ListRunsRequest(), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    credentials = grpc.ssl_channel_credentials(root_certificates=pki.ca_cert.read_bytes())
    with grpc.secure_channel(server.address, credentials) as channel:
        assert journal_service_pb2_grpc.JournalServiceStub(channel).ListRuns(pb.ListRunsRequest()).runs == []


def test_mutual_tls_requires_a_client_certificate_from_the_ca(server_factory, tmp_path, pki):
    server = server_factory(
        tmp_path / "data",
        "--tls-cert",
        str(pki.server_cert),
        "--tls-key",
        str(pki.server_key),
        "--tls-client-ca",
        str(pki.ca_cert),
    )
    without_cert = grpc.ssl_channel_credentials(root_certificates=pki.ca_cert.read_bytes())
    with grpc.secure_channel(server.address, without_cert) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            journal_service_pb2_grpc.JournalServiceStub(channel).ListRuns(pb.ListRunsRequest(), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    with_cert = grpc.ssl_channel_credentials(
        root_certificates=pki.ca_cert.read_bytes(),
        private_key=pki.client_key.read_bytes(),
        certificate_chain=pki.client_cert.read_bytes(),
    )
    with grpc.secure_channel(server.address, with_cert) as channel:
        assert journal_service_pb2_grpc.JournalServiceStub(channel).ListRuns(pb.ListRunsRequest()).runs == []
