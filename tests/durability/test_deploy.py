"""deploy/ holds what it says: manifests Kubernetes would accept, Helm values the NATS chart knows, a compose file
whose NATS cluster is the one the fault suite starts. No cluster needed.

* The Kubernetes manifests are checked, strictly (an unknown field is an error),
  against the Kubernetes API's own JSON schemas, which the PyPI package
  ``kubernetes-validate`` ships (offline).
* The NATS chart ships no schema: its values are checked against
  ``nats-values.schema.json``, a committed subset of the chart's values (the
  keys this file sets, unknown keys refused), and for what runjournal needs.
* The compose file has no schema check here either (the compose spec's schema
  is not on PyPI): it is parsed, and its NATS services are checked to run the
  very config the fault suite starts (``cluster.CONFIG``), each variable that
  config reads set, each route naming the two other nodes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from runjournal_server.backends.jetstream.config import MIN_SERVER_VERSION, parse_server_version
from tests.durability import cluster

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUBERNETES_VERSION = "1.33.0"
"""The oldest API version the manifests are checked against: gRPC probes are GA since 1.27."""


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def test_the_kubernetes_manifests_are_valid_against_the_api_schemas() -> None:
    documents = _documents(DEPLOY / "kubernetes" / "runjournal.yaml")
    assert sorted(document["kind"] for document in documents) == ["Deployment", "PodDisruptionBudget", "Service"]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_schema_check_refuses_a_misspelt_field() -> None:
    """The check can fail: a field Kubernetes does not know is an error, not ignored."""
    (budget,) = [d for d in _documents(DEPLOY / "kubernetes" / "runjournal.yaml") if d["kind"] == "PodDisruptionBudget"]
    budget["spec"]["minAvailabel"] = budget["spec"].pop("minAvailable")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(budget, KUBERNETES_VERSION, strict=True)


def test_the_deployment_probes_grpc_health_and_names_every_nats_node() -> None:
    (deployment,) = [d for d in _documents(DEPLOY / "kubernetes" / "runjournal.yaml") if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["grpc"]["port"] == container["ports"][0]["containerPort"]
    (urls,) = [arg.removeprefix("--nats-url=") for arg in container["args"] if arg.startswith("--nats-url=")]
    assert len(urls.split(",")) == 3
    assert "--replicas=3" in container["args"]


def test_the_nats_chart_values_match_the_schema_subset_and_what_runjournal_needs() -> None:
    values = yaml.safe_load((DEPLOY / "kubernetes" / "nats-values.yaml").read_text())
    schema = json.loads((DEPLOY / "kubernetes" / "nats-values.schema.json").read_text())
    jsonschema.validate(values, schema)
    assert values["config"]["cluster"] == {"enabled": True, "replicas": 3}
    assert values["config"]["jetstream"]["merge"]["sync_interval"] == "always"
    version = values["container"]["image"]["tag"].removesuffix("-alpine")
    assert parse_server_version(version)[:3] >= MIN_SERVER_VERSION
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"config": {"jetsream": {"enabled": True}}}, schema)


def test_the_compose_cluster_runs_the_config_the_fault_suite_starts() -> None:
    compose = yaml.safe_load((DEPLOY / "compose" / "compose.yaml").read_text())
    services = compose["services"]
    nodes = {name: service for name, service in services.items() if name.startswith("nats-")}
    assert len(nodes) == 3
    config = cluster.CONFIG
    assert config == DEPLOY / "compose" / "nats-cluster.conf"
    text = config.read_text()
    assert re.search(r"^\s*sync_interval:\s*always\s*$", text, re.MULTILINE)
    needed = set(re.findall(r"\$(NATS_[A-Z_]+)", text))
    assert needed == set(cluster.ClusterNode("n", Path("/x"), Path("/x"), routes=["a", "b"]).environment())
    for name, service in nodes.items():
        mounted = [volume.split(":")[:2] for volume in service["volumes"] if "nats-cluster.conf" in volume]
        assert mounted == [["./nats-cluster.conf", service["command"][-1]]]
        assert needed <= set(service["environment"]), f"{name} leaves a variable of the config unset"
        routes = {service["environment"]["NATS_ROUTE_A"], service["environment"]["NATS_ROUTE_B"]}
        assert routes == {f"nats-route://{other}:6222" for other in nodes if other != name}
        version = service["image"].removeprefix("nats:").removesuffix("-alpine")
        assert parse_server_version(version)[:3] >= MIN_SERVER_VERSION
    for name in ("runjournal-1", "runjournal-2"):
        (urls,) = [arg.removeprefix("--nats-url=") for arg in services[name]["command"] if arg.startswith("--nats-url")]
        assert sorted(urls.split(",")) == [f"nats://{node}:4222" for node in sorted(nodes)]
