"""The anchor check and evidence pointers: claims checked, and their evidence located, without a model."""

from __future__ import annotations

import json

import pytest

from vectorstep.grounding.counts import MAX_COUNTED_PLACES
from vectorstep.grounding.evidence import StepEvidence, ToolResult
from vectorstep.grounding.local_check import _CLAUSES, answer_claims, check_claim, check_statement, clauses
from vectorstep.grounding.misread import claim_words
from vectorstep.grounding.pointers import locate

TASK = "Alert CheckoutLatencyHigh on checkout-api (namespace shop) since 2024-06-11T13:52:30Z. Investigate."
DEPLOYS = json.dumps(
    {
        "deploys": [
            {"id": "dep-4940", "version": "4f2a9c1", "started_at": "2024-06-11T13:41:07Z", "status": "succeeded"},
            {"id": "dep-4939", "version": "91be0d3", "started_at": "2024-06-10T09:12:44Z", "status": "succeeded"},
        ]
    },
    separators=(",", ":"),
)
SERIES = json.dumps(
    {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"route": "/v1/cart"}, "values": [[1718113800, "0.21"], [1718114160, "0.22"]]},
                {"metric": {"route": "/v1/checkout/confirm"}, "values": [[1718113800, "0.84"], [1718114160, "4.8719"]]},
            ],
        },
    }
)
LOGS = "\n".join(
    [
        "2024-06-11T13:40:02Z INFO pool configured max_conns=40 pod=checkout-api-7f9c6d5b4-old01",
        "2024-06-11T13:42:11Z INFO pool configured max_conns=4 pod=checkout-api-7f9c6d5b4-new01",
        "2024-06-11T13:44:03Z ERROR db acquire: acquire timed out after 5s status=503 pod=checkout-api-7f9c6d5b4-new01",
    ]
)
QUOTA = json.dumps({"status": {"hard": {"limits.memory": "96Gi"}, "used": {"limits.memory": "93Gi"}}})
ERROR = "Error: deploy 5c1d2e7 not found"


def one_result(tool: str, text: str, task: str) -> StepEvidence:
    """A step's evidence with one tool result that is no error, kept whole."""
    return StepEvidence(task, [ToolResult("c0", tool, text, False, True)])


def evidence() -> StepEvidence:
    results = [("deploys__list", DEPLOYS), ("metrics__query_range", SERIES), ("logs__search", LOGS)]
    tools = [ToolResult(f"c{n}", name, text, False, True) for n, (name, text) in enumerate(results)]
    tools.append(ToolResult("c3", "k8s__get", QUOTA, False, True))
    tools.append(ToolResult("c4", "deploys__get", ERROR, True, True))
    return StepEvidence(TASK, tools)


@pytest.mark.parametrize(
    "claim",
    [
        "deploy dep-4940 of 4f2a9c1 started at 13:41Z",
        "p99 of /v1/checkout/confirm reached about 4.87s",
        "p99 of /v1/checkout/confirm rose from 0.84s to 4.87s",
        "new pods run with max_conns=4",
        "requests fail with status=503 after 'acquire timed out after 5s'",
        "the quota's hard limit for limits.memory is 96Gi",
        "max_conns=40 before and max_conns=4 after the deploy",  # two facts, each backed
    ],
)
def test_a_claim_whose_anchors_are_together_in_one_record_is_supported(claim: str) -> None:
    verdict = check_claim(claim, evidence())
    assert verdict.verdict == "supported", verdict.reason


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        ("deploy dep-4939 started at 13:41Z", "not together in one record"),  # 13:41 is dep-4940's
        ("p99 of /v1/cart reached 4.87s", "not together"),  # 4.87 is the confirm route's
        ("the rollback target is 5c1d2e7", "in no tool result"),  # only in an error result
        ("p99 reached 6.3s", "in no tool result"),
        ("limits.memory used is 96Gi", "is the value of"),  # 96Gi is the hard limit, not what is used
    ],
)
def test_a_decoy_or_an_invention_is_unsupported_and_says_why(claim: str, why: str) -> None:
    verdict = check_claim(claim, evidence())
    assert verdict.verdict == "unsupported"
    assert why in verdict.reason


@pytest.mark.parametrize(
    "claim",
    [
        "only the checkout pods are affected",  # an entity, no figure
        "deploy 4f2a9c1 caused the latency spike",  # a cause: a record cannot show one
    ],
)
def test_causal_and_entity_claims_are_undecidable(claim: str) -> None:
    assert check_claim(claim, evidence()).verdict == "undecidable"


def test_a_lone_figure_that_is_there_is_undecidable_unless_it_is_specific() -> None:
    # 0.84 is in the results, but nothing in the claim ties it to a record: it could be anyone's.
    verdict = check_claim("the slowest route reached 0.84s", evidence())
    assert verdict.verdict == "undecidable" and "nothing else the claim names" in verdict.reason
    assert verdict.pointer is not None and verdict.pointer.call_id == "c1"
    # A figure of three significant digits is a finding in itself where nothing says otherwise.
    specific = check_claim("the slowest route reached 4.87s", evidence())
    assert (specific.verdict, specific.reason) == (
        "supported",
        "`4.87s` is in the result of metrics__query_range, and nothing there says otherwise",
    )


REDIS_INFO = "# Clients\nconnected_clients:10000\nblocked_clients:0\n# Stats\ntotal_connections_received:9120331\nrejected_connections:183344\n"
COREDNS = ".:53 {\n    errors\n    forward . 10.8.0.53 10.8.0.54\n    cache 30\n}\n"
OFFSET = '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1718114160,"94.2"]}]}}'


def lone_figures() -> StepEvidence:
    tools = [
        ToolResult("c0", "redis__info", REDIS_INFO, False, True),
        ToolResult("c1", "k8s__get", COREDNS, False, True),
        ToolResult("c2", "prom__query", OFFSET, False, True, "promql=abs(node_timex_offset_seconds)"),
    ]
    return StepEvidence("Alert SessionErrors on session-api. Investigate.", tools)


@pytest.mark.parametrize(
    "claim",
    [
        "Redis has rejected 183,344 connections",  # `rejected` is said by its line, not by the others
        "the node's time offset is about 94 seconds",  # a bare sample is about what its query asks
    ],
)
def test_a_lone_figure_in_a_record_that_says_what_the_claim_speaks_of_is_supported(claim: str) -> None:
    verdict = check_claim(claim, lone_figures())
    assert verdict.verdict == "supported", verdict.reason
    assert "in a record that speaks of" in verdict.reason


