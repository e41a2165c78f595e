"""Realistic runs waiting for a person, written through the public Python client (as a worker would)."""

from __future__ import annotations

import uuid

from runjournal import JournalClient, Run, make_fingerprint, text_block, tool_use_block

SYSTEM_PROMPT = "You are a release assistant. Check before you act, and ask a person before anything risky."
TOOLS = [
    {"name": name, "description": description, "input_schema": {"type": "object"}}
    for name, description in (
        ("weather", "Weather for a city"),
        ("deploy", "Deploy a release to an environment"),
        ("ask_person", "Ask a person a question"),
        ("refund", "Refund a customer's order"),
        ("search", "Search the web"),
    )
]
FINGERPRINT = make_fingerprint(
    provider="anthropic",
    model="claude-sonnet-4-5",
    system_prompt=SYSTEM_PROMPT,
    thinking_mode="off",
    tools=TOOLS,
    max_tokens=4096,
    max_iterations=10,
)


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def deploy_waiting_for_approval(client: JournalClient, run_id: str | None = None) -> str:
    """A release run whose ``call_deploy`` waits for an on-call decision (and ``call_ask`` for an answer)."""
    run = Run.create(
        client,
        run_id or new_run_id("release-2-4"),
        FINGERPRINT,
        "Is it a good day to ship release 2.4 to production?",
        labels={"team": "release"},
    )
    run.assistant(
        1,
        [
            text_block("Let me check the weather at the data centre first."),
            tool_use_block("call_weather", "weather", {"city": "Lisbon"}),
        ],
        "tool_use",
        {"input_tokens": 812, "output_tokens": 64},
    )
    run.tool_result("call_weather", "Sunny, 24°C, no storms forecast.")
    run.assistant(
        2,
        [
            text_block("All clear. Deploying needs a sign-off, and I need to know who gets the release notes."),
            tool_use_block("call_deploy", "deploy", {"release": "2.4.0", "environment": "production", "canary": 0.1}),
            tool_use_block("call_ask", "ask_person", {"question": "Who gets the release notes?"}),
        ],
        "tool_use",
        {"input_tokens": 901, "output_tokens": 41},
    )
    run.deferral("call_deploy", "production deploys need an on-call sign-off", "on-call", needs_approval=True)
    run.deferral("call_ask", "only a person knows the audience", "release-manager")
    run.terminal("suspended", "waiting for people")
    return run.run_id


def answer_waiting(client: JournalClient, run_id: str | None = None, *, question: str = "Which plan?") -> str:
    """A run whose ``call_ask`` waits for a person's answer."""
    run = Run.create(client, run_id or new_run_id("support"), FINGERPRINT, "A customer asks to change plans.")
    run.assistant(
        1,
        [text_block("I need a person to confirm."), tool_use_block("call_ask", "ask_person", {"question": question})],
        "tool_use",
        {"input_tokens": 300, "output_tokens": 30},
    )
    run.deferral("call_ask", "the customer's contract is not in my tools", "support-lead")
    run.terminal("suspended", "waiting for an answer")
    return run.run_id


def refund_waiting_for_approval(client: JournalClient, run_id: str | None = None) -> str:
    """A support run whose refund over the limit waits for a decision."""
    run = Run.create(
        client,
        run_id or new_run_id("support-4471"),
        FINGERPRINT,
        "Order 4471 arrived broken; the customer wants a refund.",
    )
    run.assistant(
        1,
        [
            text_block("The order is eligible. The amount is over my limit, so I ask for approval."),
            tool_use_block("call_refund", "refund", {"order": "4471", "amount_eur": 1240.0, "reason": "damaged"}),
        ],
        "tool_use",
        {"input_tokens": 1530, "output_tokens": 88},
    )
    run.deferral("call_refund", "refunds over 500 EUR need a supervisor", "support-supervisor", needs_approval=True)
    run.terminal("suspended", "waiting for approval")
    return run.run_id


def hostile_run(client: JournalClient, marker: str) -> str:
    """A run whose tool result, arguments and reason carry ``<script>`` (a page that ran them would be broken)."""
    script = f"<script>window.__pwned = '{marker}'; alert('{marker}')</script>"
    run = Run.create(client, new_run_id("hostile"), FINGERPRINT, f"Summarise this page {script}")
    run.assistant(
        1,
        [text_block(f"I read: {script}"), tool_use_block("call_search", "search", {"query": script})],
        "tool_use",
    )
    run.tool_result("call_search", f"<img src=x onerror=\"alert('{marker}')\"> {script}")
    run.assistant(
        2,
        [tool_use_block("call_deploy", "deploy", {"note": script})],
        "tool_use",
    )
    run.deferral("call_deploy", f"reason {script}", f"<b>{marker}</b>", needs_approval=True)
    run.terminal("suspended", script)
    return run.run_id
