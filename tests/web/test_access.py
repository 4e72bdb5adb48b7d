"""Who may do what: every route × role × team, answered by a real service over HTTP (docs/security.md)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.conftest import LiveService, alert, build_project, wait_for
from vectorstep.testing import ProjectDir, answer

TOKENS = {
    "am-shop": ("intake", ["shop"], "am-shop-token-0123456789"),
    "viewer-shop": ("viewer", ["shop"], "viewer-shop-token-012345"),
    "op-shop": ("operator", ["shop"], "op-shop-token-0123456789"),
    "op-pay": ("operator", ["pay"], "op-pay-token-01234567890"),
    "admin-pay": ("admin", ["pay"], "admin-pay-token-01234567"),
}
# The specification (SYSTEM.md §16), written out rather than read from the code under test.
MAY = {
    "intake": {"intake"},
    "viewer": {"read"},
    "operator": {"read", "decide", "mark", "run"},
    "admin": {"intake", "read", "decide", "mark", "run", "reload", "configure"},
}
GOOD_PIPELINE = "name: fresh\nsteps:\n  - name: one\n    executor: gateway\n    executor_config: {agent: triage}\n"


def allowed(principal: str, action: str, team: str | None) -> bool:
    role, teams, _ = TOKENS[principal]
    return action in MAY[role] and (role == "admin" or team is None or team in teams)


def access_project(root: Path, database_url: str) -> ProjectDir:
    tokens = [
        {"name": name, "token": token, "role": role, "teams": teams} for name, (role, teams, token) in TOKENS.items()
    ]
    project = build_project(root, database_url, auth={"tokens": tokens})
    project.scripted_agent("pay-triage", answer(0.9, "payroll is late"))
    project.pipeline(
        "payroll",
        {
            "name": "payroll",
            "stage": "production",
            "team": "pay",
            "trigger": {"match": {"labels.service": "payroll"}},
            "steps": [{"name": "ask", "executor": "human", "executor_config": {"message": "Rerun payroll?"}}],
        },
    )
    return project


class World:
    """A service with one run and one pending approval of team shop, and the same of team pay."""

    def __init__(self, live: LiveService) -> None:
        self.live = live
        with self.api("am-shop") as intake:
            self.shop_run = intake.post("/webhook?source=alertmanager", json=alert()).json()["run_id"]
            shop_approval_run = intake.post("/webhook?source=alertmanager", json=alert("payments", "f0e1d2c3b4a59687"))
        with self.api("admin-pay") as admin:
            self.pay_run = admin.post("/api/pipelines/payroll/run").json()["run_id"]
            wait_for(admin, self.shop_run, until=("completed", "failed", "escalated"))
            wait_for(admin, shop_approval_run.json()["run_id"], until=("waiting",))
            wait_for(admin, self.pay_run, until=("waiting",))
            approvals = admin.get("/api/approvals").json()["approvals"]
        self.shop_approval = next(a["id"] for a in approvals if a["team"] == "shop")
        self.pay_approval = next(a["id"] for a in approvals if a["team"] == "pay")

    def api(self, principal: str) -> httpx.Client:
        return self.live.client(token=TOKENS[principal][2])

    @contextlib.contextmanager
    def ui(self, principal: str) -> Iterator[httpx.Client]:
        """A browser's client, signed in as `principal`."""
        with httpx.Client(base_url=self.live.url, timeout=30) as client:
            csrf = _csrf(client.get("/ui/login").text)
            signed_in = client.post("/ui/login", data={"token": TOKENS[principal][2], "csrf": csrf, "next": "/ui/"})
            assert signed_in.status_code == 303, signed_in.text
            yield client


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("access")
    project = access_project(root / "project", f"sqlite:///{root / 'vectorstep.db'}")
    live = LiveService(project.config)
    try:
        yield World(live)
    finally:
        live.stop()


