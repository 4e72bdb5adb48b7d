"""The judge's transcript: ordered entries within a budget, marked cuts, and evidence windows."""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest

from vectorstep.domain.trace import TraceEvent, cap_text
from vectorstep.grounding.anchors import statement_anchors
from vectorstep.grounding.evidence import StepEvidence
from vectorstep.grounding.local_check import check_claim
from vectorstep.grounding.transcript import build_transcript
from vectorstep.grounding.windows import answer_anchors, head_only, select_windows

LOG = "\n".join(
    [f"2026-06-12T14:{minute:02d}:00Z INFO checkout request ok latency_ms=42" for minute in range(60)]
    + ["2026-06-12T14:02:17Z ERROR payments-client: connection pool exhausted (16/16) pod=checkout-7d9f6b5c4-x2kqp"]
    + [f"2026-06-12T15:{minute:02d}:00Z INFO checkout request ok latency_ms=40" for minute in range(40)]
)
ANSWER = {
    "confidence": 0.9,
    "summary": "Pool exhausted on checkout-7d9f6b5c4-x2kqp since 14:02: 'connection pool exhausted'",
    "next_step_context": "",
    "raw_response": {"ignored": "999999"},
}


def event(type_: str, seq: int, **fields: object) -> TraceEvent:
    return TraceEvent(type=type_, seq=seq, ts="2026-06-12T14:10:00+00:00", **fields)  # type: ignore[arg-type]


def anchor(text: str) -> Any:
    return next(found for found in statement_anchors(text) if found.hard)


def test_anchors_are_the_concrete_things_the_answer_states() -> None:
    anchors = {found.text for found in answer_anchors({**ANSWER, "error_rate": "4.2%", "took": "1.89s"}) if found.hard}
    for expected in ("checkout-7d9f6b5c4-x2kqp", "14:02", "connection pool exhausted", "4.2%", "1.89s"):
        assert expected in anchors
    assert not any("999999" in text for text in anchors)  # raw_response is not part of the answer
    assert "0.9" not in anchors  # nor is the confidence


def test_a_rounded_figure_in_the_answer_finds_the_precise_one_in_the_result() -> None:
    text = "\n".join(f'{{"t": {n}, "v": "0.00{n}1"}}' for n in range(300)) + '\n{"t": 999, "v": "0.04118773946360153"}'
    shown = select_windows(
        text, answer_anchors({"summary": "the miss ratio reached 4.12% at the top of the hour"}), 600
    )
    assert "0.04118773946360153" in shown and len(shown) <= 600


def test_windows_keep_the_decisive_line_that_head_truncation_cuts() -> None:
    budget = 1500
    windowed = select_windows(LOG, answer_anchors(ANSWER), budget)
    head = head_only(LOG, budget)
    decisive = "payments-client: connection pool exhausted (16/16) pod=checkout-7d9f6b5c4-x2kqp"
    assert len(windowed) <= budget and len(head) <= budget
    assert decisive in windowed and decisive not in head
    assert windowed.startswith(LOG[:100])  # a small head stays: it shows the format of the output
    assert "characters omitted] …" in windowed


def test_a_short_result_is_left_whole() -> None:
    assert select_windows("short result", answer_anchors(["short"]), 1500) == "short result"


