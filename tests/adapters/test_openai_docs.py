"""The Python example of docs/integrations/openai.md runs as written: a run created, then one claimed after a crash.

The code block under "## Python" is executed as it stands, given a ``TOOLS`` list and a ``run_tool``
of this test's own, against the fake Responses API and a real server on both backends.
"""

from __future__ import annotations

import inspect
import re
import uuid
from pathlib import Path
from typing import Any

from openai import OpenAI

from runjournal import JournalClient, Run
from runjournal.adapters import openai as oai
from runjournal.v1 import records_pb2
from tests.adapters.conftest_openai import RUN_HEADER, OpenAIFake, agent, journal_server, openai_fake
from tests.fake_model.openai import QUESTION, fixture
from tests.servers import ServerProcess

__all__ = ["journal_server", "openai_fake"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "openai.md"


def example() -> dict[str, Any]:
    """The page's Python block, executed with the names it leaves to the reader."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Python") : text.index("## TypeScript")]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    spec = agent()
    names: dict[str, Any] = {
        "TOOLS": spec["tools"],
        "run_tool": lambda name, arguments: spec["tool_outputs"][name],
    }
    exec(compile(code, str(PAGE), "exec"), names)
    return names


def test_the_python_example_creates_a_run_and_resumes_one(
    journal_server: ServerProcess, openai_fake: OpenAIFake
) -> None:
    names = example()
    params, work = names["PARAMS"], names["work"]
    fingerprint = oai.fingerprint(**params)
    run_id = f"oai-doc-{uuid.uuid4().hex[:10]}"
    model = OpenAI(
        base_url=f"{openai_fake.url}/v1", api_key="sk-fake", max_retries=0, default_headers={RUN_HEADER: run_id}
    )
    with JournalClient(journal_server.address) as journal:
        run = Run.create(journal, run_id, fingerprint, prompt_blocks=oai.user_blocks(QUESTION))
        # A first worker gets the tool turn, answers one call of two and stops there (a crash).
        state = run.fold()
        request = {**params, **oai.request_kwargs(state, instructions=params["instructions"])}
        run.append(oai.assistant_record(model.responses.create(**request), iteration=state.next_iteration))
        first = oai.pending_calls(run.fold())[0].call
        run.append(
            oai.tool_result_record(
                {
                    "type": "function_call_output",
                    "call_id": first.call_id,
                    "output": agent()["tool_outputs"][first.name],
                }
            )
        )
        # The example's loop, in a claimed run, finishes the batch and gets the answer.
        work(Run.claim(journal, run_id, "doc-worker", fingerprint), model)
        state = journal.fold(run_id)
    assert state.last_stop_reason == records_pb2.STOP_REASON_END_TURN
    assert (state.counters.llm_calls, state.counters.tool_calls) == (2, 2)
    [_, answer] = openai_fake.bodies(run_id)
    issued = ["reasoning", "message_commentary", "function_call", "function_call_forecast"]
    assert answer["input"][1:7] == [
        *map(fixture, issued),
        fixture("function_call_output"),
        fixture("function_call_output_forecast"),
    ]


def test_every_test_the_round_trip_table_names_exists_and_runs_on_both_backends() -> None:
    from tests.adapters import test_openai_roundtrip

    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("## The round trip, item by item") : text.index("## The hand-off")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and re.search(r"`test_\w+`", line)]
    assert len(rows) >= 10
    for row in rows:
        [name] = re.findall(r"`(test_\w+)`", row)
        assert row.rstrip().endswith("| file, jetstream |"), row
        test = getattr(test_openai_roundtrip, name, None)
        assert callable(test), f"{name} is not in tests/adapters/test_openai_roundtrip.py"
        assert {"sdk_loop", "compacted_run"} & set(inspect.signature(test).parameters), f"{name} starts no server"
