"""The four conformance servers (conformance/servers.py), once per session.

Under ``python conformance/servers.py [--scenarios DIR] -- pytest tests/conformance/test_conformance.py``
the runner replays on the servers of ``$RUNJOURNAL_CONFORMANCE`` (and the folder it names) like
the Go and TypeScript runners; otherwise it starts the servers itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.servers import ENV, ServersError, conformance_servers
from tests.conformance.replay import Target
from tests.support.environment import unavailable


@pytest.fixture(scope="session")
def conformance_targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """The servers by name (``file-noauth``, ``file-auth``, ``jetstream-noauth``, ``jetstream-auth``)."""
    if os.environ.get(ENV):
        content = json.loads(Path(os.environ[ENV]).read_text())
        yield {s["name"]: Target(tokens=content["tokens"], **s) for s in content["servers"]}
        return
    try:
        with conformance_servers(tmp_path_factory.mktemp("conformance")) as (_, content):
            tokens = content["tokens"]
            assert isinstance(tokens, dict) and isinstance(content["servers"], list)
            yield {s["name"]: Target(tokens=tokens, **s) for s in content["servers"]}
    except ServersError as err:
        unavailable(str(err))