# (method, path, body, action, whose) — `whose` is the team the target belongs to ("shop"/"pay"), or None.
API_ROUTES: list[tuple[str, str, Any, str, str | None]] = [
    ("GET", "/api/runs", None, "read", None),
    ("GET", "/api/runs/{shop_run}", None, "read", "shop"),
    ("GET", "/api/runs/{pay_run}", None, "read", "pay"),
    ("POST", "/api/runs/{shop_run}/feedback", {"label": "correct"}, "mark", "shop"),
    ("POST", "/api/runs/{pay_run}/feedback", {"label": "partial"}, "mark", "pay"),
    ("POST", "/api/runs/{shop_run}/steps/triage/feedback", {"label": "correct"}, "mark", "shop"),
    ("GET", "/api/approvals", None, "read", None),
    ("POST", "/api/approvals/{shop_approval}/reject", None, "decide", "shop"),
    ("POST", "/api/approvals/{pay_approval}/approve", None, "decide", "pay"),
    ("GET", "/api/pipelines", None, "read", None),
    ("GET", "/api/pipelines/incident", None, "read", None),
    ("GET", "/api/pipelines/payroll", None, "read", "pay"),
    ("GET", "/api/pipelines/incident/readiness", None, "read", None),
    ("GET", "/api/pipelines/payroll/readiness", None, "read", "pay"),
    ("POST", "/api/pipelines/validate", GOOD_PIPELINE, "configure", None),
    ("POST", "/api/pipelines/reload", None, "reload", None),
    ("POST", "/api/pipelines/sandbox/run", None, "run", None),
    ("POST", "/api/pipelines/payroll/run", None, "run", "pay"),
    ("POST", "/webhook?source=generic", {"pipeline": "sandbox", "summary": "x"}, "intake", None),
    ("GET", "/api/runs/{shop_run}/steps/triage/artifacts", None, "read", "shop"),
    ("GET", "/api/runs/{pay_run}/steps/ask/artifacts", None, "read", "pay"),
    ("GET", "/api/runs/{pay_run}/steps/ask/artifacts/report.md", None, "read", "pay"),
    ("GET", "/api/pipelines/incident/steps/triage/versions", None, "read", None),
    ("GET", "/api/pipelines/payroll/steps/ask/versions", None, "read", "pay"),
    ("GET", "/api/pipelines/payroll/steps/ask/versions/diff?a=00&b=11", None, "read", "pay"),
    ("GET", "/api/agents/triage/versions", None, "read", None),
    ("GET", "/metrics", None, "read", None),
    ("GET", "/api/openapi.json", None, "read", None),
    ("GET", "/api/docs", None, "read", None),
]


@pytest.mark.parametrize("principal", sorted(TOKENS))
def test_every_api_route_answers_each_role_and_team_as_specified(world: World, principal: str) -> None:
    wrong = []
    with world.api(principal) as client:
        for method, template, body, action, whose in API_ROUTES:
            path = template.format(**vars(world))
            if isinstance(body, str):
                answered = client.request(method, path, content=body, headers={"content-type": "application/yaml"})
            else:
                answered = client.request(method, path, json=body)
            expected = allowed(principal, action, whose)
            if (answered.status_code == 403) == expected or answered.status_code in (401, 500):
                wrong.append(f"{method} {template}: {answered.status_code} {answered.text[:120]}")
            if answered.status_code == 403:
                assert TOKENS[principal][2] not in answered.text
    assert not wrong, f"{principal}: " + "; ".join(wrong)


