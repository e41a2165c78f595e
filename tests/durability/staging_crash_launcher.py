"""``runjournal serve`` that SIGKILLs itself inside a JetStream staged creation: a crash injector for tests.

Run as a script with the CLI's arguments. The process dies, with no cleanup,
right after the stream acknowledged the first stage of a creation larger than
one atomic batch (``backends/jetstream/staging.py``) and before anything else
of it is sent: the stream holds records 2..1001 of the run and no meta, as a
server killed between two stages leaves it.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: ``tests`` is importable
    from runjournal_server import cli
    from runjournal_server.backends.jetstream import staging

    publish = staging.StagedCreation._publish

    async def publish_then_die(self: staging.StagedCreation, messages: list, after: int) -> int | None:  # type: ignore[type-arg]
        stream_seq = await publish(self, messages, after)
        if stream_seq is not None and messages[0].seq != 1:  # a stage landed (the commit carries the meta)
            os.kill(os.getpid(), signal.SIGKILL)
        return stream_seq

    staging.StagedCreation._publish = publish_then_die  # type: ignore[method-assign]
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
