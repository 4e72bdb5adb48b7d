"""A real service for the web tests: a project on disk, `create_app`, uvicorn on 127.0.0.1, SQLite or PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.conftest import tool_server_config
from tests.fixtures.served_app import ServedApp
from vectorstep.spec.settings import load_settings
from vectorstep.testing import ProjectDir, alertmanager_payload, answer
from vectorstep.web.app import create_app

ALICE = "alice-token-0123456789"  # admin, team shop
BOB = "bob-token-9876543210ab"  # admin, no team
SECRET_HEADER = "hook-secret-value-42"
CHROMIUM = os.environ.get("VECTORSTEP_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def investigator_turns() -> list[dict[str, Any]]:
    return [
        {
            "tool_calls": [
                {"name": "tools__echo", "args": {"text": "checkout 5xx ratio 0.042 since deploy 8f3a91c"}},
                {"name": "tools__long_text", "args": {"chars": 3000, "marker": "pod checkout-7d9f-x2kqp OOMKilled"}},
            ]
        },
        answer(
            0.9,
            "5xx at 4.2% since deploy 8f3a91c; checkout-7d9f-x2kqp was OOMKilled; the database is healthy",
            next_step_context="roll back 8f3a91c",
        ),
    ]


JUDGE_HALF = answer(
    0.5,
    "2 of 4 claims are supported.",
    reasoning={
        "claims": [
            {"claim": "5xx at 4.2%", "supported": True, "evidence": "checkout 5xx ratio 0.042"},
            {"claim": "deploy 8f3a91c", "supported": True, "evidence": "since deploy 8f3a91c"},
            {"claim": "checkout-7d9f-x2kqp was OOMKilled", "supported": False, "evidence": "not in the results"},
            {"claim": "the database is healthy", "supported": False, "evidence": "no database query was made"},
        ]
    },
)


def build_project(root: Path, database_url: str, **settings: Any) -> ProjectDir:
    """Pipelines: `incident` (production; a grounded, enforced step), `approve-me`, `garbled` (a judge that
    answers nonsense), `sandbox` (testing), `umbrella` (testing; runs `sandbox` as its sub-pipeline) and
    `slow` (testing; a 1.5 s check, then a webhook with a secret)."""
    project = ProjectDir(root)
    project.scripted_agent("triage", answer(0.8, "checkout is failing"))
    project.scripted_agent("investigator", *investigator_turns(), tools=["tools"])
    project.scripted_agent("judge-half", JUDGE_HALF)
    project.scripted_agent("reviewer", answer(0.85, "the investigation holds up"))
    project.scripted_agent("judge-garbled", {"answer": "I cannot tell from this transcript, sorry."})
    verifier = {"mode": "independent", "executor_config": {"agent": "reviewer"}, "trigger": {"always": True}}
    project.pipeline(
        "incident",
        {
            "name": "incident",
            "stage": "production",
            "priority": 10,
            "trigger": {"match": {"labels.service": "checkout"}},
            "steps": [
                {
                    "name": "triage",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "verifier": verifier,
                },
                {
                    "name": "investigate",
                    "executor": "gateway",
                    "executor_config": {"agent": "investigator"},
                    "prompt_template": "Alert on {{ labels.service }}: {{ context.summary }}. Find the cause.",
                    "confidence_threshold": 0.75,
                    "verifier": verifier,
                    "grounding": {"agent": "judge-half", "enforce": True},
                    "deterministic_checks": [{"name": "still_firing", "type": "shell", "run": "true"}],
                },
            ],
        },
    )
    project.pipeline(
        "approve-me",
        {
            "name": "approve-me",
            "stage": "production",
            "trigger": {"match": {"labels.service": "payments"}},
            "steps": [
                {"name": "ask", "executor": "human", "executor_config": {"message": "Roll back payments?"}},
                {"name": "after", "executor": "gateway", "executor_config": {"agent": "triage"}},
            ],
        },
    )
    project.pipeline(
        "garbled",
        {
            "name": "garbled",
            "stage": "testing",
            "steps": [
                {
                    "name": "investigate",
                    "executor": "gateway",
                    "executor_config": {"agent": "investigator"},
                    "grounding": {"agent": "judge-garbled"},
                }
            ],
        },
    )
    project.pipeline(
        "sandbox",
        {
            "name": "sandbox",
            "stage": "testing",
            "trigger": {"match": {"labels.service": "sandbox"}},
            "steps": [{"name": "only", "executor": "gateway", "executor_config": {"agent": "triage"}}],
        },
    )
    project.pipeline(
        "umbrella",
        {
            "name": "umbrella",
            "stage": "testing",
            "steps": [
                {"name": "delegate", "executor": "pipeline", "executor_config": {"pipeline": "sandbox"}},
                {"name": "after", "executor": "gateway", "executor_config": {"agent": "triage"}},
            ],
        },
    )
    project.pipeline(
        "slow",
        {
            "name": "slow",
            "stage": "testing",
            "trigger": {"match": {"labels.service": "slow"}},
            "steps": [
                {
                    "name": "wait",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "deterministic_checks": [{"name": "pause", "type": "shell", "run": "sleep 1.5"}],
                },
                {
                    "name": "notify",
                    "executor": "webhook",
                    "executor_config": {
                        "url": "http://127.0.0.1:9/hook",
                        "headers": {"Authorization": f"Bearer {SECRET_HEADER}"},
                    },
                    "on_failure": "continue",
                },
            ],
        },
    )
    base: dict[str, Any] = {
        "database": {"url": database_url},
        "mcp_servers": tool_server_config(),
        "auth": {
            "tokens": [
                {"name": "alice", "token": ALICE, "role": "admin", "team": "shop"},
                {"name": "bob", "token": BOB, "role": "admin"},
            ]
        },
    }
    project.settings({**base, **settings})
    return project


class LiveService(ServedApp):
    """`create_app` served by uvicorn in a thread, on a port of its own."""

    def __init__(self, config: Path) -> None:
        super().__init__(create_app(load_settings(config)))

    @property
    def service(self) -> Any:
        return self.app.state.service

    def client(self, token: str | None = ALICE) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def wait_for(client: httpx.Client, run_id: str, *, until: tuple[str, ...], timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        record: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if record["status"] in until:
            return record
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} is {record['status']}, not {until}")
        time.sleep(0.05)


def alert(service: str = "checkout", fingerprint: str = "a1b2c3d4e5f60718") -> dict[str, Any]:
    return alertmanager_payload(service=service, fingerprint=fingerprint)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    root = tmp_path_factory.mktemp("web")
    project = build_project(root / "project", f"sqlite:///{root / 'vectorstep.db'}")
    server = LiveService(project.config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium through Playwright (its own browser download cannot work offline)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
        )
        yield launched
        launched.close()


@contextlib.contextmanager
def signed_in_page(browser: Browser, url: str, token: str) -> Iterator[Page]:
    """A page of a fresh browser context, signed in with `token`, on the dashboard."""
    context = browser.new_context(base_url=url, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto("/ui/")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def signed_in(browser: Browser, live: LiveService) -> Iterator[Page]:
    """Alice, signed in to the module's live service."""
    with signed_in_page(browser, live.url, ALICE) as page:
        yield page
