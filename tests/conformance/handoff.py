"""The Python worker of the cross-language hand-off (conformance/handoff/README.md).

    python -m tests.conformance.handoff --address HOST:PORT --run RUN_ID --plan PATH --from-step N --to-step M

It writes the plan's steps N..M with the Python client, as the Go and
TypeScript step programs do with theirs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runjournal import JournalClient, Run, text_block, thinking_block, tool_use_block
from runjournal.fingerprint import make_fingerprint
from runjournal.v1 import records_pb2

PLAN_PATH = Path(__file__).resolve().parents[2] / "conformance" / "handoff" / "plan.json"


def load_plan(path: Path = PLAN_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def fingerprint(plan: dict[str, Any]) -> records_pb2.Fingerprint:
    config = plan["run"]["config"]
    return make_fingerprint(
        config["provider"],
        config["model"],
        config["system_prompt"],
        config["thinking_mode"],
        config["tools"],
        config["max_tokens"],
        config["max_iterations"],
    )


def blocks(content: Sequence[dict[str, Any]]) -> list[records_pb2.ContentBlock]:
    out = []
    for block in content:
        [(kind, value)] = block.items()
        if kind == "text":
            out.append(text_block(value))
        elif kind == "thinking":
            out.append(thinking_block(value["thinking"], value["signature"]))
        elif kind == "tool_use":
            out.append(tool_use_block(value["id"], value["name"], value["input"]))
        else:
            raise ValueError(f"unknown content block {kind!r}")
    return out


def worker_id(plan: dict[str, Any], from_step: int) -> str:
    for worker in plan["workers"]:
        if worker["from_step"] == from_step:
            return str(worker["worker_id"])
    raise ValueError(f"no worker of the plan starts at step {from_step}")


def write_steps(client: JournalClient, run_id: str, plan: dict[str, Any], from_step: int, to_step: int) -> None:
    """Write steps from_step..to_step (inclusive): create the run at step 0, else claim it first."""
    steps = plan["steps"][from_step : to_step + 1]
    run_plan = plan["run"]
    if from_step == 0:
        if "meta" not in steps[0]:
            raise ValueError("step 0 must be the meta")
        created_at = datetime.datetime.fromisoformat(run_plan["created_at"].replace("Z", "+00:00"))
        run = Run.create(
            client,
            run_id,
            fingerprint(plan),
            run_plan["prompt"],
            labels=run_plan.get("labels", {}),
            interactive=run_plan.get("interactive", False),
            created_at=created_at,
        )
        steps = steps[1:]
    else:
        run = Run.claim(client, run_id, worker_id(plan, from_step), fingerprint(plan), reason="handoff")
    for step in steps:
        [(kind, value)] = step.items()
        if kind == "assistant":
            run.assistant(value["iteration"], blocks(value["content"]), value["stop_reason"], value.get("usage"))
        elif kind == "tool_result":
            run.tool_result(
                value["tool_use_id"], content=blocks(value["content"]), is_error=value.get("is_error", False)
            )
        elif kind == "terminal":
            run.terminal(value["reason"], value.get("message", ""))
        else:
            raise ValueError(f"step kind {kind!r} cannot be written here")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write steps of the hand-off plan with the Python client")
    parser.add_argument("--address", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--plan", type=Path, default=PLAN_PATH)
    parser.add_argument("--from-step", type=int, required=True)
    parser.add_argument("--to-step", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        with JournalClient(args.address) as client:
            write_steps(client, args.run, load_plan(args.plan), args.from_step, args.to_step)
    except Exception as err:
        print(f"handoff step failed: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
