"""Anchors: what a statement says, found in tool output however the tool wrote it."""

from __future__ import annotations

import pytest

from vectorstep.grounding.anchors import answer_statements, statement_anchors
from vectorstep.grounding.finding import ResultIndex
from vectorstep.grounding.timestamps import find_moments, same_moment


def found(claim: str, text: str) -> bool:
    """Every hard anchor of `claim` is somewhere in `text`."""
    anchors = [anchor for anchor in statement_anchors(claim) if anchor.hard]
    assert anchors, f"no hard anchor in {claim!r}"
    index = ResultIndex(text)
    return all(index.find(anchor) for anchor in anchors)


@pytest.mark.parametrize(
    ("claim", "text"),
    [
        ("the error ratio is 4.2%", '{"value":[1718113320,"0.04213"]}'),
        ("error ratio about 4%", "ratio=0.0412"),
        ("limit 512Mi", '"memory": 536870912'),
        ("limit 512Mi", "Limits:\n  memory: 512Mi"),
        ("heap at ~1.99GB", "old_gen_used_bytes 1991245824"),
        ("old gen 1.99e9 bytes", "used=1991245824"),
        ("p99 reached 4.87s", '[1718114160,"4.871936507936508"]'),
        ("p99 of 1.5s", '"duration_ms": 1500'),
        ("took 1.5s", "took 1500ms"),
        ("ran for 9m42s", "elapsed 582s"),
        ("ran for 9m42s", '{"elapsed": 582}'),  # written to the second: specific enough to find bare
        ("ran for almost 10 minutes", "elapsed 9m42s"),
        ("lag of 1.2M messages", "LAG 1204331"),
        ("lag of 1,204,331", "lag=1204331"),
        ("1.9k/s rejected", '"1972.4"'),
        ("deploy 4f2a9c1", '"sha": "4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f"'),
        ("commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f", "deployed 4f2a9c1 at noon"),
        ("ticket OPS-1234", '{"key":"OPS-1234"}'),
        ("max_conns=4 after the deploy", "max_conns: 4 source=default"),
        ("revision 37 is the target", "REVISION  CHANGE-CAUSE\n36        a\n37        b"),
        ("partition 7 lags", '{"partition": 7, "lag": 48912}'),
        ("the outage lasted 1h30m", '"outage_seconds": 5400'),
        ("the outage lasted 1h30m", '"outage_seconds": 5430'),  # written to the minute
        ("down for 2h", '"downtime": "7200s"'),
        ("p99 between 200-300ms", '{"p99_ms": [200, 300]}'),
        ("3.1-4.9% of requests failed", '{"low": 0.031, "high": 0.049}'),
        ("30–38/s rejected", "rejected 30/s, then 38/s"),
        ("an 8 GiB heap", '"ES_JAVA_OPTS": "-Xms8g -Xmx8g"'),  # the JVM's sizes are glued to their flag
        ("Metaspace capped at 256Mi", "-XX:MaxMetaspaceSize=256m"),
        ("thread stacks of 512 KiB", "-Xss512k"),
        ("an XID age of about 1.19 billion", " billing   | 1190224117"),
        ("about 6.8 days of validity remain", '[1730462400,"6.7599720138890875"]'),  # a metric in days
        ("the job runs every 15 minutes", 'schedule: "*/15 * * * *"'),
        ("a 90-day password lifetime", "VALID UNTIL = rotation date + 90 days"),
        ("expired at Aug 3 00:12:44 2024 GMT", "notAfter=Aug  3 00:12:44 2024 GMT"),  # openssl's format
        ("calico picked 192.168.50.14", "on interface ens4f1: 192.168.50.14/24"),  # with its prefix length
        ("tokens signed with kid q7Zt2mR9", '{"reason":"unknown_kid","kid":"q7Zt2mR9"}'),
        ("the change came in PR #214", '"html_url": "https://github.com/acme/charts/pull/214"'),
    ],
    ids=lambda value: value[:24],
)
def test_a_value_is_found_in_the_form_the_tool_wrote(claim: str, text: str) -> None:
    assert found(claim, text)


