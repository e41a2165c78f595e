"""The runs browser's pieces without a browser: the timeline's entries and pages, usage per model, the query,
and the listing walk against a real journal server (its time filter, its bound, exact pages)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import pytest
from multidict import MultiDict

from runjournal import AsyncJournalClient, AsyncRun, make_fingerprint, text_block, tool_use_block
from runjournal.v1 import records_pb2
from runjournal.web import lineage, listing, timeline
from runjournal.web.access import Access, Session
from runjournal.web.usage import UsageCache, UsageTally
from tests.web import demo

BASE = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)


def test_a_timeline_page_is_the_newest_without_a_start_and_names_its_neighbours():
    newest = timeline.page_of(None, 250, size=100)
    assert (newest.first, newest.last, newest.earlier, newest.later) == (151, 250, 51, 0)
    middle = timeline.page_of(51, 250, size=100)
    assert (middle.first, middle.last, middle.earlier, middle.later, middle.latest) == (51, 150, 1, 151, 151)
    first = timeline.page_of(1, 250, size=100)
    assert (first.first, first.last, first.earlier, first.later) == (1, 100, 0, 101)
    assert timeline.page_of(9999, 250, size=100).first == 151  # past the end: the newest page
    short = timeline.page_of(None, 7, size=100)
    assert (short.first, short.last, short.earlier, short.later) == (1, 7, 0, 0)


def test_an_entry_names_who_answered_decided_or_claimed_and_escapes_every_string():
    result = records_pb2.JournalRecord(
        seq=5,
        tool_result=records_pb2.ToolResult(
            tool_use_id="c1", content=[text_block("line one\nline\u202etwo")], remote=True, answered_by="alice\x1b[2J"
        ),
    )
    entry = timeline.entry(result)
    assert (entry.seq, entry.kind, entry.summary) == (5, "tool_result", "result of [c1]: ok, out of band")
    assert entry.who == "answered by alice\\x1b[2J"
    assert entry.blocks[0].lines == ["line one", "line\\u202etwo"]
    approval = records_pb2.JournalRecord(
        seq=6,
        approval=records_pb2.Approval(
            tool_use_id="c2", decision=records_pb2.DECISION_DENIED, approver="bob", reason="<b>no</b>"
        ),
    )
    entry = timeline.entry(approval)
    assert (entry.summary, entry.who, entry.blocks[0].lines) == ("[c2] denied", "denied by bob", ["<b>no</b>"])
    claim = records_pb2.JournalRecord(seq=7, claim=records_pb2.ClaimNotice(worker_id="w-1", host="h", pid=9))
    assert timeline.entry(claim).who == "claimed by w-1"
    unknown = timeline.entry(records_pb2.JournalRecord(seq=8, optional=True), b'{"seq":8,"x.y":"\xe2\x80\xae"}')
    assert (unknown.kind, unknown.optional) == ("unknown", True)
    assert unknown.blocks[0].lines == ['{"seq":8,"x.y":"\\u202e"}']


def _meta(model: str) -> records_pb2.JournalRecord:
    fingerprint = records_pb2.Fingerprint(provider="anthropic", model=model)
    return records_pb2.JournalRecord(seq=1, meta=records_pb2.Meta(fingerprint=fingerprint))


def _turn(seq: int, tokens: int) -> records_pb2.JournalRecord:
    usage = records_pb2.Usage(input_tokens=tokens, output_tokens=1, cache_read_tokens=2, cache_write_tokens=3)
    return records_pb2.JournalRecord(seq=seq, assistant=records_pb2.AssistantTurn(iteration=seq, usage=usage))


def _journal() -> list[records_pb2.JournalRecord]:
    switch = records_pb2.Reconfigure(
        fingerprint=records_pb2.Fingerprint(provider="anthropic", model="opus"), changed_fields=["model"]
    )
    compaction = records_pb2.Compaction(
        upto_seq=3, provider="anthropic", model="haiku", usage=records_pb2.Usage(input_tokens=700, output_tokens=70)
    )
    return [
        _meta("sonnet"),
        _turn(2, 100),
        _turn(3, 200),
        records_pb2.JournalRecord(seq=4, reconfigure=switch),
        _turn(5, 400),
        records_pb2.JournalRecord(seq=6, compaction=compaction),
        _turn(7, 800),
    ]


def test_usage_is_counted_for_the_model_in_force_at_each_turn_and_compactions_apart():
    tally = UsageTally()
    for record in _journal():
        tally.add(record)
    sonnet, opus = tally.turns["anthropic/sonnet"], tally.turns["anthropic/opus"]
    assert (sonnet.calls, sonnet.input_tokens, sonnet.output_tokens) == (2, 300, 2)
    assert (opus.calls, opus.input_tokens, opus.cache_read_tokens, opus.cache_write_tokens) == (2, 1200, 4, 6)
    assert (tally.compactions["anthropic/haiku"].input_tokens, tally.compactions["anthropic/haiku"].calls) == (700, 1)
    total = tally.total()
    assert (total.calls, total.input_tokens, total.output_tokens) == (4, 1500, 4)
    tally.add(_turn(7, 800))  # a record counted already changes nothing
    assert tally.total().input_tokens == 1500


def test_a_kept_tally_continued_from_its_seq_equals_one_counted_whole():
    records = _journal()
    cache = UsageCache(size=2)
    first = cache.start("r")
    for record in records[:4]:
        first.add(record)
    cache.keep("r", first)
    later = cache.start("r")
    assert later is not first and later.seq == 4
    for record in records[4:]:
        later.add(record)
    cache.keep("r", later)
    cache.keep("r", first)  # a slower view finishing last does not put an older tally back
    whole = UsageTally()
    for record in records:
        whole.add(record)
    assert cache.start("r") == whole
    cache.keep("s", UsageTally(seq=1))
    cache.keep("t", UsageTally(seq=1))
    assert cache.start("r") == UsageTally()  # the least recently viewed run was let go
    cache.forget("t")
    assert cache.start("t") == UsageTally()


def test_a_query_that_is_not_one_is_refused_naming_the_filter():
    for params, words in (
        ({"status": "sleeping"}, "status must be one of open, completed"),
        ({"label": "team"}, "a label filter is KEY=VALUE"),
        ({"created_from": "yesterday"}, "created from must be a date and time"),
        ({"size": "0"}, "size must be a number from 1 to 200"),
        ({"size": "201"}, "size must be a number from 1 to 200"),
    ):
        with pytest.raises(listing.QueryError, match=words):
            listing.parse_query(MultiDict(params))


def test_a_query_goes_to_list_runs_and_back_to_its_link_unchanged():
    params = MultiDict(
        [
            ("status", "suspended"),
            ("label", "team=search"),
            ("label", "tier=a=b"),
            ("task", "t-1"),
            ("parent", "src"),
            ("spawned_by", "lead-1"),
            ("root", "lead-0"),
            ("created_from", "2031-05-04"),
            ("created_before", "2031-05-05T10:30+02:00"),
            ("size", "7"),
            ("page", "tok"),
        ]
    )
    query = listing.parse_query(params)
    assert query.list_arguments() == {
        "task_id": "t-1",
        "parent_run_id": "src",
        "spawned_by_run_id": "lead-1",
        "root_run_id": "lead-0",
        "status": "suspended",
        "labels": {"team": "search", "tier": "a=b"},
    }
    assert query.created_before == datetime(2031, 5, 5, 8, 30, tzinfo=UTC)
    again = listing.parse_query(MultiDict(_pairs(query.query_string())))
    assert again == query
    assert "page" not in dict(_pairs(query.query_string(page_token="")))


def _pairs(query_string: str) -> list[tuple[str, str]]:
    return parse_qsl(query_string)


async def _created(client: AsyncJournalClient, label: str, hours: list[int]) -> list[str]:
    """Runs created ``hours`` after BASE, each with ``label``; their ids, newest first."""
    fingerprint = make_fingerprint("anthropic", "m", "s", "off", [])
    made = []
    for hour in hours:
        run = await AsyncRun.create(
            client,
            demo.new_run_id(f"walk-{hour}"),
            fingerprint,
            "hello",
            labels={"walk": label},
            created_at=BASE + timedelta(hours=hour),
        )
        made.append((hour, run.run_id))
    return [run_id for _, run_id in sorted(made, reverse=True)]


async def _walk(client: AsyncJournalClient, query: listing.RunsQuery) -> list[list[str]]:
    pages = []
    while True:
        page = await listing.runs_page(client, query)
        pages.append([summary.run_id for summary in page.runs])
        if not page.next_token:
            return pages
        query = listing.RunsQuery(**{**query.__dict__, "page_token": page.next_token})


async def test_the_time_filter_walks_newest_first_fills_exact_pages_and_ends_at_from(journal_server):
    label = uuid.uuid4().hex
    async with AsyncJournalClient(journal_server.address) as client:
        newest_first = await _created(client, label, list(range(12)))
        by_hour = dict(zip(range(11, -1, -1), newest_first, strict=True))
        query = listing.RunsQuery(
            labels=(("walk", label),),
            created_from=BASE + timedelta(hours=2),
            created_before=BASE + timedelta(hours=10),
            size=3,
        )
        # The second ListRuns page (hours 8, 7, 6) has three matches for two places: asked again for two.
        pages = await _walk(client, query)
        assert pages == [[by_hour[h] for h in hours] for hours in ((9, 8, 7), (6, 5, 4), (3, 2))]
        everything = await _walk(client, listing.RunsQuery(labels=(("walk", label),), size=5))
        assert [len(page) for page in everything] == [5, 5, 2]
        assert [run_id for page in everything for run_id in page] == newest_first


async def test_a_walk_that_reaches_its_bound_says_so_and_goes_on_from_there(journal_server, monkeypatch):
    monkeypatch.setattr(listing, "SCAN_PAGES", 2)
    label = uuid.uuid4().hex
    async with AsyncJournalClient(journal_server.address) as client:
        newest_first = await _created(client, label, list(range(10)))
        # Only the two oldest match "before": two ListRuns pages of 3 skip six runs and stop.
        query = listing.RunsQuery(labels=(("walk", label),), created_before=BASE + timedelta(hours=2), size=3)
        page = await listing.runs_page(client, query)
        assert (page.runs, page.bounded, page.listed) == ([], True, 6)
        rest = await listing.runs_page(client, listing.RunsQuery(**{**query.__dict__, "page_token": page.next_token}))
        assert [summary.run_id for summary in rest.runs] == newest_first[-2:]
        assert not rest.bounded and not rest.next_token


def test_the_read_token_signs_in_read_only_and_its_cookie_cannot_be_promoted():
    access = Access("the-token", secret=b"s" * 32, read_token="the-read-token")
    reader = access.sign_in("the-read-token")
    assert reader is not None and reader.signed_in and reader.read_only and not reader.may_write
    writer = access.sign_in("the-token")
    assert writer is not None and writer.may_write
    assert access.sign_in("the-read-toke") is None and access.sign_in("") is None
    cookie = access.cookie_value(reader)
    assert access.session_from_cookie(cookie) == reader
    session_id, flag, started, signature = cookie.split(".")
    assert flag == "r"
    assert access.session_from_cookie(f"{session_id}.1.{started}.{signature}") is None  # promoted to writing
    assert Access("the-token").sign_in("the-read-token") is None  # no read token set: nothing signs in read-only
    with pytest.raises(ValueError, match="must differ"):
        Access("same", read_token="same")
    with pytest.raises(ValueError, match="only a signed-in session"):
        Session("x", False, read_only=True)


async def test_the_sub_agent_tree_shows_the_parent_call_and_every_run_below_depth_first(journal_server):
    fingerprint = make_fingerprint("anthropic", "m", "s", "off", [])
    lead, child, grandchild, sibling = (demo.new_run_id(name) for name in ("lead", "child", "grandchild", "sibling"))
    async with AsyncJournalClient(journal_server.address) as client:
        lead_run = await AsyncRun.create(client, lead, fingerprint, "delegate it")
        await lead_run.assistant(
            1,
            [text_block("on it"), tool_use_block("c1", "research", {}), tool_use_block("c2", "research", {})],
            "tool_use",
        )
        await client.spawn_run(lead, "c1", child, fingerprint, "research one")
        await client.spawn_run(lead, "c2", sibling, fingerprint, "research two")
        child_run = await AsyncRun.claim(client, child, "worker-c", fingerprint)
        await child_run.assistant(1, [tool_use_block("g1", "dig", {})], "tool_use")
        await client.spawn_run(child, "g1", grandchild, fingerprint, "dig")

        top = await lineage.subagent_tree(client, lead, (await client.fold(lead)).meta)
        assert top.parent is None and not top.more
        ordered = [(c.summary.run_id, c.depth) for c in top.children]
        assert ordered.index((child, 1)) + 1 == ordered.index((grandchild, 2)), "a child's children follow it"
        assert sorted(ordered) == sorted([(child, 1), (grandchild, 2), (sibling, 1)])

        middle = await lineage.subagent_tree(client, child, (await client.fold(child)).meta)
        assert middle.parent is not None
        assert (middle.parent.run_id, middle.parent.tool_use_id, middle.parent.root_run_id) == (lead, "c1", lead)
        assert [(c.summary.run_id, c.depth) for c in middle.children] == [(grandchild, 1)]