def test_a_lone_figure_in_a_record_that_says_nothing_of_the_claim_is_unsupported() -> None:
    # 10.8.0.53 is an upstream in a config, not the resolver that answered a test.
    verdict = check_claim("the dig test was answered by the resolver at 10.8.0.53", lone_figures())
    assert verdict.verdict == "unsupported" and "in a record that says nothing of `dig`" in verdict.reason
    # It still shows where the figure is, so that a reader can see what it belongs to.
    assert verdict.pointer is not None and "forward . 10.8.0.53" in verdict.pointer.excerpt


def test_a_statement_of_several_facts_gives_each_fact_s_reason_once_and_the_first_pointer() -> None:
    both = check_statement(
        "Redis has rejected 183,344 connections, the node offset is about 94 seconds", lone_figures()
    )
    assert (both.verdict, both.reason) == (
        "supported",
        "`183,344` is in the result of redis__info, in a record that speaks of `rejected`; "
        "`94 seconds` is in the result of prom__query, in a record that speaks of `node`, `offset`",
    )
    assert both.pointer is not None and both.pointer.excerpt == "rejected_connections:183344"
    one_wrong = check_statement(
        "Redis has rejected 183,344 connections, the dig test was answered by 10.8.0.53", lone_figures()
    )
    assert one_wrong.verdict == "unsupported" and one_wrong.reason.startswith(
        "`10.8.0.53` is in the result of k8s__get"
    )
    assert one_wrong.pointer is not None and one_wrong.pointer.call_id == "c1"


def test_what_the_task_says_is_given() -> None:
    assert check_claim("the alert has fired since 13:52Z on checkout-api", evidence()).reason == "restates the task"


def test_a_supported_claim_points_at_its_record() -> None:
    verdict = check_claim("deploy dep-4940 of 4f2a9c1 started at 13:41Z", evidence())
    assert verdict.pointer is not None and verdict.pointer.call_id == "c0"
    assert DEPLOYS[verdict.pointer.start : verdict.pointer.end].startswith('{"id":"dep-4940"')
    assert verdict.pointer.excerpt.endswith('"status":"succeeded"}')


def test_local_grounding_reads_the_answers_supports_and_extra_fields() -> None:
    answer = {
        "summary": "ignored here",
        "reasoning": {"supports": ["dep-4940 shipped 4f2a9c1; p99 of /v1/cart reached 4.87s"]},
        "deploy_id": "dep-4940",
        "p99_seconds": 4.87,
        "rollback_revision": 4939,
    }
    claims = answer_claims(answer)
    assert [text for text, _ in claims] == [
        "dep-4940 shipped 4f2a9c1; p99 of /v1/cart reached 4.87s",
        "deploy_id: dep-4940",
        "p99_seconds: 4.87",
        "rollback_revision: 4939",
    ]
    verdicts = [check_statement(text, evidence(), anchors).verdict for text, anchors in claims]
    # One clause of the first is a decoy. A lone id or figure that is there is not evidently the thing
    # the field names: undecidable. 4939 is only part of an id (dep-4939), not a number printed.
    assert verdicts == ["unsupported", "undecidable", "undecidable", "unsupported"]


@pytest.mark.parametrize(
    ("quoted", "expected"),
    [
        ('[2] "id":"dep-4940","version":"4f2a9c1"', '"id":"dep-4940","version":"4f2a9c1"'),
        ("[6] pool configured   MAX_CONNS=4", "pool configured max_conns=4"),  # spacing and case
        (
            "[6] 13:44:03Z ERROR db acquire … status=503",
            "13:44:03Z ERROR db acquire: acquire timed out after 5s status=503",
        ),
    ],
)
def test_the_judges_quote_is_located_in_the_whole_result(quoted: str, expected: str) -> None:
    located = locate("some claim", quoted, evidence(), {2: "c0", 4: "c1", 6: "c2"})
    assert located.pointer is not None and located.pointer.found_by == "quote"
    assert located.pointer.excerpt == expected and not located.not_found


def test_a_paraphrase_is_located_by_its_anchors() -> None:
    located = locate("dep-4940 started at 13:41Z", "the deploy list shows it", evidence(), {})
    assert located.pointer is not None and located.pointer.found_by == "anchors"
    assert located.pointer.excerpt.startswith('{"id":"dep-4940"')


def test_evidence_that_is_in_no_tool_result_is_flagged() -> None:
    located = locate("the rollback target is 5c1d2e7", '[2] "version":"5c1d2e7"', evidence(), {2: "c0"})
    assert located.pointer is None and located.not_found


def test_evidence_quoted_from_the_task_is_not_flagged() -> None:
    located = locate("the alert", "CheckoutLatencyHigh on checkout-api", evidence(), {})
    assert located.pointer is None and not located.not_found


def test_a_hostile_answer_is_looked_up_within_bounds() -> None:
    answer = {
        "reasoning": {
            "supports": [
                3,
                None,
                {"x": 1},
                "\x00" * 10,
                "9" * 50_000,
                *[f"dep-{n} at 13:{n % 60:02d}Z" for n in range(5000)],
            ]
        },
        "nested": {"deep": [[["x"]]]},
        "flag": True,
        "nan": float("nan"),
    }
    claims = answer_claims(answer)
    assert len(claims) <= 100 and all(len(text) <= 2100 for text, _ in claims)
    for text, anchors in claims[:20]:
        assert check_statement(text, evidence(), anchors).verdict in ("supported", "unsupported", "undecidable")


def test_a_hostile_quote_is_located_without_failing() -> None:
    located = locate("claim", "[2] " + "(.*)+" * 5000 + "\x00\ud800", evidence(), {2: "c0"})
    assert located.pointer is None and located.not_found


CRONJOB = json.dumps(
    {
        "kind": "CronJob",
        "metadata": {"name": "billing-export"},
        "status": {"lastScheduleTime": "2024-06-11T13:00:00Z", "lastSuccessfulTime": "2024-06-10T13:00:00Z"},
    }
)


