"""Evidence windows: a long tool result shown within its budget as whole records, never clipped ones."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorstep.grounding.shapes import Shape
from vectorstep.grounding.windows import FRAGMENT_CONTEXT, answer_anchors, select_windows

BUDGET = 1500


def shown(text: str, *statements: str, budget: int = BUDGET) -> str:
    window = select_windows(text, answer_anchors(list(statements)), budget)
    assert len(window) <= budget
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
