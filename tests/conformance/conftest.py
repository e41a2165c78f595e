"""The four conformance servers (conformance/servers.py), once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.servers import ServersError, conformance_servers
from tests.conformance.replay import Target
from tests.support.environment import unavailable


@pytest.fixture(scope="session")
def conformance_targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """The servers by name (``file-noauth``, ``file-auth``, ``jetstream-noauth``, ``jetstream-auth``)."""
    try:
        with conformance_servers(tmp_path_factory.mktemp("conformance")) as (_, content):
            tokens = content["tokens"]
            assert isinstance(tokens, dict) and isinstance(content["servers"], list)
            yield {s["name"]: Target(tokens=tokens, **s) for s in content["servers"]}
    except ServersError as err:
        unavailable(str(err))