def test_a_time_that_belongs_to_another_named_time_does_not_back_the_claim() -> None:
    cronjob = one_result("k8s__get", CRONJOB, "Alert: billing-export is stale")
    misread = check_claim("the job was last scheduled at 2024-06-10T13:00:00Z", cronjob)
    assert (misread.verdict, misread.reason) == (
        "unsupported",
        "`2024-06-10T13:00:00Z` is the time of `last successful time`, but the claim speaks of `last schedul time`",
    )
    read_right = check_claim("the job was last scheduled at 2024-06-11T13:00:00Z", cronjob)
    assert read_right.verdict == "supported" and read_right.pointer is not None


def test_an_answer_s_own_fields_are_looked_up_as_exactly_what_they_say() -> None:
    answer = {
        "summary": "not a field to check",
        "reasoning": {"supports": "dep-4940 shipped 4f2a9c1"},  # one statement may be written as a string
        "max_conns": 4,
        "old_max_conns": 41,  # 40 is printed: a count is exactly this number, not one near it
        "p99_seconds": 4.87,
        "rev": 4940,  # only part of an id (dep-4940), not a number printed
        "idle_connections": 0,  # 0.21 and 0.84 are printed: 0 is none of them
        "ok": True,
        "none": None,
        "blank": "  ",
    }
    checked = [(text, check_statement(text, evidence(), anchors)) for text, anchors in answer_claims(answer)]
    assert [(text, verdict.verdict, verdict.reason) for text, verdict in checked] == [
        (
            "dep-4940 shipped 4f2a9c1",
            "supported",
            "`4f2a9c1`, `dep-4940` together in the result of deploys__list",
        ),
        (
            "max_conns: 4",
            "undecidable",
            "`4` is in the result of logs__search, but nothing else the claim names ties it to that record",
        ),
        ("old_max_conns: 41", "unsupported", "`41` is in no tool result"),
        (
            "p99_seconds: 4.87",
            "undecidable",
            "`4.87` is in the result of metrics__query_range, but nothing else the claim names ties it to that record",
        ),
        ("rev: 4940", "unsupported", "`4940` is in no tool result"),
        ("idle_connections: 0", "unsupported", "`0` is in no tool result"),
    ]


def test_a_lone_figure_s_reason_quotes_the_claim_s_words_as_written() -> None:
    elsewhere = check_claim("Certificates Expired Renewals Failed at 4.87s", evidence())
    assert (elsewhere.verdict, elsewhere.reason) == (
        "unsupported",
        "`4.87s` is in the result of metrics__query_range, but in a record that says nothing of "
        "`Certificates`, `Expired`, `Renewals`",
    )
    spoken = check_claim("Latency of Confirm reached 4.87s", evidence())
    assert (spoken.verdict, spoken.reason) == (
        "supported",
        "`4.87s` is in the result of metrics__query_range, in a record that speaks of `Confirm`",
    )


@pytest.mark.parametrize(
    ("claim", "verdict", "reason"),
    [
        ("only the checkout pods are affected", "undecidable", "no figure, time or id to look for"),
        ("the pool exhaustion caused the outage", "undecidable", "a causal link"),
        (
            "deploy 4f2a9c1 caused the latency spike",
            "undecidable",
            "its figures and ids are in the tool results, but a record cannot show a cause",
        ),
        # With nothing more specific, a count is what to look for.
        ("the pods restarted 7 times", "unsupported", "`7` is in no tool result"),
        ("p99 hit 6.3s at 14:02Z", "unsupported", "`14:02Z`, `6.3s` are in no tool result"),
        # What the task states is given, but a count it does not state is not.
        ("checkout-api has alerted since 13:52Z", "supported", "restates the task"),
        ("checkout-api has alerted since 13:52Z with 12 pods", "unsupported", "`12` is in no tool result"),
        (
            "dep-4940 shipped 4f2a9c1; p99 of /v1/cart reached 4.87s",
            "unsupported",
            "`4.87s`, `/v1/cart` are in the tool results, but not together in one record",
        ),
    ],
)
def test_each_verdict_says_why_in_words_the_trust_report_shows(claim: str, verdict: str, reason: str) -> None:
    checked = check_claim(claim, evidence())
    assert (checked.verdict, checked.reason) == (verdict, reason)


def test_a_figure_of_another_pod_than_the_one_the_task_names_does_not_back_a_claim_about_it() -> None:
    task = "Alert PoolSaturation on pod checkout-api-7f9c6d5b4-new01. Investigate."
    pod_alerted = StepEvidence(task, evidence().results)
    misread = check_claim("checkout-api-7f9c6d5b4-new01 runs with max_conns=40", pod_alerted)
    assert (misread.verdict, misread.reason) == (
        "unsupported",
        "`max_conns=40` is in the result of logs__search, but in a record about something else than "
        "`checkout-api-7f9c6d5b4-new01`",
    )
    read_right = check_claim("checkout-api-7f9c6d5b4-new01 runs with max_conns=4", pod_alerted)
    assert read_right.verdict == "supported" and read_right.pointer is not None
    assert read_right.pointer.excerpt.endswith("max_conns=4 pod=checkout-api-7f9c6d5b4-new01")


LAG = "\n".join(
    [
        "2024-06-11T13:40:00Z consumer group=orders-consumer lag=1204331",
        "2024-06-11T13:40:00Z consumer group=billing-consumer lag=5512",
        "2024-06-11T13:50:00Z consumer group=orders-consumer lag=88120",
        "2024-06-11T13:50:00Z consumer group=billing-consumer lag=5498",
    ]
)
NAMED_QUOTA = json.dumps(
    {
        "metadata": {"name": "compute-q1", "creationTimestamp": "2024-05-02T08:00:00Z"},
        "status": {"hard": {"limits.memory": "96Gi"}, "used": {"limits.memory": "93Gi"}},
    }
)


def lag_and_quota() -> StepEvidence:
    results = [ToolResult("c0", "kafka__lag", LAG, False, True), ToolResult("c1", None, NAMED_QUOTA, False, True)]
    return StepEvidence("Alert KafkaLag on orders. Investigate.", results)


