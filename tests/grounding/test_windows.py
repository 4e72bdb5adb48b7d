"""Evidence windows: a long tool result shown within its budget as whole records, never clipped ones."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorstep.grounding.anchors import statement_anchors
from vectorstep.grounding.shapes import Shape, Span
from vectorstep.grounding.windows import (
    FRAGMENT_CONTEXT,
    GROUP_MAX_CHARS,
    LEAF_MAX,
    MARKER_ESTIMATE,
    TUPLE_MEMBER_HEAD,
    ResultWindows,
    _added,
    _merge,
    answer_anchors,
    head_only,
    select_windows,
)

BUDGET = 1500


MARKED = re.compile(r"\n?… \[(?P<lines>[\d,]+) characters omitted\] …\n?|…\[(?P<inline>[\d,]+) chars omitted\]…")


def assert_faithful(text: str, window: str) -> None:
    """What is shown is the text itself, in order, and every marker says exactly how much it left out."""
    position = 0
    pieces = MARKED.split(window)
    # split() yields: text, lines, inline, text, lines, inline, ..., text
    for number, piece in enumerate(pieces[::3]):
        if number == 0:
            while position < len(text) and text[position] == "\n" and not piece.startswith("\n"):
                position += 1  # the window's leading newlines are trimmed
        assert text.startswith(piece, position), (position, piece[:80])
        assert piece or number in (0, len(pieces) // 3), "two markers in a row"
        position += len(piece)
        if number * 3 + 1 < len(pieces):
            omitted = int((pieces[number * 3 + 1] or pieces[number * 3 + 2]).replace(",", ""))
            assert omitted > 0
            if number * 3 + 3 < len(pieces) - 1:  # between two shown pieces, a gap is marked only when that is shorter
                assert omitted > len(f"…[{omitted:,} chars omitted]…"), omitted
            position += omitted
    assert text[position:].strip("\n") == "", f"{len(text) - position} characters unaccounted for"


def shown(text: str, *statements: str, budget: int = BUDGET) -> str:
    window = select_windows(text, answer_anchors(list(statements)), budget)
    assert len(window) <= budget
    assert_faithful(text, window)
    return window


def deploys(count: int, culprit: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"dep-2024061{n % 10}-{4000 + n}",
            "service": "checkout-api",
            "version": "4f2a9c1" if n == culprit else f"{n:07x}",
            "author": "ci-bot",
            "changes": "bump dependencies; regenerate clients; " * 6,
            "started_at": f"2024-06-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:07Z",
            "status": "succeeded",
        }
        for n in range(count)
    ]


def test_a_record_in_minified_json_keeps_its_id_with_its_value() -> None:
    # One line of ~15,000 characters: fixed-width pieces used to keep the version but lose the id.
    text = json.dumps({"deploys": deploys(40, culprit=29)}, separators=(",", ":"))
    window = shown(text, "deploy dep-20240619-4029 shipped 4f2a9c1")
    assert '"id":"dep-20240619-4029"' in window and '"version":"4f2a9c1"' in window
    record = window[window.index('"id":"dep-20240619-4029"') : window.index('"version":"4f2a9c1"')]
    assert "dep-" not in record[len('"id":"dep-') :]  # the id and the version are of one record
    assert "characters omitted" in window or "chars omitted" in window  # every omission is marked


def test_a_series_is_shown_with_its_labels_and_the_matching_points() -> None:
    series = [
        {
            "metric": {"route": route, "service": "checkout-api"},
            "values": [[1718111400 + 120 * step, f"{0.2 + step / 1000:.16f}"] for step in range(30)],
        }
        for route in ("/v1/cart", "/v1/cart/items", "/v1/checkout", "/v1/checkout/confirm")
    ]
    series[3]["values"][-1] = [1718114880, "4.871936507936508"]
    text = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, separators=(",", ":"))
    window = shown(text, "p99 for /v1/checkout/confirm reached 4.87s at 14:08Z")
    assert "4.871936507936508" in window
    head = window.rindex('"route":"/v1/checkout/confirm"', 0, window.index("4.871936507936508"))
    assert '"route":"/v1/cart' not in window[head : window.index("4.871936507936508")]


def test_a_table_row_keeps_its_header() -> None:
    header = "NAME                               READY   STATUS             RESTARTS   AGE"
    rows = [f"payments-worker-5d8f7c6b9-{n:05d}        1/1     Running            0          5d" for n in range(120)]
    rows[97] = "payments-worker-5d8f7c6b9-00097        0/1     CrashLoopBackOff   14         5d"
    window = shown("\n".join([header, *rows]), "payments-worker-5d8f7c6b9-00097 is in CrashLoopBackOff")
    assert window.startswith(header)
    assert rows[97] in window


def test_a_describe_value_keeps_the_blocks_it_sits_in() -> None:
    lines = ["Name:         checkout-7d9f-x2kqp", "Namespace:    shop", "Containers:"]
    for container in ("app", "sidecar"):
        lines += [f"  {container}:", "    Image:  registry/x:1", "    Last State:  Terminated"]
        lines += ["      Reason:  OOMKilled" if container == "app" else "      Reason:  Completed"]
        lines += [f"      Note:    {'filler ' * 40}" for _ in range(6)]
    window = shown("\n".join(lines), "checkout-7d9f-x2kqp was OOMKilled", budget=500)
    assert "  app:" in window and "OOMKilled" in window and "Last State" in window


def test_the_decisive_log_line_is_kept_whole_with_a_small_head() -> None:
    lines = [f"2026-06-12T14:{m:02d}:00Z INFO checkout request ok latency_ms=42 trace={m:032x}" for m in range(60)]
    lines[47] = (
        "2026-06-12T14:47:00Z ERROR payments-client: connection pool exhausted (16/16) pod=checkout-7d9f6b5c4-x2kqp"
    )
    window = shown("\n".join(lines), "pool exhausted on checkout-7d9f6b5c4-x2kqp since 14:47")
    assert lines[47] in window
    assert window.startswith(lines[0][:60])


def test_without_anything_to_look_for_the_head_is_shown() -> None:
    text = "\n".join(f"line {n}" for n in range(1000))
    window = shown(text, "nothing concrete here")
    assert window.startswith("line 0\nline 1") and window.rstrip().endswith("characters omitted] …")


def test_a_result_cut_short_by_the_runtime_is_still_read_as_json() -> None:
    whole = json.dumps({"deploys": deploys(40, culprit=3)}, indent=2)
    capped = whole[:9000]  # the runtime's capped copy ends mid-record
    shape = Shape(capped)
    assert shape.root.children  # read as JSON, not as one opaque line
    assert '"version": "4f2a9c1"' in shown(capped, "4f2a9c1 shipped")


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from('{}[]":,\n 0123456789abcdefgh-.%TZ'), min_size=0, max_size=4000),
    statement=st.text(alphabet=st.sampled_from("abc 0123456789.-%:Z/"), max_size=80),
    budget=st.integers(min_value=100, max_value=2000),
)
def test_any_text_is_shown_within_its_budget(text: str, statement: str, budget: int) -> None:
    window = select_windows(text, answer_anchors([statement]), budget)
    assert len(window) <= budget
    if len(text) <= budget:
        assert window == text
    else:
        assert_faithful(text, window)


VARIED_WORDS = [f"{'abcdefghij'[n % 10] * (3 + n % 7)}{n}" for n in range(500)]
FIXED_WORDS = [f"w{n:04d}" for n in range(500)]


@pytest.mark.parametrize(
    ("words", "shift"),
    [(VARIED_WORDS, 1), *((FIXED_WORDS, shift) for shift in range(1, 7))],  # `shift` moves the grid of words
)
def test_a_window_inside_a_long_line_keeps_whole_words_around_the_anchor(words: list[str], shift: int) -> None:
    anchor_text = "pod=checkout-7d9f6b5c4-x2kqp"
    pad = "p" * shift
    line = f"level=info {' '.join(words[:250])} {pad} {anchor_text} {pad} {' '.join(words[250:])}"
    shown = select_windows(line, answer_anchors(["checkout-7d9f6b5c4-x2kqp restarted"]), 600)
    pieces = re.split(r"…\[[\d,]+ chars omitted\]…", shown)
    (window,) = [piece for piece in pieces if anchor_text in piece]
    assert set(window.split()) <= {*words, pad, anchor_text}, window  # no word is cut in two
    # The words around it are what the judge reads it by: at least FRAGMENT_CONTEXT characters each side.
    before, after = window.split("checkout-7d9f6b5c4-x2kqp")
    assert len(before) >= FRAGMENT_CONTEXT and len(after) >= FRAGMENT_CONTEXT


@pytest.mark.parametrize("where", ["start", "end"])
def test_an_anchor_at_either_end_of_a_long_line_is_shown(where: str) -> None:
    filler = " ".join(FIXED_WORDS)
    line = f"pod=checkout-7d9f6b5c4-x2kqp {filler}" if where == "start" else f"{filler} pod=checkout-7d9f6b5c4-x2kqp"
    shown = select_windows(line, answer_anchors(["checkout-7d9f6b5c4-x2kqp restarted"]), 600)
    pieces = re.split(r"…\[[\d,]+ chars omitted\]…", shown)
    (window,) = [piece for piece in pieces if "checkout-7d9f6b5c4-x2kqp" in piece]
    assert set(window.split()) <= {*FIXED_WORDS, "pod=checkout-7d9f6b5c4-x2kqp"}, window
    assert line.startswith(window) if where == "start" else line.endswith(window)


WORKERS = "\n".join(f"2024-06-11T13:{n % 60:02d}:00Z INFO worker {n:04d} ok" for n in range(200))  # 40 chars a line


@pytest.mark.parametrize(("budget", "head_lines"), [(800, 1), (810, 2), (1000, 2), (1230, 3)])
def test_the_head_takes_the_lines_that_end_within_a_tenth_of_the_budget(budget: int, head_lines: int) -> None:
    window = shown(WORKERS, "worker 0150 failed", budget=budget)
    head = "\n".join(WORKERS.splitlines()[:head_lines])
    assert window.startswith(f"{head}\n… [")


def test_a_result_that_fits_its_budget_exactly_is_shown_whole() -> None:
    assert select_windows(WORKERS, answer_anchors(["worker 0150 failed"]), len(WORKERS)) == WORKERS
    assert head_only(WORKERS, len(WORKERS)) == WORKERS


def test_head_truncation_fills_its_budget_and_says_exactly_how_much_it_cut() -> None:
    text = "x" * 5000
    window = head_only(text, 1000)
    assert len(window) == 1000
    kept = window.index("\n")
    assert window == f"{text[:kept]}\n… [{5000 - kept:,} characters omitted] …"


def test_a_table_whose_header_starts_with_a_space_keeps_it() -> None:
    rows = [f" checkout_{n:03d} | {n * 7:>11} | idle" for n in range(300)]
    text = "\n".join([" datname      | numbackends | state", "--------------+-------------+------", *rows])
    window = shown(text, "checkout_250 has 1750 backends")
    assert window.startswith(" datname      | numbackends | state\n")
    assert " checkout_250 |        1750 | idle" in window


def test_the_rarest_evidence_gets_the_room_when_there_is_room_for_one_record() -> None:
    lines = [f"2024-06-11T13:{n % 60:02d}:00Z ERROR code=503 route=/v1/cart upstream timed out" for n in range(40)]
    lines.append("2024-06-11T14:10:00Z ERROR code=503 route=/v1/cart trace=ab12cd34ef upstream reset by peer")
    window = shown("\n".join(lines), "code=503 errors, one with trace ab12cd34ef", budget=300)
    assert "trace=ab12cd34ef" in window


def test_every_fact_gets_a_record_before_any_fact_gets_a_second() -> None:
    lines = []
    for n in range(20):
        lines.append(f"13:{n:02d}:01Z code=503 ok")  # short: the cheapest records to show
        lines.append(f"13:{n:02d}:02Z pool=exhausted waiting for a connection, retries=5 of 5, queue depth {n}")
    window = shown("\n".join(lines), "code=503 while retries=5", budget=400)
    assert "code=503" in window and "retries=5" in window


def test_the_budget_is_a_ceiling_not_a_target() -> None:
    filler = "checkout request served in a normal time with nothing of note to report, " * 2
    lines = [f"2024-06-11T13:{n % 60:02d}:00Z INFO checkout {filler}" for n in range(100)]
    lines[60] = lines[60].replace("INFO checkout", "INFO checkout deploy=dep-4940")
    window = shown("\n".join(lines), "checkout runs deploy=dep-4940")
    # Lines that only repeat a common word would cost the judge reading and give nothing.
    assert "deploy=dep-4940" in window and len(window) < 600


SHOWN = [(0, 100), (500, 600), (900, 1000)]


@pytest.mark.parametrize(
    ("spans", "cost"),
    [
        ([(50, 150)], 50),  # only what is new counts
        ([(550, 560)], 0),  # already shown
        ([(300, 350)], 50 + MARKER_ESTIMATE),  # apart from what is shown: it brings a marker
        ([(610, 650)], 40),  # just after a shown piece
        ([(122, 200)], 78),  # as close as a marker is long: touching
        ([(123, 200)], 77 + MARKER_ESTIMATE),
        ([(300, 478)], 178),  # ends as close to the next shown piece as a marker is long
        ([(300, 477)], 177 + MARKER_ESTIMATE),
        ([(550, 950)], 300),  # over two shown pieces
        ([(0, 1000)], 700),  # over all three
        ([(1100, 1200)], 100 + MARKER_ESTIMATE),
        ([(300, 350), (610, 650)], 50 + MARKER_ESTIMATE + 40),
    ],
)
def test_the_cost_of_a_record_is_what_it_adds_and_a_marker_if_it_stands_apart(spans: list[Span], cost: int) -> None:
    assert _added(SHOWN, spans) == cost


@pytest.mark.parametrize(
    ("spans", "merged"),
    [
        ([(0, 100), (109, 200)], [(0, 200)]),
        ([(0, 100), (129, 200)], [(0, 200)]),  # "… [29 characters omitted] …" on a line of its own: 29 characters
        ([(0, 100), (130, 200)], [(0, 100), (130, 200)]),  # the marker is shorter than the 30 it hides
        ([(129, 200), (0, 100)], [(0, 200)]),
        ([(0, 100), (50, 80), (100, 150)], [(0, 150)]),
    ],
    ids=["short-gap", "gap-as-long-as-its-marker", "gap-longer-than-its-marker", "unsorted", "overlapping"],
)
def test_a_gap_no_longer_than_the_marker_that_would_replace_it_is_shown(spans: list[Span], merged: list[Span]) -> None:
    assert _merge(spans) == merged


def test_a_head_line_longer_than_its_share_is_cut_to_the_share() -> None:
    first = "XFS (dm-3): metadata I/O error in xfs_imap_to_bp at daddr 0x2c8 len 32 error 5 " * 3
    text = "\n".join([first, *WORKERS.splitlines()])
    window = shown(text, "worker 0150 failed", budget=1000)
    assert window.startswith(f"{first[:100]}\n… [")  # a tenth of the budget


def test_an_anchor_that_is_not_in_the_result_does_not_hide_the_ones_that_are() -> None:
    window = shown(WORKERS, "deploy=dep-9999 rolled out, then worker 0150 failed", budget=500)
    assert "worker 0150 ok" in window


@pytest.mark.parametrize(("size", "whole"), [(BUDGET // 4, True), (BUDGET // 4 + 1, False)])
def test_a_record_up_to_a_quarter_of_the_budget_is_shown_whole(size: int, whole: bool) -> None:
    records = [{"id": f"job-{n:04d}", "owner": "batch", "note": "x" * (size - 48)} for n in range(40)]
    text = json.dumps(records)
    record = json.dumps(records[25])
    assert len(record) == size
    window = shown(text, "job-0025 failed")
    assert '"id": "job-0025"' in window and (record in window) == whole


def test_a_record_that_no_longer_fits_does_not_stop_a_smaller_one_that_does() -> None:
    filler = [f"2024-06-11T13:{n:02d}:00Z INFO nothing to see here {n}" for n in range(40)]
    two_facts = "two facts: id=888 and id=999" + " padding" * 25  # the better value, too long for what is left
    one_fact = "one fact: id=555" + " pad" * 30
    text = "\n".join([*filler[:10], two_facts, *filler[10:20], one_fact, *filler[20:30], "x-1 id=777", *filler[30:]])
    # Four separate statements: no record wins for showing two of one statement's anchors together.
    window = shown(text, "id=777", "id=888", "id=999", "id=555", budget=350)
    assert "id=777" in window and one_fact in window and "id=888" not in window


def test_an_anchor_that_ends_its_line_is_shown_in_that_line() -> None:
    lines = [f"2024-06-11T13:{n % 60:02d}:00Z WARN probe failed for pod=cart-{n:04d}" for n in range(300)]
    window = shown("\n".join(lines), "the probe failed for cart-0271")
    assert lines[271] in window


def test_a_line_too_long_to_show_whole_keeps_its_start_and_the_words_around_the_anchor() -> None:
    long_line = "2024-06-11T13:44:03Z ERROR batch=" + ",".join(f"item-{n:05d}" for n in range(400))
    lines = [*WORKERS.splitlines()[:100], long_line, *WORKERS.splitlines()[100:]]
    window = shown("\n".join(lines), "item-00250 was rejected")
    start = f"\n{long_line[:60]}…["  # the line's first 60 characters say what the line is
    assert start in window and "item-00250" in window.split(start, 1)[1]


@pytest.mark.parametrize(("length", "whole"), [(LEAF_MAX, True), (LEAF_MAX + 1, False)])
def test_a_field_of_a_large_record_is_shown_whole_up_to_the_leaf_limit(length: int, whole: bool) -> None:
    def message(n: int) -> str:
        text = f"probe failed: connection refused; pod=cart-{n:04d} " + "connection refused; " * 20
        return text[: length - len('"message": ""')]

    records = [{"id": f"ev-{n}", "details": {"extra": "y" * 600, "message": message(n)}} for n in range(10)]
    window = shown(json.dumps(records), "the probe failed for cart-0007")
    assert "pod=cart-0007" in window and (f'"message": "{message(7)}"' in window) == whole


def three_facts() -> str:
    """`retries=5` is in two records, `code=503` in four, `span=7` in one long one, apart from each other."""
    filler = "2024-06-11T13:00:00Z INFO nothing to report here"
    facts = {
        5: "b1 retries=5 x",
        9: "a1 code=503 xx",
        13: "a2 code=503 xx",
        17: "a3 code=503 xx",
        21: "a4 code=503 xx",
        25: "b2 retries=5 " + "y" * 36,
        29: "c1 span=7 " + "z" * 70,
    }
    return "\n".join([filler] * 3 + [facts.get(n, filler) for n in range(32)])


def test_with_room_for_each_fact_every_fact_is_shown() -> None:
    window = shown(three_facts(), "code=503 with retries=5 and span=7", budget=300)
    assert "code=503" in window and "retries=5" in window and "span=7" in window


def test_a_shown_fact_s_other_records_count_as_repeats_after_any_later_choice() -> None:
    window = shown(three_facts(), "code=503 with retries=5 and span=7", budget=260)
    assert "b1 retries=5" in window and "b2 retries=5" not in window


def test_among_hundreds_of_candidate_records_the_rarest_evidence_is_kept() -> None:
    keys = ["code=503", "retries=5", "span=7", "shard=12", "slot=44", "wave=9"]
    lines = [f"2024-06-11T13:{n % 60:02d}:00Z WARN {keys[n % 6]} upstream slow {n}" for n in range(300)]
    lines.append("2024-06-11T14:59:00Z ERROR trace=ab12cd34ef upstream reset")  # the last of 241 candidates
    window = shown("\n".join(lines), f"{' '.join(keys)} and trace ab12cd34ef")
    assert "trace=ab12cd34ef" in window


OOM_PODS = ["alpha", "bravo", "charlie", "delta"]
OOM_LOG = "\n".join(
    f"2026-06-12T14:{minute:02d}:00Z INFO ingest queue drained batch={minute} ok"
    + (
        f"\n2026-06-12T14:{minute:02d}:30Z ERROR worker-{OOM_PODS[minute // 12]}-5d8f7 OOMKilled exit=137"
        if minute in (6, 18, 30, 42)
        else ""
    )
    for minute in range(60)
)


@pytest.mark.parametrize(
    ("budget", "pods", "left_out"),
    [
        (150, [], 5),  # no record fits: the head alone, and all five found anchors are left out
        (250, ["alpha"], 3),
        (300, ["alpha", "bravo"], 2),
        (420, ["alpha", "bravo", "delta"], 1),
        (600, OOM_PODS, 0),
    ],
    ids=["head-only", "one-record", "two-records", "three-records", "all"],
)
def test_a_result_s_windows_say_how_many_of_its_facts_they_leave_out(
    budget: int, pods: list[str], left_out: int
) -> None:
    # The count decides which of a step's results gets the room the others leave unused (the transcript).
    # worker-echo is not in the result, so it is not left out by the windows: there is nothing to show.
    statements = [f"worker-{pod}-5d8f7 was OOMKilled" for pod in [*OOM_PODS, "echo"]]
    window, hidden = ResultWindows(OOM_LOG, answer_anchors(statements)).choose(budget)
    assert len(window) <= budget
    assert_faithful(OOM_LOG, window)
    assert [pod for pod in OOM_PODS if f"worker-{pod}-5d8f7" in window] == pods
    assert hidden == left_out


@pytest.mark.parametrize(
    ("deploy_line", "image_line"),
    [
        ("2024-06-11T13:07:00Z dep-4940 checkout-api scheduled", "2024-06-11T13:31:00Z image 4f2a9c1 scanned"),
        ("2024-06-11T13:07:00Z checkout-api scheduled dep-4940", "2024-06-11T13:31:00Z scanned image 4f2a9c1"),
    ],
    ids=["inside-their-lines", "ending-their-lines"],
)
def test_the_record_that_shows_a_statements_anchors_together_beats_records_that_show_each_alone(
    deploy_line: str, image_line: str
) -> None:
    # Two short lines hold one id each; only a long one says both together, as the statement does.
    lines = [f"2024-06-11T13:{n:02d}:00Z dep-{4900 + n} checkout-api rolled out {n:07x}" for n in range(40)]
    lines[7], lines[31] = deploy_line, image_line
    lines[22] = "2024-06-11T13:22:00Z dep-4940 checkout-api rolled out 4f2a9c1 after approval by" + " the manager" * 12
    window = shown("\n".join(lines), "dep-4940 rolled out 4f2a9c1", budget=350)
    assert "dep-4940 checkout-api rolled out 4f2a9c1" in window


IMAGE, NODE = {"image": "4f2a9c1"}, {"target": "ip-10-0-3-17"}


def rollouts(facts: dict[int, dict[str, str]]) -> list[dict[str, str]]:
    """Rollouts too large to show whole, with the facts given; a record given one fact is a short one."""
    records = [
        {
            "id": f"dep-{4900 + n}",
            "name": f"checkout-api-gateway-frontend-canary-{n:02d}",
            "service": "checkout-api",
            "image": f"{n:07x}",
            "changes": "bump dependencies; regenerate clients; " * 12,
            "target": f"ip-10-0-{n}-{n + 100}",
            "status": "succeeded",
        }
        for n in range(40)
    ]
    for n, fields in facts.items():
        records[n] = {**records[n], **fields} if len(fields) > 1 else {"id": f"dep-{4900 + n}", **fields}
    return records


def record_shows(window: str, n: int, fields: dict[str, str]) -> bool:
    """Whether the window shows rollout `n` with all of `fields` inside it."""
    start = window.find(f'"id": "dep-{4900 + n}"')
    record = window[start : window.index("}", start)] if start >= 0 else ""
    return all(f'"{key}": "{value}"' in record for key, value in fields.items())


@pytest.mark.parametrize(
    ("both", "image_only", "target_only"),
    [(29, 5, 12), (5, 12, 29), (12, 29, 5)],
    ids=["after-both", "before-both", "around"],
)
def test_the_fields_of_a_large_record_that_say_a_statement_together_beat_two_records_that_say_it_apart(
    both: int, image_only: int, target_only: int
) -> None:
    # The large record is reduced to its two fields (with what it is known by); the two short records
    # would cost less, but only the large one says that this image went to this node.
    text = json.dumps(rollouts({both: IMAGE | NODE, image_only: IMAGE, target_only: NODE}), indent=2)
    window = shown(text, "4f2a9c1 was rolled out to ip-10-0-3-17", budget=350)
    assert record_shows(window, both, IMAGE | NODE)
    assert f"dep-{4900 + image_only}" not in window and f"dep-{4900 + target_only}" not in window


def test_each_statement_gets_the_large_record_that_says_it_together() -> None:
    other = {"image": "9e8d7c6", "target": "ip-10-0-5-21"}
    facts = {29: IMAGE | NODE, 5: IMAGE, 12: NODE, 17: other, 33: {"image": "9e8d7c6"}, 8: {"target": "ip-10-0-5-21"}}
    text = json.dumps(rollouts(facts), indent=2)
    window = shown(text, "4f2a9c1 was rolled out to ip-10-0-3-17", "9e8d7c6 went to ip-10-0-5-21", budget=600)
    assert record_shows(window, 29, IMAGE | NODE) and record_shows(window, 17, other)
    assert not any(f"dep-{4900 + n}" in window for n in (5, 12, 33, 8))


def test_anchors_given_without_their_statements_count_as_said_together() -> None:
    text = json.dumps(rollouts({29: IMAGE | NODE, 5: IMAGE, 12: NODE}), indent=2)
    window = select_windows(text, statement_anchors("4f2a9c1 was rolled out to ip-10-0-3-17"), 350)
    assert_faithful(text, window)
    assert record_shows(window, 29, IMAGE | NODE)


@pytest.mark.parametrize(("size", "together"), [(GROUP_MAX_CHARS, True), (GROUP_MAX_CHARS + 1, False)])
def test_a_record_up_to_the_group_limit_says_its_fields_together(size: int, together: bool) -> None:
    # A larger record (a whole `kubectl describe`, one big object) is too large to be one fact.
    records = rollouts({29: IMAGE | NODE, 5: IMAGE, 12: NODE})
    records[29]["changes"] = ""
    records[29]["changes"] = "x" * (size - len(json.dumps(records[29])))
    assert len(json.dumps(records[29])) == size
    window = shown(json.dumps(records), "4f2a9c1 was rolled out to ip-10-0-3-17", budget=350)
    assert record_shows(window, 29, IMAGE | NODE) == together


def test_a_fact_a_large_record_holds_twice_is_shown_by_its_shorter_field() -> None:
    records = rollouts({29: IMAGE | NODE, 5: IMAGE, 12: NODE})
    summary = "rebuilt 4f2a9c1 from main; " + "bump dependencies; regenerate clients; " * 6
    records[29] = {"id": "dep-4929", "summary": summary, **records[29]}  # the image, first in a long field
    window = shown(json.dumps(records, indent=2), "4f2a9c1 was rolled out to ip-10-0-3-17", budget=350)
    assert record_shows(window, 29, IMAGE | NODE) and "rebuilt" not in window


def test_a_record_says_its_statement_together_whatever_other_statements_it_holds_anchors_of() -> None:
    # Every rollout names its service, and so do ten statements that no record says together: they
    # must not keep a rollout from saying together the statement it does back.
    good = {29: IMAGE | NODE, 17: {"image": "9e8d7c6", "target": "ip-10-0-5-21"}}
    good[36] = {"image": "7b3e1d0", "target": "ip-10-0-8-40"}
    apart = {5: IMAGE, 12: NODE, 20: {"image": "9e8d7c6"}, 9: {"target": "ip-10-0-5-21"}}
    apart |= {1: {"image": "7b3e1d0"}, 24: {"target": "ip-10-0-8-40"}}
    paused = {n: {"status": "paused"} for n in (3, 7, 10, 14, 15, 21, 26, 31, 34, 38)}
    statements = [f"{fields['image']} was rolled out to {fields['target']}" for fields in good.values()]
    statements += [f"checkout-api rollout dep-{4900 + n} was paused" for n in paused]
    window = shown(json.dumps(rollouts(good | apart | paused), indent=2), *statements, budget=2000)
    assert all(record_shows(window, n, fields) for n, fields in good.items())


def test_a_statement_said_together_once_does_not_outweigh_a_fact_not_yet_shown() -> None:
    # A second record that says it together again only repeats it; dep-4933 is a fact of its own.
    text = json.dumps(rollouts({17: IMAGE | NODE, 29: IMAGE | NODE, 5: IMAGE, 12: NODE}), indent=2)
    window = shown(text, "4f2a9c1 was rolled out to ip-10-0-3-17", "dep-4933 stopped", budget=650)
    assert '"id": "dep-4933"' in window
    assert [record_shows(window, n, IMAGE | NODE) for n in (17, 29)].count(True) == 1


def test_a_statement_said_together_stays_said_when_another_of_its_facts_is_shown_elsewhere() -> None:
    # dep-4917 says the image and the node together, dep-4905 the zone alone; dep-4929 says image and
    # node again, in two long fields: a repeat, worth less than the owner no record has shown yet.
    changes = "bump dependencies; regenerate clients; " * 4
    again = {"changes": f"{changes}shipped 4f2a9c1; {changes}", "notes": f"{changes}drained ip-10-0-3-17; {changes}"}
    owner = {"status": "paused", "owner": "release-captain"}
    text = json.dumps(rollouts({17: IMAGE | NODE, 29: again, 5: {"region": "eu-west-1a"}, 21: owner}), indent=2)
    statements = ["4f2a9c1 was rolled out to ip-10-0-3-17 in eu-west-1a", "release-captain approved"]
    window = shown(text, *statements, budget=1400)
    assert record_shows(window, 17, IMAGE | NODE) and record_shows(window, 5, {"region": "eu-west-1a"})
    assert record_shows(window, 21, {"owner": "release-captain"}) and "shipped 4f2a9c1" not in window


def test_facts_shown_apart_are_still_worth_showing_together() -> None:
    # The short records come first, each backing a statement whole; they show the image and the node
    # apart, and only the large record says them together.
    statements = ["4f2a9c1 was rolled out to ip-10-0-3-17", "dep-4905 built 4f2a9c1", "dep-4912 drained ip-10-0-3-17"]
    text = json.dumps(rollouts({29: IMAGE | NODE, 5: IMAGE, 12: NODE}), indent=2)
    window = shown(text, *statements, "dep-4921 stopped", budget=600)
    assert record_shows(window, 5, IMAGE) and record_shows(window, 12, NODE)
    assert record_shows(window, 29, IMAGE | NODE)


def test_the_record_that_says_all_of_a_statement_beats_another_that_says_part_of_it_again() -> None:
    # dep-4908 says the image and the node; dep-4920 the node and the zone; only dep-4931 says all three.
    zone = {"region": "eu-west-1a"}
    changes = "bump dependencies; regenerate clients; " * 4
    moved = {"changes": f"{changes}moved to eu-west-1a; {changes}"}
    text = json.dumps(rollouts({8: IMAGE | NODE, 20: NODE | zone, 31: IMAGE | NODE | moved}), indent=2)
    window = shown(text, "4f2a9c1 was rolled out to ip-10-0-3-17 in eu-west-1a", budget=1000)
    assert record_shows(window, 31, IMAGE | NODE) and "moved to eu-west-1a" in window


def test_one_of_a_statements_facts_alone_earns_nothing_for_the_statement() -> None:
    # payments-gateway and fraud-scorer are never in one line; ledger-writer, the rarest, gets the room.
    lines = [f"2024-06-11T13:{n:02d}:00Z INFO request {n:04d} served" for n in range(40)]
    for n, name in [(5, "payments-gateway"), (25, "payments-gateway"), (10, "fraud-scorer"), (30, "fraud-scorer")]:
        lines[n] = f"2024-06-11T13:{n:02d}:00Z WARN {name} slow"
    lines[18] = "2024-06-11T13:18:00Z WARN ledger-writer slow"
    window = shown("\n".join(lines), "payments-gateway called fraud-scorer", "ledger-writer stalled", budget=180)
    assert "ledger-writer" in window and "payments-gateway" not in window and "fraud-scorer" not in window


def test_plain_words_said_together_do_not_outweigh_a_fact() -> None:
    # Three words meet in one line, but words together say nothing; the one line with code=503 does.
    lines = [f"2024-06-11T13:{n:02d}:00Z INFO request {n:04d} served in {40 + n} ms" for n in range(40)]
    lines[12] = "2024-06-11T13:12:00Z WARN payments gateway throttled the checkout calls"
    lines[30] = "2024-06-11T13:30:00Z ERROR upstream answered code=503"
    window = shown("\n".join(lines), "the payments gateway throttled", "then it failed with code=503", budget=200)
    assert lines[30] in window and lines[12] not in window


def held_batches() -> str:
    """Two lines of over 2,000 characters that each hold one item, and a shorter line for each item."""
    filler = [f"2024-06-11T13:{n:02d}:00Z INFO worker {n:04d} ok" for n in range(60)]

    def batch(first: int) -> str:
        return "2024-06-11T13:44:03Z WARN batch held items=" + ",".join(
            f"item-{n:05d}" for n in range(first, first + 200)
        )

    def failed(item: str, minute: int) -> str:
        return f"2024-06-11T13:{minute}:00Z WARN {item} failed: " + "schema validation failed; " * 5

    lines = [*filler[:10], batch(200), *filler[10:30], batch(700), *filler[30:40], failed("item-00250", 50)]
    return "\n".join([*lines, *filler[40:50], failed("item-00777", 51), *filler[50:]])


def test_facts_in_two_lines_too_long_to_be_one_fact_are_not_together() -> None:
    # Each long line is a group of its own: showing a piece of each does not say the two facts together,
    # so the shorter lines that say each fact are shown instead.
    window = shown(held_batches(), "item-00250 and item-00777 were rejected", budget=800)
    assert "13:50:00Z WARN item-00250 failed" in window and "13:51:00Z WARN item-00777 failed" in window


def test_a_timestamp_in_a_short_tuple_is_shown_with_the_log_line_it_dates() -> None:
    # A Loki stream's values are [timestamp-ns, line]: the time alone does not say what happened then.
    base = 1718111400
    streams = [
        {
            "stream": {"app": "checkout", "pod": f"checkout-{n}"},
            "values": [
                [
                    f"{base + 60 * n + k}000000000",
                    f'level=info msg="request served" id=r{n}-{k}' + " trace=0af7651916cd" * 14,
                ]
                for k in range(20)
            ],
        }
        for n in range(8)
    ]
    text = json.dumps({"status": "success", "data": {"resultType": "streams", "result": streams}})
    window = shown(text, "the request at 2024-06-11T13:15:13Z was served", budget=600)
    assert '["1718111713000000000", "level=info msg=\\"request served\\" id=r5-13' in window


def loki_line(n: int, k: int, chars: int) -> str:
    """A log line that takes `chars` characters as a JSON string."""
    return (f"level=info msg=served id=r{n}-{k}" + " trace=0af7651916cd" * 20)[: chars - 2]


@pytest.mark.parametrize(("chars", "whole"), [(LEAF_MAX, True), (LEAF_MAX + 1, False)], ids=["at-limit", "over-limit"])
def test_a_long_member_of_a_short_tuple_is_shown_by_its_first_words(chars: int, whole: bool) -> None:
    base = 1718111400
    streams = [
        {
            "stream": {"app": "checkout", "pod": f"checkout-{n}"},
            "values": [[f"{base + 60 * n + k}000000000", loki_line(n, k, chars)] for k in range(20)],
        }
        for n in range(8)
    ]
    text = json.dumps({"status": "success", "data": {"resultType": "streams", "result": streams}})
    window = shown(text, "the request at 2024-06-11T13:15:13Z was served", budget=600)
    line = json.dumps(loki_line(5, 13, chars))
    after = window.split('["1718111713000000000", ', 1)[1]
    if whole:
        assert after.startswith(f"{line}]")
    else:  # the start says what the line is: at least TUPLE_MEMBER_HEAD characters, no word cut in two
        head = after.split("…[", 1)[0]
        assert line.startswith(head) and TUPLE_MEMBER_HEAD <= len(head) < len(line)
        assert not line[len(head) - 1 : len(head) + 1].isalnum(), head


def compact_rows(columns: int) -> str:
    """Rows as arrays of their columns (ClickHouse's JSONCompact), the message last and too long to show whole."""
    kept = {2: [1, 4], 4: [0, 1, 3, 4], 5: [0, 1, 2, 3, 4]}[columns]  # time, request, service, level, message
    rows = []
    for n in range(40):
        row = [f"2024-06-11 13:{n:02d}:07", f"req-{n:04d}", "checkout", "ERROR", f"payment {n} declined " + "x" * 200]
        rows.append([row[column] for column in kept])
    return json.dumps({"meta": [{"name": f"c{n}"} for n in range(columns)], "data": rows, "rows": 40})


@pytest.mark.parametrize(("columns", "with_message"), [(2, True), (4, True), (5, False)], ids=["pair", "four", "five"])
def test_a_value_is_shown_with_the_other_members_of_a_tuple_of_up_to_four(columns: int, with_message: bool) -> None:
    # A longer array is a list of values, not one fact: its other members are not the value's context.
    window = shown(compact_rows(columns), "request req-0029 failed", budget=600)
    assert '"req-0029"' in window
    assert ("payment 29 declined" in window) == with_message


def test_a_field_of_a_large_object_is_shown_with_what_the_record_is_known_by_not_its_other_fields() -> None:
    events = [
        {
            "id": f"ev-{n:03d}",
            "note": f"drain {n} " + "requested by the node autoscaler; " * 8,
            "target": f"ip-10-0-{n}-9",
        }
        for n in range(40)
    ]
    window = shown(json.dumps(events), "node ip-10-0-17-9 failed", budget=600)
    assert '{"id": "ev-017"' in window and '"target": "ip-10-0-17-9"}' in window
    assert "drain 17" not in window


def test_a_small_count_is_shown_where_it_counts_what_the_answer_counts() -> None:
    # A hundred 30s earlier in the output would take every place the window looks at for "30"; the
    # one that counts replicas is the one to show.
    noise = "\n".join(f"deployment/web-{n:02d}  replicas 3  surge 30  unavailable 30" for n in range(60))
    hpa = "Name:          cart\nMin replicas:  2\nMax replicas:  30\nDeployment pods: 30 current / 30 desired"
    window = shown(f"{noise}\n{hpa}", "the cart HPA allows at most 30 replicas", budget=600)
    assert "Max replicas:  30" in window


def test_an_issue_or_pull_request_is_shown_with_its_number() -> None:
    # GitHub's search gives each item an id, a number and a title; "PR #1482" means the number.
    items = [
        {
            "url": f"https://api.github.com/repos/acme/thumbnailer/issues/{1470 + n}",
            "id": 2511494100 + n,
            "node_id": f"PR_kwDOLKA{n:04d}F6AF15",
            "number": 1470 + n,
            "title": f"Change {n}: " + ("bump libvips 8.14.5 -> 8.15.3" if n == 12 else "tidy the chart values"),
            "labels": [{"name": "deps", "color": "0366d6", "description": "dependency bumps"}],
            "body": "Notes on the change. " * (12 if n == 12 else 3),
        }
        for n in range(16)
    ]
    text = json.dumps({"total_count": 16, "items": items}, indent=2)
    window = shown(text, "the libvips 8.15.3 bump came in PR #1482")
    assert '"number": 1482' in window and "8.15.3" in window
