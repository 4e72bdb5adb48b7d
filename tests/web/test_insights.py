"""Insights over a real service: the figures equal what the run records say, errors are 4xx that say why,
a token sees only its teams, and the pages work in a real Chromium (docs/insights.md)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import ALICE, BOB, LiveService, alert, build_project, wait_for
from vectorstep.domain.status import RunStatus

VIEWER = "viewer-token-pay-000000"  # viewer, team pay only


@dataclass(frozen=True)
class History:
    runs: list[dict[str, Any]]  # the run records the API answers, each with its steps

    @property
    def steps(self) -> list[dict[str, Any]]:
        return [step for run in self.runs for step in run["steps"]]

    def of(self, pipeline: str) -> list[dict[str, Any]]:
        return [run for run in self.runs if run["pipeline"] == pipeline]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    root = tmp_path_factory.mktemp("insights")
    tokens = [
        {"name": "alice", "token": ALICE, "role": "admin", "team": "shop"},
        {"name": "bob", "token": BOB, "role": "admin"},
        {"name": "val", "token": VIEWER, "role": "viewer", "teams": ["pay"]},
    ]
    project = build_project(root / "project", f"sqlite:///{root / 'vectorstep.db'}", auth={"tokens": tokens})
    server = LiveService(project.config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def history(live: LiveService) -> History:
    """Two escalated incidents (tools, verifier, judge, check), an approval decided by a person, a sandbox run."""
    ids = []
    with live.client() as client:
        for fingerprint in ("insight-one", "insight-two"):
            ids.append(
                client.post("/webhook?source=alertmanager", json=alert(fingerprint=fingerprint)).json()["run_id"]
            )
        approval_run = client.post("/api/pipelines/approve-me/run", json={"summary": "payments down"}).json()["run_id"]
        wait_for(client, approval_run, until=("waiting",))
        pending = next(a for a in client.get("/api/approvals").json()["approvals"] if a["run_id"] == approval_run)
        with live.client(BOB) as bob:
            assert bob.post(f"/api/approvals/{pending['id']}/approve").status_code == 200
        ids.append(approval_run)
        ids.append(client.post("/api/pipelines/sandbox/run", json={"summary": "try"}).json()["run_id"])
        runs = [wait_for(client, run_id, until=("completed", "escalated", "failed")) for run_id in ids]
    return History(runs)


@contextlib.contextmanager
def ui(live: LiveService, token: str = ALICE) -> Iterator[httpx.Client]:
    """A browser's client without the browser: signed in with `token`."""
    with httpx.Client(base_url=live.url, timeout=30) as client:
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/login").text)
        assert csrf is not None
        signed_in = client.post("/ui/login", data={"token": token, "csrf": csrf.group(1), "next": "/ui/"})
        assert signed_in.status_code == 303, signed_in.text
        yield client