@pytest.mark.parametrize(
    ("claim", "verdict", "reason"),
    [
        # Two figures of one kind may be two records of the same subject: each is looked up with it.
        (
            "orders-consumer lag fell from 1,204,331 to 88,120",
            "supported",
            "`1,204,331`, `88,120` together in the result of kafka__lag",
        ),
        (
            "billing-consumer lag fell from 1,204,331 to 88,120",
            "unsupported",
            "`1,204,331`, `88,120` are in the result of kafka__lag, but in a record about something else than "
            "`billing-consumer`",
        ),
        # A figure and a time are one observation: they must be in one record.
        ("orders-consumer lag was 1,204,331 at 13:40:00Z", "supported", None),
        (
            "orders-consumer lag was 1,204,331 at 13:50:00Z",
            "unsupported",
            "`13:50:00Z`, `1,204,331` are in the tool results, but not together in one record",
        ),
        # A tool without a name is still named in the reason.
        (
            "quota compute-q1 created 2024-05-02T08:00:00Z holds 96Gi of limits.memory",
            "supported",
            "`2024-05-02T08:00:00Z`, `96Gi`, `compute-q1` together in the result of a tool",
        ),
        # The record's time is right, but the figure is the value of the other field.
        (
            "quota compute-q1 created 2024-05-02T08:00:00Z has used 96Gi of limits.memory",
            "unsupported",
            "`96Gi` is the value of `hard limit memory`, but the claim speaks of `limit memory used` (93Gi)",
        ),
        (
            "limits.memory hard is 93Gi",
            "unsupported",
            "`93Gi` is the value of `limit memory used`, but the claim speaks of `hard limit memory` (96Gi)",
        ),
    ],
)
def test_figures_are_looked_up_in_the_records_they_belong_to(claim: str, verdict: str, reason: str | None) -> None:
    checked = check_claim(claim, lag_and_quota())
    assert checked.verdict == verdict, checked.reason
    if reason is not None:
        assert checked.reason == reason


def test_a_change_between_two_records_points_at_the_first() -> None:
    checked = check_claim("orders-consumer lag fell from 1,204,331 to 88,120", lag_and_quota())
    assert checked.pointer is not None and checked.pointer.found_by == "anchors"
    assert checked.pointer.excerpt == LAG.splitlines()[0]


def test_a_claim_in_a_record_too_long_to_show_points_at_the_part_that_holds_it() -> None:
    pods = [
        {
            "metadata": {"name": f"checkout-api-new0{n}", "annotations": {f"note-{k}": "x" * 60 for k in range(30)}},
            "status": {"phase": "Running", "restartCount": 7 - n, "startTime": f"2024-06-11T13:4{n}:03Z"},
        }
        for n in range(2)
    ]
    result = ToolResult("c0", "k8s__get", json.dumps({"items": pods}), False, True)
    checked = check_claim("restartCount=7 since its start at 2024-06-11T13:40:03Z", StepEvidence("Alert", [result]))
    assert checked.verdict == "supported" and checked.pointer is not None
    assert checked.pointer.found_by == "anchors"
    assert (
        checked.pointer.excerpt
        == '"status": {"phase": "Running", "restartCount": 7, "startTime": "2024-06-11T13:40:03Z"}'
    )


QUOTA_BY_KIND = json.dumps(
    {
        "status": {
            "hard": {"limits.memory": "96Gi", "requests.memory": "64Gi"},
            "used": {"limits.memory": "93Gi", "requests.memory": "96Gi"},
        }
    }
)
PARTITIONS = "\n".join(
    [
        "TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG",
        *(f"orders  {p}          {1000 + p}            {1003 + p}            3" for p in range(7)),
        "orders  7          1007            49919            48912",
    ]
)
ROLLOUTS = "REVISION  CHANGE-CAUSE\n35        image 1.4.1\n36        image 1.4.2\n37        image 1.5.0"


def more_evidence() -> StepEvidence:
    extra = [
        ToolResult("c5", "k8s__quota", QUOTA_BY_KIND, False, True),
        ToolResult("c6", "kafka__groups", PARTITIONS, False, True),
        ToolResult("c7", "k8s__rollout", ROLLOUTS, False, True),
    ]
    return StepEvidence(TASK, [*evidence().results, *extra])


@pytest.mark.parametrize(
    ("claim", "reason"),
    [
        # 96Gi is two fields' value: the claim's words say which one it means.
        ("requests.memory used is 96Gi", "`96Gi` together in the result of k8s__quota"),
        # A field's number or a quote names what it is: found, it is evidence on its own.
        ("partition 7 lags", "`partition 7` together in the result of kafka__groups"),
        ("rollout revision 37 is live", "`revision 37` together in the result of k8s__rollout"),
        ("'acquire timed out after' was logged", "`acquire timed out after` together in the result of logs__search"),
        # The pod's name ends its log line: still in that record.
        (
            "checkout-api-7f9c6d5b4-new01 hit 5s timeouts",
            "`5s`, `checkout-api-7f9c6d5b4-new01` together in the result of logs__search",
        ),
    ],
)
def test_what_names_a_value_ties_it_to_its_record(claim: str, reason: str) -> None:
    checked = check_claim(claim, more_evidence())
    assert (checked.verdict, checked.reason) == ("supported", reason)


def test_two_times_of_one_subject_may_be_two_records() -> None:
    checked = check_claim("orders-consumer lag reported from 13:40:00Z to 13:50:00Z", lag_and_quota())
    assert checked.verdict == "supported", checked.reason


def test_a_name_the_task_does_not_state_is_not_given() -> None:
    checked = check_claim("checkout-api has alerted since 13:52Z from eu-west", evidence())
    assert (checked.verdict, checked.reason) == ("unsupported", "`eu-west` is in no tool result")


def test_a_statement_whose_facts_are_all_undecidable_says_why_for_the_first() -> None:
    checked = check_statement("the slowest route reached 0.84s; the other reached 0.21s", evidence())
    assert (checked.verdict, checked.reason) == (
        "undecidable",
        "`0.84s` is in the result of metrics__query_range, but nothing else the claim names ties it to that record",
    )
    assert checked.pointer is not None and checked.pointer.excerpt.startswith(
        '{"metric": {"route": "/v1/checkout/confirm"}'
    )


def test_a_clause_without_a_figure_stays_with_the_one_before_it() -> None:
    statement = "dep-4940 shipped, max_conns=4, p99 reached 4.87s, which is high"
    assert clauses(statement, _CLAUSES) == ["dep-4940 shipped", "max_conns=4", "p99 reached 4.87s, which is high"]


def test_a_claim_s_words_leave_out_short_words_and_stopwords_in_any_case() -> None:
    assert claim_words("The DB hit its max of 95% connections") == {"max", "connection"}