@pytest.mark.parametrize(
    ("claim", "text"),
    [
        ("p99 reached 4.87s", '[1718114160,"4.91"]'),  # another figure
        ("limit 512Mi", '"memory": 268435456'),
        ("route /v1/cart", '"route":"/v1/cart/items"'),  # a longer name is another name
        ("deploy 4f2a9c1", '"sha": "4f2a9c2e8b7d"'),
        ("max_conns=4", "max_conns=40"),
        ("revision 37 is the target", "REVISION  CHANGE-CAUSE\n36        a\n38        37 fixes"),
        ("partition 7 lags", '{"partition": 3, "lag": 7}'),
        ("took 30s", "retries: 30"),  # a short figure with a unit is not any bare 30
        ("the outage lasted 1h30m", '"outage_seconds": 5460'),
        ("ran for 9m42s", "elapsed 583s"),  # written to the second
        ("p99 between 200-300ms", '{"p99_ms": [200, 310]}'),  # both ends are claimed
        ("an 8 GiB heap", "-Xmx4g"),
        ("an 8 GiB heap", "-Xmx8"),  # a JVM size without its letter is bytes
        ("3.1-4.9% of requests failed", '{"low": 0.031, "high": 0.059}'),
        ("using about 1.8 GiB", "memory: 2Gi"),  # "about" stays within the last digit written
        ("about 62.37% requested", '"totalEntriesReturned":62'),
    ],
    ids=lambda value: value[:24],
)
def test_a_similar_but_different_value_is_not_found(claim: str, text: str) -> None:
    assert not found(claim, text)


@pytest.mark.parametrize(
    ("claimed", "printed"),
    [
        ("13:41Z", "2024-06-11T13:41:07Z"),
        ("13:41 UTC", "2024-06-11T15:41:07+02:00"),
        ("13:41", "1718113267"),  # epoch seconds
        ("13:41:07", "1718113267123"),  # milliseconds
        ("13:41", '"1718113267000000000"'),  # Loki's nanoseconds
        ("Jun 11 13:41", "Jun 11 13:41:07 node-3 kubelet[812]: ..."),
        ("13:41:07 UTC", '10.1.2.3 - - [11/Jun/2024:13:41:07 +0000] "GET / HTTP/1.1"'),
        ("13:41", "I0611 13:41:07.123456    1 kubelet.go:2412] PLEG is not healthy"),
        ("on 11 June", "2024-06-11T09:00:00Z"),
        ("2024-06-11", "Tue, 11 Jun 2024 13:41:07 GMT"),
    ],
)
def test_a_moment_is_the_same_moment_in_every_format(claimed: str, printed: str) -> None:
    claim = find_moments(claimed)[0]
    assert any(same_moment(claim, moment) for moment in find_moments(printed))


@pytest.mark.parametrize(
    ("claimed", "printed"),
    [
        ("13:41Z", "2024-06-11T13:42:07Z"),
        ("13:41 UTC", "2024-06-11T13:41:07+02:00"),  # that is 11:41 UTC
        ("Jun 12 13:41", "Jun 11 13:41:07 node-3 kubelet[812]: ..."),
        ("13:41:08", "2024-06-11T13:41:07Z"),
    ],
)
def test_another_moment_is_not_the_same(claimed: str, printed: str) -> None:
    claim = find_moments(claimed)[0]
    assert not any(same_moment(claim, moment) for moment in find_moments(printed))


def test_a_deployment_is_found_in_its_pods_names_but_not_in_another_deployments() -> None:
    name = next(anchor for anchor in statement_anchors("checkout-api was OOMKilled") if anchor.kind == "name")
    assert ResultIndex("checkout-api-7f9c6d5b4-x2kqp OOMKilled").find(name)
    assert not ResultIndex("checkout-api-canary OOMKilled").find(name)


def test_a_dotted_name_is_not_found_in_a_longer_dotted_name_but_a_host_is_in_its_fqdn() -> None:
    queue = next(anchor for anchor in statement_anchors("notifications.email is stuck") if anchor.kind == "name")
    assert not ResultIndex('"name": "notifications.email.retry"').find(queue)
    assert ResultIndex('"name": "notifications.email", "vhost": "/"').find(queue)
    host = next(anchor for anchor in statement_anchors("ip-10-9-2-3 went NotReady") if anchor.kind == "name")
    assert ResultIndex("Node ip-10-9-2-3.eu-west-1.compute.internal unremovable").find(host)


def test_counts_and_words_are_soft_figures_and_ids_are_hard() -> None:
    anchors = {
        anchor.text: anchor for anchor in statement_anchors("checkout-7d9f restarted 6 times at 13:41Z, 4.2% errors")
    }
    assert anchors["checkout-7d9f"].hard and anchors["13:41Z"].hard and anchors["4.2%"].hard
    assert not anchors["6"].hard  # a short count matches everywhere; it only tells records apart
    assert "3x" not in {anchor.text for anchor in statement_anchors("latency rose 3x")}  # a ratio the agent computed


@pytest.mark.parametrize(
    "hostile",
    ["\x00" * 50, "9" * 5000, "1e999999 " * 100, "𝟙𝟚𝟛:45Z \ud800", "((((" * 2000, "revision " * 3000 + "7"],
    ids=["nul", "digits", "exponents", "unicode", "brackets", "keywords"],
)
def test_hostile_statements_and_results_are_read_without_failing(hostile: str) -> None:
    for anchor in statement_anchors(hostile):
        ResultIndex(hostile).find(anchor)