UI_ROUTES: list[tuple[str, str, dict[str, str] | None, str, str | None]] = [
    ("GET", "/ui/", None, "read", None),
    ("GET", "/ui/runs", None, "read", None),
    ("GET", "/ui/runs/{shop_run}", None, "read", "shop"),
    ("GET", "/ui/runs/{pay_run}", None, "read", "pay"),
    ("GET", "/ui/runs/{shop_run}/live", None, "read", "shop"),
    ("GET", "/ui/runs/{shop_run}/events", None, "read", "shop"),  # ended: the stream closes at once
    ("POST", "/ui/runs/{shop_run}/feedback", {"label": "correct"}, "mark", "shop"),
    ("POST", "/ui/runs/{pay_run}/feedback", {"label": "correct"}, "mark", "pay"),
    ("GET", "/ui/approvals", None, "read", None),
    ("GET", "/ui/approvals/{shop_approval}", None, "read", "shop"),
    ("GET", "/ui/approvals/{pay_approval}", None, "read", "pay"),
    ("POST", "/ui/approvals/{shop_approval}/decide", {"decision": "approve"}, "decide", "shop"),
    ("POST", "/ui/approvals/{pay_approval}/decide", {"decision": "reject"}, "decide", "pay"),
    ("GET", "/ui/pipelines", None, "read", None),
    ("GET", "/ui/pipelines/payroll", None, "read", "pay"),
    ("GET", "/ui/pipelines/incident/steps/triage/versions", None, "read", None),
    ("GET", "/ui/pipelines/payroll/steps/ask/versions", None, "read", "pay"),
    ("GET", "/ui/agents/triage/versions", None, "read", None),
    ("GET", "/ui/runs/{pay_run}/steps/ask/artifacts/report.md", None, "read", "pay"),
    ("POST", "/ui/pipelines/reload", {}, "reload", None),
    ("POST", "/ui/pipelines/sandbox/run", {}, "run", None),
    ("POST", "/ui/pipelines/payroll/run", {}, "run", "pay"),
]


@pytest.mark.parametrize("principal", ["viewer-shop", "op-shop", "op-pay", "admin-pay"])
def test_every_ui_page_and_form_answers_each_role_and_team_as_specified(world: World, principal: str) -> None:
    wrong = []
    with world.ui(principal) as client:
        csrf = _csrf(client.get("/ui/").text)
        for method, template, form, action, whose in UI_ROUTES:
            path = template.format(**vars(world))
            if method == "GET":
                answered = client.get(path, headers={"accept": "text/html"})
            else:
                answered = client.post(path, data={**(form or {}), "csrf": csrf})
            expected = allowed(principal, action, whose)
            if (answered.status_code == 403) == expected or answered.status_code in (401, 500):
                wrong.append(f"{method} {template}: {answered.status_code}")
    assert not wrong, f"{principal}: " + "; ".join(wrong)


def test_lists_hold_only_the_teams_runs_approvals_and_pipelines(world: World) -> None:
    def seen(principal: str) -> tuple[set[str], set[str | None], set[str]]:
        with world.api(principal) as client:
            runs = {run["run_id"] for run in client.get("/api/runs?limit=500").json()["runs"]}
            teams = {a["team"] for a in client.get("/api/approvals?status=all").json()["approvals"]}
            pipelines = {p["name"] for p in client.get("/api/pipelines").json()["pipelines"]}
        return runs, teams, pipelines

    shop_runs, shop_teams, shop_pipelines = seen("op-shop")
    pay_runs, pay_teams, pay_pipelines = seen("op-pay")
    all_runs, all_teams, all_pipelines = seen("admin-pay")
    assert world.shop_run in shop_runs and world.pay_run not in shop_runs and shop_teams == {"shop"}
    assert world.pay_run in pay_runs and world.shop_run not in pay_runs and pay_teams == {"pay"}
    assert {world.shop_run, world.pay_run} <= all_runs and {"shop", "pay"} <= all_teams
    assert "payroll" not in shop_pipelines and "payroll" in pay_pipelines and "incident" in shop_pipelines
    assert all_pipelines >= shop_pipelines | pay_pipelines
    with world.ui("op-shop") as client:
        page = client.get("/ui/runs").text
    assert world.shop_run[:8] in page and world.pay_run[:8] not in page


def test_a_team_token_cannot_start_another_teams_pipeline(world: World) -> None:
    with world.api("am-shop") as intake:
        named = intake.post("/webhook?source=generic", json={"pipeline": "payroll", "summary": "x"})
        matched = intake.post("/webhook?source=alertmanager", json=alert("payroll", "0a0b0c0d0e0f1011"))
    assert named.status_code == 422 and "payroll" not in named.json()["detail"].split("pipelines:")[1]
    assert matched.status_code == 422


def test_a_runs_team_is_its_pipelines_else_the_tokens(world: World) -> None:
    with world.api("admin-pay") as admin:
        assert admin.get(f"/api/runs/{world.shop_run}").json()["team"] == "shop"  # am-shop's alert
        assert admin.get(f"/api/runs/{world.pay_run}").json()["team"] == "pay"  # the payroll pipeline's


