"""Replay in the browser: a form on the pipeline's replay page starts one, its page follows it to the report."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.dispatch.test_replay import HISTORY, replay_project, seed
from tests.fixtures.served_app import ServedApp
from vectorstep.spec.settings import load_settings
from vectorstep.web.app import create_app

ADMIN = "admin-token-0123456789"


@pytest.fixture
def replay_page(browser: Browser, tmp_path: Path) -> Iterator[tuple[Page, str]]:
    project = replay_project(tmp_path, settings={"auth": {"tokens": [{"name": "a", "token": ADMIN, "role": "admin"}]}})
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps an event loop running in this thread
        pool.submit(asyncio.run, seed(project, [*HISTORY[:3], HISTORY[5]])).result()
    served = ServedApp(create_app(load_settings(project.config)))
    context = browser.new_context(base_url=served.url, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto("/ui/pipelines/triage/replay")
    page.get_by_label("Token").fill(ADMIN)
    page.get_by_role("button", name="Sign in").click()
    try:
        yield page, served.url
    finally:
        context.close()
        served.stop()


def test_a_replay_started_from_the_form_ends_in_its_report(replay_page: tuple[Page, str]) -> None:
    page, _ = replay_page
    expect(page.get_by_role("heading", name="Replay a candidate on triage")).to_be_visible()
    page.get_by_label("Step").select_option("classify")
    page.get_by_label("another agent").check()
    page.get_by_label("Agent or model").fill("classifier-v2")
    page.get_by_role("button", name="Replay").click()
    expect(page).to_have_url(re.compile(r"/ui/replays/replay-"))
    expect(page.get_by_role("heading", name="Replay of triage/classify: agent classifier-v2")).to_be_visible(
        timeout=20_000
    )
    accuracy = page.locator("#replay-totals tr[data-measure=accuracy]")
    # Recorded: the three disk answers and one cpu answer marked correct; the candidate departs from the cpu one.
    expect(accuracy).to_contain_text("1.00")
    expect(accuracy).to_contain_text("0.75")
    expect(page.locator("#replay-samples tbody tr")).to_have_count(4)
    expect(page.locator("#replay-samples")).to_contain_text("differs")
    page.get_by_text("How is this measured?").click()
    expect(page.get_by_text("Human checks not asked: ok-by-oncall.")).to_be_visible()
    page.get_by_role("link", name=re.compile("^replay-")).first.click()
    expect(page.get_by_text("replay", exact=True).first).to_be_visible()
    page.goto("/ui/pipelines/triage/replay")
    expect(page.locator("#replays tbody tr")).to_have_count(1)


def test_a_refused_replay_keeps_the_form_and_says_why(replay_page: tuple[Page, str]) -> None:
    page, _ = replay_page
    page.get_by_label("another agent").check()
    page.get_by_label("Agent or model").fill("paging-agent")
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_role("alert")).to_contain_text("not in `replay.safe_agents`")
    expect(page.get_by_label("Agent or model")).to_have_value("paging-agent")