DEPLOYMENTS = "\n".join(
    [
        "NAME           READY   UP-TO-DATE   AVAILABLE   AGE",
        "checkout-api   3/3     3            3            12d",
        "cart-api       1/4     4            1            40d",
        "search-api     2/2     2            2            7d",
        "web-api        1/1     1            1            3d",
    ]
)


@pytest.mark.parametrize(
    ("claim", "verdict", "reason"),
    [
        # The name that starts a row belongs to that row.
        ("checkout-api has been up for 12d", "supported", "`12d` together in the result of kubectl__get"),
        ("cart-api has been up for 40d", "supported", "`40d` together in the result of kubectl__get"),
        (
            "search-api has been up for 40d",
            "unsupported",
            "`40d` is in the result of kubectl__get, but in a record about something else than `search-api`",
        ),
        (  # the reason names three of them
            "cart-api search-api checkout-api web-api pods are all up for 7d",
            "unsupported",
            "`7d` is in the result of kubectl__get, but in a record about something else than "
            "`cart-api`, `search-api`, `checkout-api`",
        ),
    ],
)
def test_a_row_is_about_the_name_it_starts_with(claim: str, verdict: str, reason: str) -> None:
    deployments = one_result("kubectl__get", DEPLOYMENTS, "Alert: pods not ready")
    checked = check_claim(claim, deployments)
    assert (checked.verdict, checked.reason) == (verdict, reason)


KUBELET = "\n".join(
    [
        "2024-06-11T13:01:00Z kubelet pod cart-a evicted under memory pressure at 7.9Gi",
        "2024-06-11T13:02:00Z kubelet pod cart-b running at 3.1Gi",
        "2024-06-11T13:03:00Z kubelet pod cart-c running at 3.4Gi",
        "2024-06-11T13:04:00Z kubelet pod cart-d evicted under memory pressure at 7.2Gi",
        "2024-06-11T13:05:00Z kubelet pod cart-e running at 2.9Gi",
        "2024-06-11T13:06:00Z kubelet pod cart-f running at 3.0Gi",
    ]
)


@pytest.mark.parametrize(
    ("claim", "verdict", "reason"),
    [
        # `evicted` is said by two lines of six: it tells those from the rest.
        (
            "a pod was evicted at 7.9Gi",
            "supported",
            "`7.9Gi` is in the result of logs__search, in a record that speaks of `evicted`",
        ),
        # `running` is said by most lines: it ties the figure to none of them.
        (
            "a pod was running at 3.4Gi",
            "undecidable",
            "`3.4Gi` is in the result of logs__search, but nothing else the claim names ties it to that record",
        ),
    ],
)
def test_a_word_ties_a_figure_to_its_line_only_when_few_lines_say_it(claim: str, verdict: str, reason: str) -> None:
    kubelet = one_result("logs__search", KUBELET, "Alert: cart pods restarting")
    checked = check_claim(claim, kubelet)
    assert (checked.verdict, checked.reason) == (verdict, reason)


def sample(*pods: str) -> str:
    result = [
        {"metric": {"pod": pod}, "value": [1718114160, "4.21" if n == 0 else "0.37"]} for n, pod in enumerate(pods)
    ]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


ERRORS_QUERY = "promql=sum by (pod) (rate(http_errors_total[5m]))"


@pytest.mark.parametrize(
    ("pods", "asked", "verdict"),
    [
        (("cart-a",), ERRORS_QUERY, "supported"),
        (("cart-a", "cart-b"), ERRORS_QUERY, "unsupported"),
        (("cart-a",), 'promql=up{job="cart"}', "unsupported"),  # neither the sample nor its query says it
    ],
)
def test_what_a_query_asks_ties_its_only_sample_but_not_one_of_several(
    pods: tuple[str, ...], asked: str, verdict: str
) -> None:
    result = ToolResult("c0", "prom__query", sample(*pods), False, True, asked)
    checked = check_claim("errors reached 4.21/s", StepEvidence("Alert: cart errors", [result]))
    assert checked.verdict == verdict, checked.reason


@pytest.mark.parametrize(
    "claim", ["the billing-export job ran at 2024-06-11T13:00:00Z", "billing-export ran at 2024-06-10T13:00:00Z"]
)
def test_a_time_is_not_refuted_by_another_named_time_the_claim_does_not_name(claim: str) -> None:
    cronjob = one_result("k8s__get", CRONJOB, "Alert: billing-export is stale")
    checked = check_claim(claim, cronjob)
    assert checked.verdict == "supported", checked.reason


def test_a_lone_figure_is_looked_for_in_every_result_before_it_is_judged() -> None:
    dig = "2024-06-11T13:10:00Z dig test for checkout.shop.svc answered by 10.8.0.53 in 3 ms"
    results = [ToolResult("c1", "k8s__get", COREDNS, False, True), ToolResult("c2", "shell__run", dig, False, True)]
    checked = check_claim("the dig test was answered by the resolver at 10.8.0.53", StepEvidence("Alert", results))
    assert (checked.verdict, checked.reason) == (
        "supported",
        "`10.8.0.53` is in the result of shell__run, in a record that speaks of `dig`, `test`, `answered`",
    )


def test_a_claim_points_at_the_whole_record_it_is_in_wherever_that_is() -> None:
    def job(n: int) -> dict[str, object]:
        failed = n == 40
        status = {"phase": "Failed" if failed else "Succeeded", "exitCode": 137 if failed else 0}
        return {"id": f"job-{n:03d}", "status": {**status, "finishedAt": f"2024-06-11T{n % 24:02d}:{n:02d}:09Z"}}

    text = json.dumps({"items": [job(n) for n in range(50)]})
    jobs = one_result("k8s__get", text, "Alert: etl failing")
    checked = check_claim("the job exited with exitCode=137 at 2024-06-11T16:40:09Z", jobs)
    assert checked.verdict == "supported" and checked.pointer is not None
    assert checked.pointer.start > 2000  # far into the result, and still the whole record (its id with it)
    assert checked.pointer.excerpt == json.dumps(job(40))


def test_a_name_that_ends_the_result_still_belongs_to_its_row() -> None:
    pods = "\n".join(
        [
            "NAME      READY   STATUS    AGE   NODE",
            "cart-0    1/1     Running   12d   node-a",
            "cart-1    1/1     Running   40d   node-b",
            "cart-2    0/1     Pending   3d    node-c",
        ]
    )
    checked = check_claim(
        "a pod on node-c has been pending for 3d",
        one_result("kubectl__get", pods, "Alert: cart pods"),
    )
    assert (checked.verdict, checked.reason) == ("supported", "`3d` together in the result of kubectl__get")


