"""Promotion readiness end to end: real testing runs and marks, judged by `vectorstep readiness`, the API and the
pipeline page (in a real headless Chromium)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import run_cli
from tests.web.conftest import LiveService, wait_for
from vectorstep.intake.generic import manual_context
from vectorstep.readiness import pipeline_readiness
from vectorstep.spec.settings import load_settings
from vectorstep.store.feedback import Mark
from vectorstep.store.migrate import upgrade
from vectorstep.testing import ProjectDir, answer
from vectorstep.trust.readiness import PipelineReadiness
from vectorstep.web.service import Service

SHOP = "shop-token-0123456789ab"  # admin, team shop
OTHER = "other-token-0123456789a"  # operator, team other
VIEWER = "viewer-token-0123456789"  # viewer, team shop
READINESS = {
    "operational": {"min_runs": 4},
    "confidence": {"min_runs": 4},
    "accuracy": {"min_accuracy": 0.8, "min_marked": 4, "min_human_marked": 2},
}


def assess_pipeline(name: str, prompt: str = "Assess {{ summary }}") -> dict[str, Any]:
    return {
        "name": name,
        "team": "shop",
        "readiness": READINESS,
        "steps": [
            {
                "name": "assess",
                "executor": "gateway",
                "executor_config": {"agent": "assessor"},
                "prompt_template": prompt,
            },
            {"name": "tell", "executor": "notify", "executor_config": {"url": "http://127.0.0.1:9/tell"}},
        ],
    }


def readiness_project(root: Path, database_url: str) -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent("assessor", answer(0.9, "looks fine"))
    project.pipeline("assess", assess_pipeline("assess"))
    project.pipeline("assess-low", assess_pipeline("assess-low"))
    tokens = [
        {"name": "shop", "token": SHOP, "role": "admin", "team": "shop"},
        {"name": "other", "token": OTHER, "role": "operator", "team": "other"},
        {"name": "viewer", "token": VIEWER, "role": "viewer", "team": "shop"},
    ]
    project.settings({"database": {"url": database_url}, "auth": {"tokens": tokens}})
    return project


async def runs_marked(service: Service, pipeline: str, labels: list[str | None], *, on_step: bool = True) -> None:
    """One testing run per label, marked (on the step, or on the run when `on_step` is false) unless None."""
    spec = service.project.pipelines[pipeline].spec
    for label in labels:
        run = await service.engine.run(spec, manual_context(service.clock.now(), summary="x", team="shop"))
        if label is not None:
            step = "assess" if on_step else None
            await service.mark(Mark(run.run_id, step, label, None, "alice", service.clock.now()))


async def judged(service: Service, pipeline: str) -> PipelineReadiness:
    loaded = service.project.pipelines[pipeline]
    return await pipeline_readiness(loaded, service.project.agents, service.database, now=service.clock.now())


def verdicts(report: PipelineReadiness) -> dict[str, str]:
    found = {"pipeline": report.verdict}
    for step in report.steps:
        found |= {f"{step.step}.{tier.tier}": tier.verdict for tier in step.tiers}
    return found


async def test_a_pipeline_goes_from_no_data_to_building_to_ready_as_runs_and_marks_accumulate(
    tmp_path: Path, database_url: str
) -> None:
    project = readiness_project(tmp_path / "project", database_url)
    service = Service(load_settings(project.config))
    await upgrade(service.database)
    try:
        nothing = await judged(service, "assess")
        await runs_marked(service, "assess", ["correct", None])
        building = await judged(service, "assess")
        await runs_marked(service, "assess", ["correct", "partial"], on_step=False)
        await runs_marked(service, "assess", ["correct"])
        ready = await judged(service, "assess")
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    assert nothing.verdict == "no_data" and nothing.steps[0].reason == "operational, confidence and accuracy no data"
    assert verdicts(building) == {
        "pipeline": "building",
        "assess.operational": "building",
        "assess.confidence": "building",
        "assess.accuracy": "building",
        "tell.operational": "building",
    }
    accuracy = building.steps[0].tiers[2]
    assert accuracy.reason == "1 of 4 marked; 1 of 2 marked by a person (accuracy so far 1.00)"
    assert building.reason.startswith("building: assess (operational, confidence and accuracy), tell (operational)")
    assert set(verdicts(ready).values()) == {"ready"}
    assert ready.steps[0].tiers[2].reason == "accuracy 0.88 ≥ 0.80 over 4 marked"  # (1 + 1 + 0.5 + 1) / 4
    assert ready.steps[0].tiers[2].figures["label_sources"] == {"run_mark": 2, "step_mark": 2}

    gate = run_cli("readiness", "assess", cwd=project.root)
    assert gate.returncode == 0, gate.stderr
    assert gate.stdout.startswith("assess (testing): READY — all 2 judged steps are ready")
    assert "accuracy     ready    accuracy 0.88 ≥ 0.80 over 4 marked" in gate.stdout
    as_json = run_cli("readiness", "assess", "--json", cwd=project.root)
    body = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and body["verdict"] == "ready" and body["ready"] is True
    assert body["steps"][0]["current_config"]["agent_version_from"] == "loaded"


async def test_low_accuracy_is_not_ready_and_an_edited_prompt_starts_afresh(tmp_path: Path, database_url: str) -> None:
    project = readiness_project(tmp_path / "project", database_url)
    service = Service(load_settings(project.config))
    await upgrade(service.database)
    try:
        await runs_marked(service, "assess-low", ["correct", "incorrect", "incorrect", "partial", "correct"])
        low = await judged(service, "assess-low")
    finally:
        await service.engine.aclose()
        await service.database.dispose()
    assert low.verdict == "not_ready"
    assert low.steps[0].tiers[2].reason == "accuracy 0.50 < 0.80 over 5 marked"
    assert low.reason == "not ready: assess (accuracy); 1 of 2 judged steps ready"
    gate = run_cli("readiness", "assess-low", "--explain", cwd=project.root)
    assert gate.returncode == 1
    assert "assess-low (testing): NOT READY — not ready: assess (accuracy)" in gate.stdout
    assert "assess · accuracy (from the pipeline): At least 4 runs with the current prompt" in gate.stdout

    # A new prompt is a new step as far as its answers go: its marked record starts empty.
    project.pipeline("assess-low", assess_pipeline("assess-low", prompt="Assess carefully: {{ summary }}"))
    edited = json.loads(run_cli("readiness", "assess-low", "--json", cwd=project.root).stdout)
    tiers = {tier["tier"]: tier for tier in edited["steps"][0]["tiers"]}
    assert tiers["operational"]["verdict"] == "ready"  # any prompt counts, unless require_current_config
    assert tiers["accuracy"]["verdict"] == "no_data"
    assert tiers["accuracy"]["reason"] == "no runs with the current prompt and agent version yet"
    assert edited["verdict"] == "no_data"


def test_an_unknown_pipeline_is_a_mistake_with_a_suggestion(tmp_path: Path) -> None:
    project = readiness_project(tmp_path / "project", f"sqlite:///{tmp_path / 'vectorstep.db'}")
    missing = run_cli("readiness", "asess", cwd=project.root)
    assert missing.returncode == 2
    assert "no such pipeline (did you mean 'assess'?)" in missing.stderr
    project.pipeline(
        "plain",
        {"name": "plain", "steps": [{"name": "s", "executor": "gateway", "executor_config": {"agent": "assessor"}}]},
    )
    plain = run_cli("readiness", "plain", cwd=project.root)
    assert plain.returncode == 1
    assert "NOT CONFIGURED — no step has a readiness tier" in plain.stdout


# -- the API and the pipeline page, against a served app ------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveService, ProjectDir]]:
    root = tmp_path_factory.mktemp("readiness")
    project = readiness_project(root / "project", f"sqlite:///{root / 'vectorstep.db'}")
    server = LiveService(project.config)
    with server.client(SHOP) as client:
        for label in ["correct", "correct", "incorrect", "correct", "correct"]:
            run_id = client.post("/api/pipelines/assess/run", json={"summary": "x"}).json()["run_id"]
            wait_for(client, run_id, until=("completed",))
            client.post(f"/api/runs/{run_id}/steps/assess/feedback", json={"label": label}).raise_for_status()
    yield server, project
    server.stop()


def test_the_api_answers_what_the_cli_prints_for_the_pipelines_team(served: tuple[LiveService, ProjectDir]) -> None:
    server, project = served
    with server.client(SHOP) as client:
        response = client.get("/api/pipelines/assess/readiness")
    assert response.status_code == 200
    body = response.json()
    assert body["verdict"] == "ready" and body["evidence"]["teams"] is None  # an admin sees every run
    printed = json.loads(run_cli("readiness", "assess", "--json", cwd=project.root).stdout)
    for report in (body, printed):
        report.pop("judged_at")
        report["evidence"].pop("teams")
    assert body == printed
    accuracy = body["steps"][0]["tiers"][2]
    assert accuracy["reason"] == "accuracy 0.80 ≥ 0.80 over 5 marked"
    assert body["steps"][0]["tiers"][1]["reason"] == "mean combined trust 0.90 ≥ 0.75 over the last 4 runs"


def test_the_api_keeps_to_the_callers_teams_and_suggests_a_name(served: tuple[LiveService, ProjectDir]) -> None:
    server, _ = served
    with server.client(OTHER) as other, server.client(SHOP) as shop, server.client(None) as anonymous:
        assert other.get("/api/pipelines/assess/readiness").status_code == 403
        with server.client(VIEWER) as viewer:
            scoped = viewer.get("/api/pipelines/assess/readiness").json()
        assert scoped["evidence"]["teams"] == ["shop"] and scoped["verdict"] == "ready"
        unknown = shop.get("/api/pipelines/asess/readiness")
        assert anonymous.get("/api/pipelines/assess/readiness").status_code == 401
    assert unknown.status_code == 404 and "did you mean 'assess'" in unknown.text


@pytest.fixture
def page(browser: Browser, served: tuple[LiveService, ProjectDir]) -> Iterator[Page]:
    context = browser.new_context(base_url=served[0].url, viewport={"width": 1366, "height": 900})
    opened = context.new_page()
    opened.goto("/ui/")
    opened.get_by_label("Token").fill(SHOP)
    opened.get_by_role("button", name="Sign in").click()
    expect(opened.get_by_role("heading", name="Dashboard")).to_be_visible()
    yield opened
    context.close()


def test_the_pipeline_page_shows_each_verdict_in_words_and_explains_how_it_is_judged(page: Page) -> None:
    page.goto("/ui/pipelines/assess-low")
    card = page.get_by_test_id("readiness")
    expect(card.get_by_role("heading", name="Promotion readiness")).to_be_visible()
    expect(card.get_by_test_id("readiness-verdict")).to_have_text("∅ no data")
    expect(card.get_by_test_id("readiness-reason")).to_contain_text("no data: assess")

    page.goto("/ui/pipelines/assess")
    card = page.get_by_test_id("readiness")
    expect(card.get_by_test_id("readiness-verdict")).to_have_text("✓ ready")
    assess = card.locator("tbody[data-step=assess]")
    expect(assess.get_by_test_id("step-verdict")).to_have_text("✓ ready")
    expect(assess.locator("tr[data-tier=accuracy]")).to_contain_text("accuracy 0.80 ≥ 0.80 over 5 marked")
    expect(assess.locator("tr[data-tier=operational]")).to_contain_text(
        "the last 4 runs all ended completed or stopped"
    )
    expect(card.locator("tbody[data-step=tell] tr[data-tier=operational]")).to_contain_text("ready")
    expect(card).to_contain_text("Advisory: it never stops a run.")

    how = card.locator("details.how")
    expect(how.get_by_text("At least 4 runs with the current prompt and agent version must be marked")).to_be_hidden()
    how.locator("summary", has_text="How is this judged?").click()
    expect(how).to_contain_text(
        "accuracy (the pipeline's house default): At least 4 runs with the current prompt and agent version must be marked, 2 of them by a person"
    )
    expect(how).to_contain_text("not ready — the evidence already says no")
    expect(how).to_contain_text("vectorstep readiness assess")
    expect(how).to_contain_text("(as loaded now)")
