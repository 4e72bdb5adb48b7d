"""Version history and artifacts against a real service (uvicorn, SQLite, scripted agents, a real MCP server):
the API, team scoping, and the pages in a real headless Chromium."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import tool_server_config
from tests.web.conftest import LiveService, signed_in_page, wait_for
from vectorstep.testing import ProjectDir, answer

ADMIN = "admin-token-0123456789"  # admin, team shop
OTHER = "other-token-0123456789"  # viewer, team other: sees the pipeline, none of shop's runs
REPORT = "# Incident report\nARTIFACT-BODY: checkout failed after deploy 8f3a91c\n"
FIRST_PROMPT = "Alert: {{ context.summary }}. Find the cause."
SECOND_PROMPT = "Alert: {{ context.summary }}.\nFind the cause and name the deploy."


def writer_turns() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "tools__echo", "args": {"text": "checkout 5xx ratio 0.042 since deploy 8f3a91c"}}]},
        answer(
            0.9,
            "5xx at 4.2% since deploy 8f3a91c",
            artifacts={
                "report.md": REPORT,
                "big.log": "LOGLINE " * 400,  # 3,200 bytes, over the limit below
                "../escape.sh": "rm -rf /",
                "count": 7,
            },
        ),
    ]


def pipeline(project: ProjectDir, prompt: str) -> None:
    project.pipeline(
        "incident",
        {
            "name": "incident",
            "stage": "production",
            "steps": [
                {
                    "name": "write",
                    "executor": "gateway",
                    "executor_config": {"agent": "writer"},
                    "prompt_template": prompt,
                    "grounding": {"agent": "judge"},
                    "on_low_confidence": "proceed",
                }
            ],
        },
    )


@dataclass
class Served:
    live: LiveService
    project: ProjectDir
    runs: list[str]  # one run on the first prompt, one on the second


def run(live: LiveService) -> str:
    with live.client(ADMIN) as client:
        started = client.post("/api/pipelines/incident/run", json={"summary": "checkout 5xx"})
        assert started.status_code == 202, started.text
        run_id = str(started.json()["run_id"])
        wait_for(client, run_id, until=("completed", "escalated"))
    return run_id


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("versions-web")
    project = ProjectDir(root / "project")
    project.scripted_agent("writer", *writer_turns(), tools=["tools"])
    judge = {"claims": [{"claim": "5xx at 4.2%", "supported": True, "evidence": "checkout 5xx ratio 0.042"}]}
    project.scripted_agent("judge", answer(1.0, "1 of 1 claims is supported.", reasoning=judge))
    pipeline(project, FIRST_PROMPT)
    project.settings(
        {
            "database": {"url": f"sqlite:///{root / 'vectorstep.db'}"},
            "mcp_servers": tool_server_config(),
            "limits": {"max_artifact_bytes": 2048},
            "auth": {
                "tokens": [
                    {"name": "admin", "token": ADMIN, "role": "admin", "team": "shop"},
                    {"name": "other", "token": OTHER, "role": "viewer", "team": "other"},
                ]
            },
        }
    )
    live = LiveService(project.config)
    try:
        first = run(live)
        with live.client(ADMIN) as client:
            marked = client.post(f"/api/runs/{first}/steps/write/feedback", json={"label": "correct"})
            assert marked.status_code == 201, marked.text
            pipeline(project, SECOND_PROMPT)
            assert client.post("/api/pipelines/reload").status_code == 200
        yield Served(live, project, [first, run(live)])
    finally:
        live.stop()


def test_artifacts_are_listed_and_downloaded_as_plain_text_attachments(served: Served) -> None:
    run_id = served.runs[0]
    with served.live.client(ADMIN) as client:
        listed = client.get(f"/api/runs/{run_id[:10]}/steps/write/artifacts")
        assert listed.status_code == 200, listed.text
        assert [(item["name"], item["size"], item["truncated"]) for item in listed.json()["artifacts"]] == [
            ("big.log", 3200, True),
            ("report.md", len(REPORT.encode()), False),
        ]
        report = client.get(f"/api/runs/{run_id}/steps/write/artifacts/report.md")
        assert report.status_code == 200 and report.text == REPORT
        assert report.headers["content-type"] == "text/plain; charset=utf-8"
        assert report.headers["content-disposition"] == 'attachment; filename="report.md"'
        assert report.headers["x-content-type-options"] == "nosniff"
        big = client.get(f"/api/runs/{run_id}/steps/write/artifacts/big.log")
        assert big.text.startswith("LOGLINE ") and big.text.endswith("limits.max_artifact_bytes keeps 2,048]\n")
        assert big.headers["x-artifact-truncated"] == "true"

        missing = client.get(f"/api/runs/{run_id}/steps/write/artifacts/report.txt")
        assert missing.status_code == 404
        assert missing.json()["detail"].startswith(
            f"step write of run {run_id} has no artifact 'report.txt' (did you mean 'report.md'?)"
        )
        unsafe = client.get(f"/api/runs/{run_id}/steps/write/artifacts/re port.md")
        assert unsafe.status_code == 404 and "is not an artifact name" in unsafe.json()["detail"]
        no_step = client.get(f"/api/runs/{run_id}/steps/wirte/artifacts")
        assert no_step.status_code == 404 and "(did you mean 'write'?)" in no_step.json()["detail"]

        record = client.get(f"/api/runs/{run_id}").json()
    (step,) = record["steps"]
    assert step["output"]["artifacts"]["report.md"] == {
        "artifact": "report.md",
        "size": len(REPORT),
        "truncated": False,
    }
    assert "ARTIFACT-BODY" not in str(step["output"])  # the record carries references only
    warnings = "\n".join(step["warnings"])
    assert "artifact '../escape.sh' not stored" in warnings and "artifact 'count' not stored" in warnings
    judged = step["trust_report"]["grounding"]
    assert judged["computed"] and "checkout 5xx ratio 0.042" in judged["prompt"]
    assert "ARTIFACT-BODY" not in judged["prompt"] and "LOGLINE" not in judged["prompt"]  # the judge never sees them

    with served.live.client(OTHER) as other:  # another team's run: refused, as the run itself is
        assert other.get(f"/api/runs/{run_id}/steps/write/artifacts").status_code == 403
        assert other.get(f"/api/runs/{run_id}/steps/write/artifacts/report.md").status_code == 403
    with served.live.client(None) as anonymous:
        assert anonymous.get(f"/api/runs/{run_id}/steps/write/artifacts").status_code == 401


def test_a_steps_versions_and_their_diff(served: Served) -> None:
    with served.live.client(ADMIN) as client:
        found = client.get("/api/pipelines/incident/steps/write/versions")
        assert found.status_code == 200, found.text
        first, second = found.json()["prompt_versions"]
        (agent,) = found.json()["agent_versions"]
        compared = client.get(
            "/api/pipelines/incident/steps/write/versions/diff",
            params={"a": first["hash"][:6], "b": second["hash"][:6]},
        ).json()
        unknown = client.get("/api/pipelines/incident/steps/write/versions/diff", params={"a": "ffffff", "b": "0"})
        wrong_step = client.get("/api/pipelines/incident/steps/wirte/versions")
        wrong_pipeline = client.get("/api/pipelines/incdent/steps/write/versions")
        agents = client.get("/api/agents/writer/versions").json()
        wrong_agent = client.get("/api/agents/wirter/versions")
    assert (first["text"], first["current"], first["runs"]) == (FIRST_PROMPT, False, 1)
    assert (second["text"], second["current"], second["runs"]) == (SECOND_PROMPT, True, 1)
    assert first["calibration"]["n"] == 1 and first["calibration"]["accuracy"] == 1.0 and second["calibration"] is None
    assert [run["run_id"] for run in first["recent_runs"]] == served.runs[:1]
    assert agent["current"] and agent["runs"] == 2 and "# instructions" in agent["text"]
    assert compared["diff"].splitlines()[2:] == [
        "@@ -1 +1,2 @@",
        "-Alert: {{ context.summary }}. Find the cause.",
        "+Alert: {{ context.summary }}.",
        "+Find the cause and name the deploy.",
    ]
    assert unknown.status_code == 404 and "its versions: " in unknown.json()["detail"]
    assert wrong_step.status_code == 404
    assert (
        wrong_step.json()["detail"] == "pipeline incident has no step 'wirte' (did you mean 'write'?); its steps: write"
    )
    assert wrong_pipeline.status_code == 404 and "(did you mean 'incident'?)" in wrong_pipeline.json()["detail"]
    assert [version["steps"] for version in agents["versions"]] == [
        [{"pipeline": "incident", "step": "write", "runs": 2}]
    ]
    assert wrong_agent.status_code == 404 and "(did you mean 'writer'?)" in wrong_agent.json()["detail"]

    with served.live.client(OTHER) as other:  # the pipeline is everyone's; the runs that used its versions are not
        scoped = other.get("/api/pipelines/incident/steps/write/versions").json()
    assert scoped["prompt_versions"] == [] and scoped["agent_versions"] == []


def test_a_version_recorded_before_texts_were_kept_says_so(served: Served) -> None:
    database = served.live.service.settings.database_url.removeprefix("sqlite:///")
    with served.live.client(ADMIN) as client:
        first, second = client.get("/api/pipelines/incident/steps/write/versions").json()["prompt_versions"]
        with sqlite3.connect(database) as connection:  # as migration 0008 enters older history
            connection.execute(
                "UPDATE step_prompt_versions SET template = NULL WHERE prompt_hash = ?", (first["hash"],)
            )
        try:
            listed = client.get("/api/pipelines/incident/steps/write/versions").json()["prompt_versions"]
            compared = client.get(
                "/api/pipelines/incident/steps/write/versions/diff", params={"a": first["hash"], "b": second["hash"]}
            ).json()
        finally:
            with sqlite3.connect(database) as connection:
                connection.execute(
                    "UPDATE step_prompt_versions SET template = ? WHERE prompt_hash = ?", (FIRST_PROMPT, first["hash"])
                )
    assert (listed[0]["text"], listed[0]["text_recorded"]) == (None, False)
    assert compared["diff"] is None
    assert compared["reason"] == (
        f"{first['hash'][:12]}: text not recorded (this version ran before VectorStep kept version texts); "
        "there is nothing to compare"
    )


def test_the_openapi_document_lists_versions_and_artifacts(served: Served) -> None:
    with served.live.client(ADMIN) as client:
        paths = client.get("/api/openapi.json").json()["paths"]
    for path in [
        "/api/runs/{run_id}/steps/{step}/artifacts",
        "/api/runs/{run_id}/steps/{step}/artifacts/{name}",
        "/api/pipelines/{name}/steps/{step}/versions",
        "/api/pipelines/{name}/steps/{step}/versions/diff",
        "/api/agents/{name}/versions",
        "/api/agents/{name}/versions/diff",
    ]:
        assert path in paths, path


# -- the pages -----------------------------------------------------------------------------------------


@pytest.fixture
def signed_in(browser: Browser, served: Served) -> Iterator[Page]:
    with signed_in_page(browser, served.live.url, ADMIN) as page:
        yield page


def test_the_version_pages_compare_any_two_versions(signed_in: Page, served: Served) -> None:
    page = signed_in
    page.goto("/ui/pipelines/incident")
    card = page.get_by_test_id("step-versions")
    expect(card.get_by_role("link", name="writer")).to_have_attribute("href", "/ui/agents/writer/versions")
    card.get_by_role("link", name="write", exact=True).click()
    expect(page.get_by_role("heading", name="Versions of incident/write")).to_be_visible()
    prompts = page.locator("table.versions[data-kind=prompt] tr[data-version]")
    expect(prompts).to_have_count(2)
    expect(prompts.nth(1).locator(".badge")).to_have_text("current")
    expect(prompts.nth(0).get_by_test_id("calibration")).to_contain_text("1 marked · right 100%")
    expect(prompts.nth(1).get_by_test_id("calibration")).to_have_text("no marked production steps")
    page.locator("details", has=page.locator("summary", has_text="Template of")).first.locator("summary").click()
    expect(page.locator("table.versions[data-kind=prompt] pre").first).to_have_text(FIRST_PROMPT)

    page.get_by_role("button", name="Compare").click()  # the two newest prompt versions, chosen already
    diff = page.get_by_test_id("diff")
    expect(diff.locator(".d-remove")).to_have_text(["-Alert: {{ context.summary }}. Find the cause."])
    expect(diff.locator(".d-add")).to_have_text(
        ["+Alert: {{ context.summary }}.", "+Find the cause and name the deploy."]
    )
    expect(page).to_have_url(re.compile(r"/ui/pipelines/incident/steps/write/versions\?a=[0-9a-f]+&b=[0-9a-f]+$"))

    mixed = page.url.split("?")[0] + "?a=" + served.runs[0][:4] + "zz&b=0"
    page.goto(mixed)
    expect(page.get_by_role("alert")).to_contain_text("no version")

    prompts.nth(0).get_by_role("link", name=served.runs[0][:8]).click()
    expect(page).to_have_url(re.compile(rf"/ui/runs/{served.runs[0]}#step-write$"))
    page.goto("/ui/agents/writer/versions")
    expect(page.get_by_role("heading", name="Versions of agent writer")).to_be_visible()
    expect(page.locator("table.versions[data-kind=agent] tr[data-version]")).to_have_count(1)
    expect(page.locator("table.versions").get_by_role("link", name="incident/write")).to_be_visible()


def test_the_run_page_lists_artifacts_that_download_and_never_render(signed_in: Page, served: Served) -> None:
    page = signed_in
    page.goto(f"/ui/runs/{served.runs[0]}")
    listed = page.locator("section.step[data-step=write]").get_by_test_id("artifacts")
    expect(listed.locator("li")).to_have_count(2)
    expect(listed.locator("li", has_text="big.log")).to_contain_text("3,200 bytes truncated")
    link = listed.get_by_role("link", name="report.md")
    href = link.get_attribute("href")
    assert href == f"/ui/runs/{served.runs[0]}/steps/write/artifacts/report.md"
    with page.expect_download() as started:
        link.click()
    assert started.value.suggested_filename == "report.md"
    fetched = page.request.get(href)  # with the page's session
    assert fetched.status == 200 and fetched.text() == REPORT
    assert fetched.headers["content-type"] == "text/plain; charset=utf-8"
    assert fetched.headers["content-disposition"] == 'attachment; filename="report.md"'
    with httpx.Client(base_url=served.live.url) as anonymous:  # no session: sent to sign in, not given the text
        assert anonymous.get(href).status_code == 303