def test_a_word_that_starts_every_line_ties_a_figure_to_none_of_them() -> None:
    lines = "\n".join(f"orders partition={p} lag={48912 if p == 7 else 3 + p}" for p in range(10))
    lag = one_result("kafka__lag", lines, "Alert: consumer lag")
    checked = check_claim("the orders backlog hit 12", lag)
    assert (checked.verdict, checked.reason) == (
        "undecidable",
        "`12` is in the result of kafka__lag, but nothing else the claim names ties it to that record",
    )
    # Five significant digits are specific enough: "orders" in every line does not say otherwise.
    specific = check_claim("the orders backlog hit 48,912", lag)
    assert (specific.verdict, specific.reason) == (
        "supported",
        "`48,912` is in the result of kafka__lag, and nothing there says otherwise",
    )


@pytest.mark.parametrize(
    ("task", "claim", "reason"),
    [
        (  # the claim's words as it wrote them, not their stems (`evict`)
            "Alert: cart pods restarting",
            "a pod was evicted at 3.4Gi",
            "`3.4Gi` is in the result of logs__search, but in a record about something else than `evicted`",
        ),
        (  # a name the task gave
            "Alert CartLatencyHigh on route /v1/cart. Investigate.",
            "the /v1/cart p99 reached 4.87s",
            "`4.87s` is in the result of metrics__query_range, but in a record about something else than `/v1/cart`",
        ),
    ],
)
def test_a_record_about_something_else_is_named_in_the_claim_s_own_words(task: str, claim: str, reason: str) -> None:
    results = [*evidence().results, ToolResult("c9", "logs__search", KUBELET, False, True)]
    checked = check_claim(claim, StepEvidence(task, results))
    assert (checked.verdict, checked.reason) == ("unsupported", reason)


INCIDENTS = json.dumps(
    {
        "incidents": [{"incident_number": 48211, "status": "triggered", "title": "checkout 5xx"}],
        "limit": 25,
        "offset": 0,
        "total": 143,
    },
    separators=(",", ":"),
)
POD = "\n".join(
    [
        "Name:             redis-session-0",
        "Namespace:        sessions",
        "Start Time:       Sat, 07 Dec 2024 09:14:02 +0000",
        "Containers:",
        "  redis:",
        "    State:          Running",
        "    Ready:          True",
        "    Restart Count:  7",
        "  sentinel:",
        "    State:          Running",
        "    Ready:          True",
        "    Restart Count:  0",
        "Events:",
        "  Type     Reason   Age                 From     Message",
        "  ----     ------   ----                ----     -------",
        "  Warning  BackOff  24m (x9 over 45m)   kubelet  Back-off restarting failed container redis",
    ]
)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("PagerDuty has 143 open incidents", "supported"),  # the list's total
        ("PagerDuty only has 25 open incidents", "unsupported"),  # 25 is the page size, not a count of incidents
        ("redis-session-0 has restarted 7 times", "supported"),  # its Restart Count, under its Name
        ("redis-session-0 has restarted 9 times", "supported"),  # the BackOff event's (x9 over 45m)
        ("redis-session-0 has restarted 2 times", "unsupported"),
    ],
)
def test_a_small_count_is_found_only_beside_what_it_counts(claim: str, verdict: str) -> None:
    results = [
        ToolResult("c0", "pagerduty__list_incidents", INCIDENTS, False, True),
        ToolResult("c1", "k8s__describe", POD, False, True),
    ]
    checked = check_claim(claim, StepEvidence("Alert: sessions failing", results))
    assert checked.verdict == verdict, checked.reason


HPA_SERIES = json.dumps(
    {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"__name__": "kube_hpa_spec_min_replicas", "hpa": "cart"}, "values": [[1718113800, "6"]]},
                {"metric": {"__name__": "kube_hpa_spec_max_replicas", "hpa": "cart"}, "values": [[1718113800, "10"]]},
            ],
        },
    }
)
FAILOVER = 'level=warn msg="redis failover detected" old_master=redis-geo-0.redis-geo:6379 new_master=redis-geo-2'


@pytest.mark.parametrize(
    ("claim", "verdict", "reason"),
    [
        ("the cart HPA allows at least 6 replicas, its minimum", "supported", None),
        (
            "the cart HPA is capped at 6 replicas, its maximum",
            "unsupported",
            "`6` is named `min` where it is, but the claim says `capped`",
        ),
        ("after the failover redis-geo-2 became master", "supported", None),
        (
            "after the failover redis-geo-0 became master",
            "unsupported",
            "`redis-geo-0` is named `old` where it is, but the claim says `became`",
        ),
    ],
)
def test_a_value_named_with_the_opposite_qualifier_does_not_back_the_claim(
    claim: str, verdict: str, reason: str | None
) -> None:
    results = [
        ToolResult("c0", "prom__query_range", HPA_SERIES, False, True),
        ToolResult("c1", "logs__search", FAILOVER, False, True),
    ]
    checked = check_claim(claim, StepEvidence("Alert: cart degraded", results))
    assert checked.verdict == verdict, checked.reason
    if reason is not None:
        assert checked.reason == reason


def test_a_name_that_reads_as_an_identifier_is_looked_for_when_the_claim_has_nothing_else() -> None:
    webhooks = '{"items":[{"name":"pod-policy.example.io","failurePolicy":"Fail"}]}'
    results = [ToolResult("c0", "k8s__get", webhooks, False, True)]
    evidence_of = StepEvidence("Alert: pods not created", results)
    assert check_claim("the failing webhook is pod-policy.example.io", evidence_of).verdict == "supported"
    refuted = check_claim("the failing webhook is pod-guard.example.io", evidence_of)
    assert (refuted.verdict, refuted.reason) == ("unsupported", "`pod-guard.example.io` is in no tool result")
    # A name in passing with nothing else to look for is still not decided.
    assert check_claim("only checkout-api is affected", evidence_of).verdict == "undecidable"