def test_the_transcript_orders_entries_and_counts_each_cut() -> None:
    trace = [
        event("llm_call", 1, model="m"),
        event("thinking", 2, content="private reasoning"),
        event("text", 3, content="Let me look at the logs."),
        event("tool_call", 4, call_id="c1", name="logs__search", args={"service": "checkout", "q": "x" * 400}),
        event("tool_call", 5, call_id="c2", name="k8s__delete_pod", args={"pod": "p"}),
        event("tool_denied", 6, call_id="c2", name="k8s__delete_pod", reason="not granted"),
        event("tool_result", 7, call_id="c2", name="k8s__delete_pod", content="refused", is_error=True),
        event(
            "tool_result",
            8,
            call_id="c1",
            name="logs__search",
            content=cap_text(LOG, 3000)[0],
            is_error=False,
            original_chars=len(LOG),
        ),
        event("llm_call", 9, model="m"),
        event("text", 10, content='{"confidence": 0.9}'),
    ]
    transcript = build_transcript(trace, {"c1": LOG}, ANSWER, max_chars=1500)
    lines = [entry.split(" ", 2)[:2] for entry in transcript.entries]
    assert lines == [["[1]", "agent:"], ["[2]", "call"], ["[3]", "call"], ["[4]", "refused"], ["[5]", "result"]]
    assert "private reasoning" not in transcript.text and '{"confidence": 0.9}' not in transcript.text
    assert transcript.entries[1].endswith("…") and len(transcript.entries[1]) < 400
    assert transcript.truncated_events == 1 and transcript.cut_by_runtime == 0
    assert "pod=checkout-7d9f6b5c4-x2kqp" in transcript.entries[4]  # found in the whole result, kept in memory
    assert not transcript.hides(anchor("checkout-7d9f6b5c4-x2kqp"))


def test_without_the_whole_result_the_runtime_cut_is_counted_and_named() -> None:
    capped, original = cap_text(LOG, 500)
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={}),
        event("tool_result", 2, call_id="c1", name="logs__search", content=capped, original_chars=original),
    ]
    transcript = build_transcript(trace, {}, ANSWER, max_chars=1500)  # a remote gateway sends only its copy
    assert transcript.truncated_events == 1 and transcript.cut_by_runtime == 1
    assert LOG.splitlines()[0] in transcript.text  # the judge sees the copy there is, never nothing


def test_a_tool_error_is_shown_as_one() -> None:
    trace = [
        event("tool_call", 1, call_id="c1", name="metrics__query", args={"q": "up"}),
        event("tool_result", 2, call_id="c1", name="metrics__query", content="timeout after 30s", is_error=True),
        event("tool_call", 3, call_id="c2", name="metrics__query", args={"q": "rate"}),
        event("tool_result", 4, call_id="c2", name="metrics__query", content="0.042", is_error=False),
    ]
    transcript = build_transcript(trace, {}, ANSWER, max_chars=1500)
    assert transcript.entries[1] == "[2] result of [1] metrics__query (error): timeout after 30s"
    assert transcript.entries[3] == "[4] result of [3] metrics__query (ok): 0.042"


def test_plain_head_truncation_when_evidence_windows_are_off() -> None:
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={}),
        event("tool_result", 2, call_id="c1", name="logs__search", content=LOG),
    ]
    transcript = build_transcript(trace, {"c1": LOG}, ANSWER, max_chars=1000, evidence_windows=False)
    assert "pool exhausted" not in transcript.entries[1]
    assert transcript.hides(anchor("'connection pool exhausted'"))


def test_a_call_s_arguments_are_shown_compactly_as_written_and_capped() -> None:
    exactly = {"q": "x" * 292}  # {"q":"xxx…"} is 300 characters: shown whole
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={"service": "café", "window": "5m"}),
        event("tool_call", 2, call_id="c2", name="logs__search", args=exactly),
        event("tool_call", 3, call_id="c3", name="logs__search", args={"q": "x" * 293}),
        event("tool_call", 4, call_id="c4", name="logs__search"),
    ]
    entries = build_transcript(trace, {}, ANSWER, max_chars=1500).entries
    assert entries[0] == '[1] call logs__search {"service":"café","window":"5m"}'
    assert entries[1] == '[2] call logs__search {"q":"' + "x" * 292 + '"}'
    assert entries[2] == '[3] call logs__search {"q":"' + "x" * 293 + '"…'  # its first 300 characters, then the mark
    assert entries[3] == "[4] call logs__search {}"