def test_an_intake_token_cannot_sign_in_to_the_ui(world: World) -> None:
    with httpx.Client(base_url=world.live.url, timeout=30) as client:
        csrf = _csrf(client.get("/ui/login").text)
        refused = client.post("/ui/login", data={"token": TOKENS["am-shop"][2], "csrf": csrf})
        assert refused.status_code == 403 and "may only post events" in refused.text
        assert client.get("/ui/").status_code == 303


def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(world: World) -> None:
    with world.ui("op-shop") as first, httpx.Client(base_url=world.live.url, timeout=30) as second:
        second.cookies = first.cookies  # the same cookie, elsewhere
        assert second.get("/ui/runs").status_code == 200
        out = first.post("/ui/logout", data={"csrf": _csrf(first.get("/ui/").text)})
        assert out.status_code == 303
        after = second.get("/ui/runs")
    assert after.status_code == 303 and after.headers["location"].startswith("/ui/login")


def test_pages_and_answers_carry_security_headers(world: World) -> None:
    with world.api("admin-pay") as client:
        for path in ["/ui/login", "/api/runs", "/health", "/ui/static/app.js"]:
            headers = client.get(path).headers
            assert headers["x-frame-options"] == "DENY", path
            assert headers["x-content-type-options"] == "nosniff", path
            assert headers["referrer-policy"] == "no-referrer", path
            policy = headers["content-security-policy"]
            assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy, path
            assert "frame-ancestors 'none'" in policy, path
        docs = client.get("/api/docs")
        assets = client.get("/api/docs/assets/swagger-ui-bundle.js")
    assert docs.status_code == 200 and "'unsafe-inline'" not in docs.headers["content-security-policy"]
    assert (
        "'sha256-" in docs.headers["content-security-policy"]
        and "https:" not in docs.headers["content-security-policy"]
    )
    assert "cdn" not in docs.text and "/api/docs/assets/swagger-ui-bundle.js" in docs.text  # works offline
    assert assets.status_code == 200 and "SwaggerUIBundle" in assets.text


def test_the_api_description_needs_a_token(world: World) -> None:
    with httpx.Client(base_url=world.live.url, timeout=30) as anonymous:
        assert anonymous.get("/api/openapi.json").status_code == 401
        to_sign_in = anonymous.get("/api/docs")
        assert to_sign_in.status_code == 303 and "/ui/login" in to_sign_in.headers["location"]
    with world.ui("viewer-shop") as browser:
        assert browser.get("/api/docs").status_code == 200
        assert browser.get("/api/openapi.json").status_code == 200  # what the page fetches, with the session


def test_rotating_a_token_ends_the_sessions_it_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VECTORSTEP_SESSION_SECRET", "a-fixed-secret-so-sessions-outlive-a-restart")
    database = f"sqlite:///{tmp_path / 'vectorstep.db'}"

    def configured(shop_token: str) -> ProjectDir:
        project = access_project(tmp_path / "project", database)
        tokens: list[dict[str, Any]] = [
            {"name": "op-shop", "token": shop_token, "role": "operator", "teams": ["shop"]},
            {"name": "op-pay", "token": TOKENS["op-pay"][2], "role": "operator", "teams": ["pay"]},
        ]
        project.settings({"database": {"url": database}, "auth": {"tokens": tokens}})
        return project

    before = LiveService(configured(TOKENS["op-shop"][2]).config)
    world = World.__new__(World)  # only to sign in: no runs needed
    world.live = before
    with world.ui("op-shop") as shop, world.ui("op-pay") as pay:
        cookies = {"op-shop": dict(shop.cookies), "op-pay": dict(pay.cookies)}
    before.stop()
    after = LiveService(configured("op-shop-rotated-token-98765").config)
    try:
        with httpx.Client(base_url=after.url, cookies=cookies["op-shop"], timeout=30) as rotated:
            assert rotated.get("/ui/runs").status_code == 303  # its token changed: signed out
        with httpx.Client(base_url=after.url, cookies=cookies["op-pay"], timeout=30) as unchanged:
            assert unchanged.get("/ui/runs").status_code == 200  # the restart alone ends nothing
    finally:
        after.stop()