DEPLOY_LIST = json.dumps(
    {
        "deploys": [
            {
                "deploy": f"dep-{4930 + n}",
                "sha": sha,
                "deployed_at": f"2024-06-1{n}T0{n}:1{n}:0{n}Z",
                "note": f"deploy replicas={10 + n} via 'helm upgrade step {n}'",
                "duration_ms": 4000 + 111 * n,
            }
            for n, sha in enumerate(
                ["7d1e0c93b4f2a8e61c05d9b7a3e4f8c2d1b60a57", "3e91f0a7c2d4b85e6f1a09d3c7b2e4f6a8d0c1b9"]
            )
        ]
    }
)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("the deploy shipped 7d1e0c9", "supported"),  # a hash
        ("the deploy ran with replicas=11", "supported"),  # a key=value
        ("the deploy was dep-4931", "supported"),  # an id with digits
        ("the deploy ran 'helm upgrade step 1'", "supported"),  # a quote
        ("the deploy happened at 01:11Z", "supported"),  # a time to the minute
        ("the deploy happened on 11 June", "undecidable"),  # a date alone: every deploy has one
        ("the deploy took 4,111 ms", "supported"),  # four significant digits
        ("the deploy took about 4.1 s", "undecidable"),  # two: a round figure
    ],
)
def test_a_specific_value_alone_in_a_record_like_its_siblings_is_backed_and_a_vague_one_undecided(
    claim: str, verdict: str
) -> None:
    deploys = one_result("deploys__list", DEPLOY_LIST, "Alert: checkout errors")
    checked = check_claim(claim, deploys)
    assert checked.verdict == verdict, checked.reason
    assert checked.pointer is not None and checked.pointer.call_id == "c0"  # where it was found, either way


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("the config has the key discount_engin_url", "supported"),  # an underscore makes an identifier
        ("the Ingress names the secret partner-portal-tls", "supported"),  # so do two hyphens
        ("the dashboard has uid pay-slo", "undecidable"),  # one hyphen reads as a name in passing
    ],
)
def test_a_name_is_looked_for_as_an_identifier_by_its_punctuation(claim: str, verdict: str) -> None:
    text = '{"config":{"discount_engin_url":"http://x"},"tls":[{"secretName":"partner-portal-tls"}],"uid":"pay-slo"}'
    checked = check_claim(claim, one_result("k8s__get", text, "Alert"))
    assert checked.verdict == verdict, checked.reason


def test_a_claim_that_restates_the_task_is_checked_for_the_figure_it_adds() -> None:
    task = "Alert CartErrors on cart-api since 13:52Z."
    evidence_of = one_result("logs__search", "13:52:10 cart-api errors=9", task)
    assert check_claim("cart-api errors since 13:52Z", evidence_of).verdict == "supported"
    added = check_claim("cart-api errors since 13:52Z peaked at 12", evidence_of)
    assert (added.verdict, added.reason) == ("unsupported", "`12` is in no tool result")


def test_a_count_is_looked_for_in_a_bounded_number_of_places() -> None:
    # Each place of a small number costs a look at its field, and a hostile answer may count many
    # things in a result of thousands of small numbers: only the first places of each are looked at.
    padding = "\n".join(f"worker-{n} queue={n % 10}" for n in range(MAX_COUNTED_PLACES * 10))
    late = f"{padding}\nRestart Count:  3\n"
    early = f"Restart Count:  3\n{padding}\n"
    claim = "the pod restarted 3 times"
    for text, verdict in ((early, "supported"), (late, "unsupported")):
        checked = check_claim(claim, one_result("k8s__describe", text, "Alert"))
        assert checked.verdict == verdict, checked.reason


BACKOFF_EVENT = json.dumps(
    {
        "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "cart-7f9c6d5b4-x2kqp"},
        "firstTimestamp": "2024-06-11T13:02:10Z",
        "lastTimestamp": "2024-06-11T13:41:07Z",
        "count": 14,
    }
)
LATENCIES = "MIN_LATENCY   MAX_LATENCY   ROUTE\n120ms         480ms         /v1/cart\n"


@pytest.mark.parametrize(
    ("result", "backed", "misread", "reason"),
    [
        (  # a claim's small words count as qualifiers: "first seen" is not a lastTimestamp
            BACKOFF_EVENT,
            "the BackOff was first seen at 13:02Z",
            "the BackOff was first seen at 13:41Z",
            "`13:41Z` is named `last` where it is, but the claim says `first`",
        ),
        (  # a value that starts its table row is named by its column
            LATENCIES,
            "the maximum latency of /v1/cart was 480ms",
            "the maximum latency of /v1/cart was 120ms",
            "`120ms` is named `min` where it is, but the claim says `maximum`",
        ),
    ],
    ids=["first-last", "table-column"],
)
def test_a_qualifier_is_read_from_every_word_and_every_kind_of_name(
    result: str, backed: str, misread: str, reason: str
) -> None:
    evidence_of = one_result("tool__read", result, "Alert: cart")
    assert check_claim(backed, evidence_of).verdict == "supported"
    refuted = check_claim(misread, evidence_of)
    assert (refuted.verdict, refuted.reason) == ("unsupported", reason)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("the policy webhook that fails is pod-policy-2.example.io", "supported"),  # an id with digits
        ("the policy webhook that fails is pod-policy.example.io", "undecidable"),  # a name: which one is meant?
    ],
)
def test_a_lone_name_stands_alone_only_when_it_is_an_id_with_digits(claim: str, verdict: str) -> None:
    webhooks = json.dumps(
        {
            "items": [
                {"name": "pod-policy.example.io", "failurePolicy": "Fail"},
                {"name": "pod-policy-2.example.io", "failurePolicy": "Fail"},
                {"name": "img-policy.example.io", "failurePolicy": "Ignore"},
            ]
        }
    )
    checked = check_claim(claim, one_result("k8s__get", webhooks, "Alert"))
    assert checked.verdict == verdict, checked.reason


def test_a_claims_verdict_does_not_depend_on_the_claims_checked_before_it() -> None:
    # "94 seconds" is not a measured 94.18262; "about 94 seconds" is. Both write the figure alike, and
    # the first one looked up must not decide what the second one finds.
    uptime = '{"node": "ip-10-1-2-3", "uptime": 94.18262}'

    def step() -> StepEvidence:
        return one_result("node__status", uptime, "Alert NodeClockSkew")

    alone = check_claim("the node ran 94 seconds", step())
    shared = step()
    assert check_claim("the node ran about 94 seconds", shared).verdict == "supported"
    after = check_claim("the node ran 94 seconds", shared)
    assert alone.verdict == after.verdict == "unsupported"