def test_each_cut_result_says_who_cut_it_and_every_cut_is_counted() -> None:
    capped, original = cap_text(LOG, 500)
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={}),
        event("tool_result", 2, call_id="c1", name="logs__search", content=capped, original_chars=original),
        event("tool_call", 3, call_id="c2", name="logs__search", args={}),
        event("tool_result", 4, call_id="c2", name="logs__search", content="first lines…", capped_by="gateway"),
        # A result whose call is not in the trace (a gateway that sent only results) is still shown.
        event("tool_result", 5, call_id="c9", name="metrics__query", content=None),
    ]
    transcript = build_transcript(trace, {}, ANSWER, max_chars=1500)
    assert transcript.entries[1].startswith("[2] result of [1] logs__search (ok, cut by the runtime): ")
    assert transcript.entries[3] == "[4] result of [3] logs__search (ok, cut by the gateway): first lines…"
    assert transcript.entries[4] == "[5] result metrics__query (ok): "  # an empty result is shown empty
    assert transcript.truncated_events == 2 and transcript.cut_by_runtime == 2


def test_every_shortened_agent_text_is_counted() -> None:
    trace = [
        event("llm_call", 1, model="m"),
        event("text", 2, content="thinking aloud " * 200),
        event("llm_call", 3, model="m"),
        event("text", 4, content="and more " * 300),
        event("llm_call", 5, model="m"),
        event("text", 6, content="short"),
        event("llm_call", 7, model="m"),
    ]
    transcript = build_transcript(trace, {}, ANSWER, max_chars=500)
    assert [entry.split(" ", 2)[1] for entry in transcript.entries] == ["agent:", "agent:", "agent:"]
    assert transcript.truncated_events == 2


def test_a_trace_without_model_call_events_still_gives_a_transcript() -> None:
    # Some gateways send tool events and text only: no text can be placed before a model call, so
    # none is shown (the last one is the answer, which the judge gets on its own).
    trace = [
        event("text", 1, content="Looking at the metrics."),
        event("tool_call", 2, call_id="c1", name="metrics__query", args={"q": "up"}),
        event("tool_result", 3, call_id="c1", name="metrics__query", content="1"),
        event("text", 4, content='{"confidence": 0.9}'),
    ]
    transcript = build_transcript(trace, {}, ANSWER, max_chars=1500)
    assert transcript.entries == ('[1] call metrics__query {"q":"up"}', "[2] result of [1] metrics__query (ok): 1")


PODS = [f"worker-{name}-5d8f7" for name in ("alpha", "bravo", "charlie", "delta", "echo")]
BUSY = "\n".join(
    f"2026-06-12T14:{minute:02d}:00Z INFO queue drained batch={minute} ok"
    + (f"\n2026-06-12T14:{minute:02d}:30Z ERROR {PODS[minute // 12]} OOMKilled exit=137" if minute % 12 == 6 else "")
    for minute in range(60)
)
QUIET = "\n".join(f"2026-06-12T13:{minute:02d}:00Z INFO deploy controller idle" for minute in range(60)).replace(
    "13:30:00Z INFO deploy controller idle", "13:30:00Z INFO rolled out deploy 8f3a91c"
)
POOLED_ANSWER = {"confidence": 0.9, "summary": f"{', '.join(PODS)} were OOMKilled after deploy 8f3a91c"}


def _results(*texts: str) -> tuple[list[TraceEvent], dict[str, str]]:
    events = []
    for number, text in enumerate(texts):
        events.append(event("tool_call", 2 * number + 1, call_id=f"c{number}", name="logs__search", args={}))
        events.append(event("tool_result", 2 * number + 2, call_id=f"c{number}", name="logs__search", content=text))
    return events, {f"c{number}": text for number, text in enumerate(texts)}


