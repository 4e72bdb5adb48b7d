"""A small count is the claim's count only beside what it counts; qualifiers that tell two values apart."""

from __future__ import annotations

import json

import pytest

from vectorstep.grounding.counts import counts
from vectorstep.grounding.finding import ResultIndex
from vectorstep.grounding.qualifiers import contrast
from vectorstep.grounding.shapes import Shape


def counted_at(text: str, number: str, counted: tuple[str, ...], occurrence: int = 0) -> bool:
    """Whether the `occurrence`-th `number` standing alone in `text` counts `counted`."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(number, start + 1)
        while (start and text[start - 1] in "0123456789.") or text[start + len(number) :][:1].isdigit():
            start = text.index(number, start + 1)
    return counts(ResultIndex(text), Shape(text), (start, start + len(number)), counted)


SERIES = json.dumps(
    {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": "kube_hpa_status_current_replicas", "hpa": "cart"},
                    "values": [[1718113800, "6"]],
                },
                {"metric": {"__name__": "kube_job_status_active", "namespace": "etl"}, "values": [[1718113800, "4"]]},
            ],
        },
    }
)
PSQL = "\n".join(
    [
        "  datname  | confl_lock | confl_snapshot | confl_bufferpin",
        "-----------+------------+----------------+----------------",
        " reports   |          7 |           1284 |               2",
        "(1 row)",
    ]
)
PODS = "\n".join(
    [
        "NAME            READY   STATUS    RESTARTS   AGE",
        "redis-0         1/1     Running   7          3d",
        "redis-1         1/1     Running   0          12d",
    ]
)


@pytest.mark.parametrize(
    ("text", "number", "counted", "expected"),
    [
        ("0/9 nodes are available: 6 node(s) had volume node affinity conflict", "6", ("node",), True),
        ("0/9 nodes are available: 6 node(s) had volume node affinity conflict", "6", ("pod",), False),
        ("    Ready:          False\n    Restart Count:  3\n", "3", ("time", "restart"), True),
        ('{"restarts": 3, "ready": true}', "3", ("time", "restart"), True),
        ("24m (x9 over 45m)  Warning  BackOff  pod/cart-0  Back-off restarting", "9", ("time", "seen"), True),
        ("24m (x9 over 45m)  Warning  BackOff  pod/cart-0", "9", ("node",), False),  # (x9 counts times only
        ('{"incidents": [], "limit": 25, "offset": 0, "total": 143}', "143", ("open", "incident"), True),
        ('{"incidents": [], "limit": 25, "offset": 0, "total": 143}', "25", ("open", "incident"), False),
        (SERIES, "6", ("replica",), True),  # named by its series
        (SERIES, "6", ("node",), False),
        (SERIES, "4", ("job",), True),  # named by a three-letter word
        (PSQL, "1284", ("snapshot",), True),  # named by its column, not by the whole header
        (PSQL, "7", ("snapshot",), False),
        (PODS, "7", ("time", "restart"), True),
        (PODS, "3", ("time", "restart"), False),  # the 3 of an age (3d) does not count restarts
        ("dispatched 3 batches to the queue", "3", (), True),  # nothing counted: any 3 will do
    ],
    ids=lambda value: str(value)[:30],
)
def test_a_count_is_taken_where_the_result_names_what_it_counts(
    text: str, number: str, counted: tuple[str, ...], expected: bool
) -> None:
    assert counted_at(text, number, counted) is expected


@pytest.mark.parametrize(
    ("text", "counted", "expected"),
    [
        ("rollout of 9 jobs finished\nreplicas settled", ("replica",), False),  # the next line says other things
        ("restarting pods\n3 of them were ready", ("pod",), False),  # and so does the line before
        ("header line\nstatus: ready 3 pods", ("pod",), True),  # after it, on its own line
        ("header\nfirst line\nready: 3 job", ("job",), True),  # its line ends the text, without a newline
    ],
)
def test_what_a_count_counts_is_read_on_its_own_line(text: str, counted: tuple[str, ...], expected: bool) -> None:
    number = "9" if " 9 " in text else "3"
    assert counted_at(text, number, counted) is expected


@pytest.mark.parametrize(
    ("named", "claimed", "expected"),
    [
        ({"kube", "hpa", "spec", "min", "replica"}, {"capp", "replica", "maximum"}, ("min", "capp")),
        ({"kube", "hpa", "spec", "max", "replica"}, {"replica", "minimum"}, ("max", "minimum")),
        ({"old", "master"}, {"failover", "becam", "master"}, ("old", "becam")),
        ({"last", "timestamp"}, {"first", "seen"}, ("last", "first")),
        ({"limit"}, {"request", "cpu"}, ("limit", "request")),
        ({"p95"}, {"p99", "latency"}, ("p95", "p99")),  # one of five percentiles against another
        ({"global"}, {"local", "limit"}, ("global", "local")),
        ({"min", "max", "replica"}, {"maximum"}, None),  # a name with both says nothing of which
        ({"min", "replica"}, {"min", "maximum"}, None),  # a claim that says both does not contradict
        ({"min", "replica"}, {"replica"}, None),  # nor one that says neither
        ({"replica"}, {"maximum"}, None),
    ],
)
def test_a_value_named_by_one_qualifier_contrasts_with_a_claim_of_another(
    named: set[str], claimed: set[str], expected: tuple[str, str] | None
) -> None:
    assert contrast(named, claimed) == expected