CHANGES = json.dumps(
    {
        "deploys": [
            {
                "id": 3391,
                "service": "shipment-tracker",
                "changes": [
                    {"path": "values.yaml", "key": "resources.limits.cpu", "from": "2", "to": "500m"},
                    {"path": "values.yaml", "key": "spec.replicas", "from": "3", "to": "6"},
                ],
            }
        ]
    },
    indent=2,
)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("shipment-tracker's CPU limit is now 500m", "supported"),
        ("shipment-tracker's CPU limit was 2 before", "supported"),
        # A value under "to" or "from" is named by the key its change names: 500m is the limit.
        ("shipment-tracker requests 500m CPU", "unsupported"),
        ("shipment-tracker's CPU request was 2 before", "unsupported"),
    ],
)
def test_a_changed_value_is_named_by_the_key_its_change_names(claim: str, verdict: str) -> None:
    checked = check_claim(claim, one_result("deploys__list", CHANGES, "Alert KafkaLagHigh"))
    assert checked.verdict == verdict, checked.reason


HPA_DESCRIBED = """Name:                                                  search-api
Namespace:                                             search
Reference:                                             Deployment/search-api
Min replicas:                                          6
Max replicas:                                          30
Deployment pods:                                       6 current / 6 desired
"""


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("the HPA max is 30", "supported"),
        # `Max replicas:` names the value with both its words, as kubectl describe writes a field.
        ("the HPA min is 30", "unsupported"),
        ("the HPA min is 6", "supported"),
    ],
)
def test_a_field_named_in_words_names_its_value_with_all_of_them(claim: str, verdict: str) -> None:
    checked = check_claim(claim, one_result("k8s__describe", HPA_DESCRIBED, "Alert"))
    assert checked.verdict == verdict, checked.reason


CERTIFICATE_DESCRIBED = """Status:
  Conditions:
    Last Transition Time:  2024-07-04T00:12:44Z
    Message:               Renewing certificate as renewal was scheduled at 2024-07-04 00:12:44 +0000 UTC
    Reason:                Renewing
    Type:                  Issuing
  Not After:               2024-08-03T00:12:44Z
  Renewal Time:            2024-07-04T00:12:44Z
"""


def test_a_time_said_twice_in_a_record_backs_the_claim_where_its_name_fits() -> None:
    # The first place the date is printed is the condition's transition; the message and the renewal
    # time say it too, and they are what the claim speaks of.
    step = one_result("k8s__describe", CERTIFICATE_DESCRIBED, "Alert")
    checked = check_claim("renewal was scheduled for 2024-07-04", step)
    assert checked.verdict == "supported", checked.reason


@pytest.mark.timeout(15)
def test_a_result_that_prints_one_figure_two_hundred_thousand_times_is_checked_within_bounds() -> None:
    # Which field a figure is the value of is read at its first places, not at every one of them.
    step = one_result("metrics__dump", "1," * 200_000, "Alert")
    for claim in ("1,1,1 were seen", "the error ratio was 1%", "the limit is 1Mi", "the minimum is 1"):
        assert check_statement(claim, step).verdict in ("supported", "unsupported", "undecidable")


RECORDING_RULES = json.dumps(
    {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {
                    "metric": {"__name__": "slo:checkout_errors:ratio_rate5m", "service": "checkout-api"},
                    "value": [1729075020, "0.0012164502164502165"],
                },
                {
                    "metric": {"__name__": "slo:checkout_errors:ratio_rate1h", "service": "checkout-api"},
                    "value": [1729075020, "0.0004391"],
                },
            ],
        },
    }
)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        # A recording rule's name ends with the window it was computed over (`ratio_rate5m`).
        ("checkout-api's 5m error ratio is about 0.12%", "supported"),
        ("checkout-api's 1h error ratio is about 0.04%", "supported"),
        ("checkout-api's 1h error ratio is about 0.12%", "unsupported"),
        ("checkout-api's 30m error ratio is about 0.12%", "unsupported"),
    ],
)
def test_a_recording_rules_window_is_read_from_its_name(claim: str, verdict: str) -> None:
    checked = check_claim(claim, one_result("prom__query", RECORDING_RULES, "Alert CheckoutErrorBudgetBurn"))
    assert checked.verdict == verdict, checked.reason


HPAS = json.dumps(
    [
        {"hpa": "search-api", "max_replicas": 30, "min_replicas": 4},
        {"hpa": "quote-api", "min_replicas": 30, "max_replicas": 40},
    ],
    indent=2,
)


def test_a_figure_is_named_where_it_is_in_its_record_not_where_another_record_prints_it() -> None:
    # search-api's max is 30, quote-api's min is 30: quote-api's max is 40, not 30.
    step = one_result("k8s__hpas", HPAS, "Alert HPAMaxedOut")
    assert check_claim("quote-api's max replicas is 30", step).verdict == "unsupported"
    assert check_claim("quote-api's min replicas is 30", step).verdict == "supported"
    assert check_claim("search-api's max replicas is 30", step).verdict == "supported"


def test_each_of_two_figures_must_be_in_a_record_of_the_subject() -> None:
    # 1,204,331 is orders-consumer's; 5,498 is billing-consumer's, not orders-consumer's.
    checked = check_claim("orders-consumer lag fell from 1,204,331 to 5,498", lag_and_quota())
    assert checked.verdict == "unsupported", checked.reason


@pytest.mark.parametrize(
    "hostile",
    [f"JAVA_OPTS=-Xmx{'9' * 5000}g", f"slo:errors:ratio_rate{'9' * 5000}m", f"-XX:MaxMetaspaceSize={'7' * 4400}m"],
    ids=["jvm-size", "rule-window", "metaspace"],
)
def test_a_figure_of_thousands_of_digits_in_a_tool_result_is_read_without_failing(hostile: str) -> None:
    # Python refuses to turn more than 4,300 digits into an integer: such a figure is no size or window.
    step = one_result("k8s__get", f"env: {hostile}\nheap: 8g", "Alert")
    for claim in ("the heap is 8 GiB", "the 5m error ratio is 0.1%", "JAVA_OPTS sets -Xmx8g"):
        assert check_claim(claim, step).verdict in ("supported", "unsupported", "undecidable")


def test_a_judges_quote_naming_an_entry_of_thousands_of_digits_is_located_without_failing() -> None:
    located = locate("claim", f"[{'9' * 5000}] deploy 5c1d2e7", evidence(), {2: "c0"})
    assert located.pointer is None or located.pointer.call_id == "c0"