def chart_rows(html: str, chart: str) -> list[list[str]]:
    """The data table under one chart: a row per bucket, the bucket first."""
    section = html.split(f'data-chart="{chart}"', 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [unescape(cell) for cell in re.findall(r"<t[hd][^>]*>([^<]*)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def tiles(html: str) -> dict[str, str]:
    """The figure tiles of a page: label → the value shown."""
    found = re.findall(r'data-figure="([^"]+)"><span class="tile-count">([^<]*)</span>', html)
    return {unescape(label): unescape(value) for label, value in found}


def test_the_overview_counts_what_the_run_records_say(live: LiveService, history: History) -> None:
    with ui(live) as client:
        html = client.get("/ui/insights?period=24h").text
    shown = tiles(html)
    escalated = sum(1 for step in history.steps if step["status"] == "escalated")
    assert escalated >= 2  # each incident escalates its grounded step
    assert shown["runs"] == str(len(history.runs))
    assert shown["steps"] == str(len(history.steps))
    assert shown["escalation rate"] == f"{escalated / len(history.steps):.1%}"
    assert shown["approvals asked"] == "1"
    assert "mean of 1 decided by people" in html and "0 decided by the clock" in html
    tokens = sum(run["input_tokens"] + run["output_tokens"] for run in history.runs)
    assert tokens > 0
    assert sum(int(row[1].replace(",", "")) for row in chart_rows(html, "tokens")) == tokens
    outcomes = chart_rows(html, "outcomes")
    escalated_runs = sum(1 for run in history.runs if run["status"] == "escalated")
    columns = html.split('data-chart="outcomes"', 1)[1].split("</thead>", 1)[0]
    assert re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', columns)[1:] == sorted(
        {run["status"] for run in history.runs}, key=[status.value for status in RunStatus].index
    )
    assert escalated_runs == 2
    assert len(outcomes) == 24 and sum(sum(int(cell) for cell in row[1:]) for row in outcomes) == len(history.runs)
    for title in (
        "Runs by outcome",
        "Trust and escalation",
        "Where the signals disagree",
        "Approvals: how long a person took to decide",
    ):
        assert f">{title}</h2>" in html


def test_a_pipeline_page_shows_its_tools_and_links_to_its_steps(live: LiveService, history: History) -> None:
    incidents = history.of("incident")
    tool_calls = sum(
        1 for run in incidents for step in run["steps"] for event in step["trace"] if event["type"] == "tool_call"
    )
    with ui(live) as client:
        page = client.get("/ui/insights/pipeline/incident?period=7d&by=tool")
        by_step = client.get("/ui/insights/pipeline/incident?period=7d").text
        tool = client.get("/ui/insights/tool/tools__echo?period=7d").text
    assert page.status_code == 200
    assert tiles(page.text)["runs"] == str(len(incidents))
    assert tiles(page.text)["tool calls"] == str(tool_calls) and tool_calls >= 1
    assert 'href="/ui/insights/tool/tools__echo?period=7d"' in page.text
    assert 'href="/ui/insights/step/investigate?period=7d"' in by_step  # a pipeline breaks down by step first
    echo_calls = sum(
        1
        for run in incidents
        for step in run["steps"]
        for event in step["trace"]
        if event["type"] == "tool_call" and event["name"] == "tools__echo"
    )
    assert tiles(tool)["tool calls"] == str(echo_calls) and 0 < echo_calls < tool_calls
    assert 'data-chart="tools"' in tool and 'data-chart="tokens"' not in tool  # a tool has calls, not spend
    assert 'href="/ui/insights/step/investigate?period=7d"' in tool


def test_bad_pages_are_4xx_that_say_why(live: LiveService, history: History) -> None:
    with ui(live) as client:
        period = client.get("/ui/insights?period=1y")
        dimension = client.get("/ui/insights/colour/blue")
        breakdown = client.get("/ui/insights/pipeline/incident?by=pipeline")
    assert period.status_code == 400
    assert "unknown period '1y'; expected one of: 24h, 7d, 14d, 30d, 90d" in unescape(period.text)
    assert dimension.status_code == 404 and "no insights by 'colour'" in unescape(dimension.text)
    assert breakdown.status_code == 400
    assert "cannot break this page down by 'pipeline'; expected one of: step, agent" in unescape(breakdown.text)
    assert "Traceback" not in period.text + dimension.text + breakdown.text


def test_a_hostile_name_is_shown_escaped_and_counts_nothing(live: LiveService, history: History) -> None:
    hostile = '<script>alert(1)</script>"&'
    with ui(live) as client:
        answered = client.get("/ui/insights/pipeline/" + httpx.URL(hostile).raw_path.decode())
    assert answered.status_code == 200
    assert "<script>alert(1)</script>" not in answered.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in answered.text
    assert tiles(answered.text)["runs"] == "0"


def test_a_viewer_sees_only_its_teams_figures(live: LiveService, history: History) -> None:
    with ui(live, VIEWER) as viewer:
        overview = viewer.get("/ui/insights?period=24h")
        other_team = viewer.get("/ui/insights/team/shop")
        own_team = viewer.get("/ui/insights/team/pay")
        dashboard = viewer.get("/ui/")
    assert overview.status_code == 200 and tiles(overview.text)["runs"] == "0"  # no run belongs to team pay
    assert "checkout" not in overview.text and "incident" not in overview.text
    assert other_team.status_code == 403 and "val sees only pay" in other_team.text
    assert own_team.status_code == 200
    assert "No data in this period" in dashboard.text  # its trust trend holds nobody else's steps


def test_insights_in_the_browser(signed_in: Page, history: History) -> None:
    page = signed_in
    # The dashboard's trust trend is a chart with a name and a description in words.
    trend = page.get_by_role("img", name=re.compile("^Trust trend, last 14 days"))
    expect(trend).to_be_visible()
    expect(trend.locator("desc")).to_contain_text("mean combined trust")

    page.get_by_role("link", name="Insights", exact=True).first.click()
    expect(page.get_by_role("heading", name="Insights", level=1)).to_be_visible()
    expect(page.get_by_role("link", name="7d")).to_have_attribute("aria-current", "true")  # the default
    page.get_by_role("link", name="24h").click()
    expect(page).to_have_url(re.compile(r"/ui/insights\?period=24h"))
    expect(page.get_by_role("link", name="24h")).to_have_attribute("aria-current", "true")
    outcomes = page.locator("section[data-chart=outcomes]")
    expect(outcomes.get_by_role("img", name=re.compile("^Runs by outcome"))).to_be_visible()
    for name in ("Trust and escalation", "Self-report (S) against grounding (G)", "Tool calls and errors"):
        expect(page.get_by_role("img", name=re.compile("^" + re.escape(name)))).to_be_visible()

    # Each chart's figures are also a table, closed until asked for: a row per hour.
    table = outcomes.locator("table.chart-data")
    expect(table).to_be_hidden()
    outcomes.get_by_text("The figures as a table").click()
    expect(table).to_be_visible()
    expect(table.locator("tbody tr")).to_have_count(24)
    expect(table.locator("thead")).to_contain_text("escalated")

    # Down the breakdown to one pipeline and on to its steps, keeping the period.
    page.locator("table.breakdown").get_by_role("link", name="incident").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Pipeline incident")
    expect(page.locator("[data-figure=runs] .tile-count")).to_have_text(str(len(history.of("incident"))))
    page.locator("table.breakdown").get_by_role("link", name="investigate").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Step investigate")
    expect(page).to_have_url(re.compile(r"/ui/insights/step/investigate\?period=24h$"))
    expect(page.locator("[data-figure='escalation rate'] .tile-count")).to_have_text("100.0%")