def test_a_count_keeps_what_it_counts_and_a_rate_s_window_is_no_figure() -> None:
    counts = {anchor.text: anchor.counted for anchor in statement_anchors("PagerDuty has 25 open incidents")}
    assert counts["25"] == ("open", "incident")
    times = [anchor for anchor in statement_anchors("the pod restarted 3 times") if anchor.kind == "number"]
    assert [(anchor.text, anchor.counted) for anchor in times] == [("3", ("time", "restart"))]
    spelled = [anchor for anchor in statement_anchors("Six nodes fail scheduling") if anchor.kind == "number"]
    assert [(anchor.text, anchor.hard) for anchor in spelled] == [("6", False)]
    windowed = statement_anchors("rejections reached about 3.4k per 10 minutes")
    assert [anchor.text for anchor in windowed if anchor.kind == "number"] == ["3.4k"]
    assert "5xx" in {anchor.text for anchor in statement_anchors("5xx responses rose")}


def test_names_are_read_without_the_punctuation_around_them() -> None:
    anchors = statement_anchors(
        "errors on /v1/cart/ and /healthz/live after the push to checkout-api. from api.v2: node n-1"
    )
    assert [(anchor.text, anchor.hard) for anchor in anchors if anchor.kind == "name"] == [
        ("/v1/cart", True),  # a path is specific, with digits or without
        ("/healthz/live", True),
        ("api.v2", True),
        ("n-1", True),
        ("checkout-api", False),  # a plain name only tells records apart
    ]
    # A figure glued to punctuation is still a figure, not a name.
    assert not [anchor for anchor in statement_anchors("p99 (confirm):4.87s") if anchor.kind == "name"]


def test_an_answer_states_its_fields_and_reasoning_but_not_its_bookkeeping() -> None:
    answer = {
        "summary": "pool exhausted",
        "confidence": 0.9,
        "proceed": True,
        "raw_response": "the whole reply",
        "artifacts": {"patch": "diff --git"},
        "reasoning": {"supports": ["max_conns=4", "503s at 13:44Z"], "note": "new pods", "claims": [{"count": 3}]},
        "deploy_id": "dep-4940",
        "revision": 42,
        "ratio": 0.5,
        "rolled_back": False,
        "owner": None,
        "pods": ["checkout-api-new01", 7],
        "limits": {"memory": "512Mi"},
    }
    assert answer_statements(answer) == [
        "pool exhausted",
        "max_conns=4",
        "503s at 13:44Z",
        "note: new pods",
        "count: 3",
        "deploy_id: dep-4940",
        "revision: 42",
        "ratio: 0.5",
        "checkout-api-new01",
        "memory: 512Mi",
    ]


def test_a_unit_in_a_column_of_its_own_is_the_value_s_unit() -> None:
    settings = " name                        | setting | unit\n max_standby_streaming_delay | 30000   | ms\n shared_buffers | 16384 | 8kB\n"
    assert found("max_standby_streaming_delay is 30s", settings)
    assert found("shared_buffers is 128MB", settings)
    assert not found("the delay is 30000s", settings)


@pytest.mark.parametrize(
    ("claim", "text", "expected"),
    [
        ("about 430 requests queued", "queued=431", True),  # within tens
        ("about 430 requests queued", "queued=441", False),
        ("about 100 requests queued", "queued=108", True),  # within a tenth, not a whole hundred
        ("about 100 requests queued", "queued=150", False),
        ("about 2000 requests queued", "queued=2130", True),
        ("about 2000 requests queued", "queued=2400", False),
        ("took about 1.50s", "took 1.504s", True),  # zeros after the point are written on purpose
        ("took about 1.50s", "took 1.58s", False),
        ("errors fell to about 0", "errors=0", True),
        ("errors fell to about 0", "errors=7", False),  # "0" is one digit, not a trailing zero
    ],
    ids=lambda value: str(value)[:28],
)
def test_an_approximate_figure_is_within_a_step_of_its_last_significant_digit(
    claim: str, text: str, expected: bool
) -> None:
    figures = [anchor for anchor in statement_anchors(claim) if anchor.kind == "number"]
    assert figures, claim
    index = ResultIndex(text)
    assert all(index.find(anchor) for anchor in figures) is expected


@pytest.mark.parametrize(
    ("claim", "counted"),
    [
        ("6 node(s) had volume node affinity conflict", ("node", "volum")),  # as a scheduler writes it
        ("3 of the pods are ready", ("pod",)),  # small words are not what is counted
        ("12 ssh keys were rotated", ("ssh", "key")),
        ("Restarted 3 times before noon", ("time", "restart")),  # the verb at the very start
        ("the backlog hit 12", ()),  # nothing named: any 12
    ],
)
def test_a_count_reads_what_it_counts_from_the_words_beside_it(claim: str, counted: tuple[str, ...]) -> None:
    found = [anchor for anchor in statement_anchors(claim) if anchor.kind == "number"]
    assert [anchor.counted for anchor in found] == [counted]