def test_a_result_whose_evidence_needs_more_room_gets_what_the_others_leave_unused() -> None:
    budget = 420
    alone = build_transcript(*_results(BUSY), POOLED_ANSWER, max_chars=budget)
    together = build_transcript(*_results(BUSY, QUIET), POOLED_ANSWER, max_chars=budget)
    assert sum(pod in alone.text for pod in PODS) < len(PODS)  # its own budget holds only some of them
    assert all(pod in together.text for pod in PODS)  # the quiet result's spare room shows the rest
    assert "rolled out deploy 8f3a91c" in together.text
    shown = [shown for _, shown in together.shortened]
    assert sum(map(len, shown)) <= 2 * budget  # never more in all than head truncation would show


@pytest.mark.parametrize("budget", [200, 300, 420, 600, 900])
@pytest.mark.parametrize("texts", [(BUSY,), (BUSY, QUIET), (BUSY, BUSY), (QUIET, BUSY, LOG)], ids=["1", "2", "2b", "3"])
def test_lending_room_never_shows_more_in_all_than_head_truncation(budget: int, texts: tuple[str, ...]) -> None:
    pooled = build_transcript(
        *_results(*texts), POOLED_ANSWER | {"next_step_context": ANSWER["summary"]}, max_chars=budget
    )
    plain = build_transcript(*_results(*texts), POOLED_ANSWER, max_chars=budget, evidence_windows=False)
    assert sum(len(shown) for _, shown in pooled.shortened) <= sum(len(shown) for _, shown in plain.shortened)


@pytest.mark.parametrize("evidence_windows", [True, False], ids=["windows", "head"])
def test_a_result_the_runtime_capped_is_shown_whole_when_its_whole_was_kept_and_fits(evidence_windows: bool) -> None:
    capped, original = cap_text(LOG, 3000)
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={}),
        event("tool_result", 2, call_id="c1", name="logs__search", content=capped, original_chars=original),
    ]
    transcript = build_transcript(trace, {"c1": LOG}, ANSWER, max_chars=len(LOG), evidence_windows=evidence_windows)
    assert transcript.entries[1] == f"[2] result of [1] logs__search (ok): {LOG}"  # not the runtime's copy
    assert transcript.truncated_events == 0 and transcript.cut_by_runtime == 0 and transcript.shortened == ()


@pytest.mark.parametrize("evidence_windows", [True, False], ids=["windows", "head"])
def test_a_result_the_runtime_capped_is_cut_from_its_whole_when_its_whole_was_kept(evidence_windows: bool) -> None:
    capped, original = cap_text(LOG, 3000)  # the error line is past the runtime's cut
    trace = [
        event("tool_call", 1, call_id="c1", name="logs__search", args={}),
        event("tool_result", 2, call_id="c1", name="logs__search", content=capped, original_chars=original),
    ]
    transcript = build_transcript(trace, {"c1": LOG}, ANSWER, max_chars=1000, evidence_windows=evidence_windows)
    shown = transcript.entries[1].removeprefix("[2] result of [1] logs__search (ok): ")
    assert transcript.truncated_events == 1 and transcript.cut_by_runtime == 0
    assert transcript.shortened == ((LOG, shown),)  # what was cut is of the whole result: its markers count from it
    # Windows find the error line in the whole result; head truncation hides it, and the transcript knows.
    assert ("pod=checkout-7d9f6b5c4-x2kqp" in shown) is evidence_windows
    assert transcript.hides(anchor("checkout-7d9f6b5c4-x2kqp")) is not evidence_windows


OOM_PODS = {
    "ingest": {6: "alpha", 18: "bravo", 30: "charlie", 42: "delta"},
    "export": {10: "echo", 35: "foxtrot", 55: "golf"},
    "audit": {50: "hotel"},  # one fact: its windows leave room unused
}
OOM_LOGS = {
    service: "\n".join(
        f"2026-06-12T14:{minute:02d}:00Z INFO {service} queue drained batch={minute} ok"
        + (
            f"\n2026-06-12T14:{minute:02d}:30Z ERROR worker-{pods[minute]}-5d8f7 OOMKilled exit=137"
            if minute in pods
            else ""
        )
        for minute in range(60)
    )
    for service, pods in OOM_PODS.items()
}
OOM_ANSWER = {
    "confidence": 0.9,
    "summary": ", ".join(f"worker-{pod}-5d8f7" for pods in OOM_PODS.values() for pod in pods.values())
    + " were OOMKilled",
}


@pytest.mark.parametrize("order", list(permutations(OOM_LOGS)), ids="-".join)  # whatever their order in the trace
@pytest.mark.parametrize(
    ("budget", "shown"),
    [
        # Alone, ingest's windows leave 2 of its pods out and export's 1: the room audit and they leave
        # unused shows the rest of ingest's, not the rest of export's.
        (300, {"ingest": ["alpha", "bravo", "charlie", "delta"], "export": ["echo", "golf"]}),
        # Room for both: what ingest takes of it is no longer spare, and export gets the rest.
        (350, {"ingest": ["alpha", "bravo", "charlie", "delta"], "export": ["echo", "foxtrot", "golf"]}),
    ],
    ids=["room-for-one", "room-for-both"],
)
def test_unused_room_goes_first_to_the_result_that_leaves_most_evidence_out(
    budget: int, shown: dict[str, list[str]], order: tuple[str, ...]
) -> None:
    transcript = build_transcript(*_results(*(OOM_LOGS[service] for service in order)), OOM_ANSWER, max_chars=budget)
    results = dict(zip(order, (entry for entry in transcript.entries if " result of " in entry), strict=True))
    pods = {
        service: [pod for pod in OOM_PODS[service].values() if f"worker-{pod}-5d8f7" in entry]
        for service, entry in results.items()
    }
    assert pods == {**shown, "audit": ["hotel"]}
    assert sum(len(text) for _, text in transcript.shortened) <= 3 * budget  # never more than head truncation


@pytest.mark.parametrize(
    ("budget", "pods"), [(350, ["alpha", "bravo"]), (420, ["alpha", "bravo", "delta"])], ids=["350", "420"]
)
def test_only_tool_results_lend_each_other_room(budget: int, pods: list[str]) -> None:
    # The agent's own text is shown by head truncation within a budget of its own, and a call is not its
    # result: neither has unused room to lend, though windows of the text or of the call's result would.
    events, full_results = _results(OOM_LOGS["ingest"])
    said = OOM_LOGS["audit"].replace(" INFO ", " noted: ")
    trace = [*events, event("llm_call", 3, model="m"), event("text", 4, content=said), event("llm_call", 5, model="m")]
    transcript = build_transcript(trace, full_results, OOM_ANSWER, max_chars=budget)
    shown = transcript.entries[1].removeprefix("[2] result of [1] logs__search (ok): ")
    assert len(shown) <= budget
    assert [pod for pod in OOM_PODS["ingest"].values() if f"worker-{pod}-5d8f7" in shown] == pods


def test_a_transcript_from_the_steps_evidence_shows_and_hides_what_one_read_alone_does() -> None:
    # The judge's transcript reuses what the anchor check read of each result: nothing it shows may change.
    trace, whole = _results(BUSY, QUIET, LOG)
    alone = build_transcript(trace, whole, POOLED_ANSWER, max_chars=420)
    evidence = StepEvidence.of_trace("Alert OOMKilled", trace, whole)
    check_claim(f"{PODS[0]} was OOMKilled at 14:06:30Z", evidence)  # the results are read before
    shared = build_transcript(trace, whole, POOLED_ANSWER, max_chars=420, evidence=evidence)
    assert shared.entries == alone.entries and shared.truncated_events == alone.truncated_events
    for text in (*PODS, "8f3a91c", "exit=137"):
        assert shared.hides(anchor(text)) == alone.hides(anchor(text))
