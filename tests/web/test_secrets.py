"""Secrets from `${VAR}` never shown: a marker planted everywhere a secret can be written is found nowhere.

The marker goes into a URL path and query, a header, a shell command, pipeline `vars` (so a
prompt), a notification channel's URL, an `on_failure` webhook's header and the provider key. Then
every page, API answer, metrics scrape, database row and log line is searched for it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RecordingServer, run_cli
from tests.fixtures.fake_providers import openai_text
from tests.web.conftest import LiveService
from vectorstep.testing import ProjectDir

MARKER = "zq7secret"
PLANTED = {
    "VS_HOOK_PATH": f"path-{MARKER}-a1",
    "VS_HOOK_QUERY": f"query-{MARKER}-b2",
    "VS_HEADER": f"header-{MARKER}-c3",
    "VS_SHELL": f"shell-{MARKER}-d4",
    "VS_VAR": f"vars-{MARKER}-e5",
    "VS_NOTIFY": f"notify-{MARKER}-f6",
    "VS_ON_FAILURE": f"onfail-{MARKER}-g7",
    "VS_PROVIDER_KEY": f"sk-{MARKER}-h8",
    "VS_NAMESPACE": "shop-public-namespace",  # listed in public_vars: shown as it is
}
TOKEN = "secrets-admin-token-0123456789"
ANSWER = {"confidence": 0.3, "summary": "checked", "next_step_context": ""}


def secret_project(root: Path, server: RecordingServer, database_url: str) -> ProjectDir:
    project = ProjectDir(root)
    project.agent("answerer", {"model": "openai/served-model", "max_tokens": 300}, instructions="Answer in JSON.")
    project.pipeline(
        "leaky",
        {
            "name": "leaky",
            "stage": "production",
            "vars": {"token": "${VS_VAR}", "namespace": "${VS_NAMESPACE}"},
            "notifications": {"escalate": [{"channel": "webhook", "template": "escalated in {{ vars.namespace }}"}]},
            "steps": [
                {
                    "name": "ask",
                    "executor": "gateway",
                    "executor_config": {"agent": "answerer"},
                    "prompt_template": "Use token {{ vars.token }} in {{ vars.namespace }}.",
                    "on_low_confidence": "proceed",
                    "deterministic_checks": [{"name": "echo", "type": "shell", "run": "echo ${VS_SHELL}"}],
                },
                {
                    "name": "call",
                    "executor": "webhook",
                    "executor_config": {
                        "url": f"{server.url}/hook/${{VS_HOOK_PATH}}?key=${{VS_HOOK_QUERY}}",
                        "headers": {"Authorization": "Bearer ${VS_HEADER}"},
                    },
                    "on_failure": {
                        "policy": "abort",  # the run fails: the escalate notification goes out
                        "webhook": {"url": f"{server.url}/failed", "headers": {"X-Key": "${VS_ON_FAILURE}"}},
                    },
                },
            ],
        },
    )
    project.settings(
        {
            "database": {"url": database_url},
            "providers": {"openai": {"api_key": "${VS_PROVIDER_KEY}", "base_url": f"{server.url}/v1"}},
            "notifications": {"webhook": {"url": f"{server.url}/notify/${{VS_NOTIFY}}"}},
            "auth": {"tokens": [{"name": "admin", "token": TOKEN, "role": "admin"}]},
            "public_vars": ["VS_NAMESPACE"],
        }
    )
    return project


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recording = RecordingServer()
    yield recording
    recording.close()


def _replies(server: RecordingServer) -> None:
    # the ask step, the webhook (its 500 fails the step), the on_failure webhook, the notification
    server.responses = [openai_text(json.dumps(ANSWER)), (500, '{"error": "down"}'), (200, "{}"), (200, "{}")]


def _rows(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for table in tables for row in connection.execute(f'SELECT * FROM "{table}"'))


def test_a_planted_secret_is_in_no_page_answer_scrape_or_row(
    planted: None, server: RecordingServer, tmp_path: Path
) -> None:
    database = tmp_path / "vectorstep.db"
    live = LiveService(secret_project(tmp_path / "project", server, f"sqlite:///{database}").config)
    _replies(server)
    try:
        with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as api:
            accepted = api.post("/webhook?source=generic", json={"pipeline": "leaky", "summary": "go"})
            assert accepted.status_code == 202, accepted.text
            run_id = accepted.json()["run_id"]
            record = _finished(api, run_id)
            shown = _everything_shown(api, live.url, run_id)
    finally:
        live.stop()
    sent = [request for request in server.requests if "/hook/" in request["path"]]
    assert PLANTED["VS_HOOK_PATH"] in sent[0]["path"] and PLANTED["VS_HEADER"] in sent[0]["headers"]["Authorization"]
    assert [step["status"] for step in record["steps"]] == ["completed", "failed"]
    assert MARKER not in shown, _around(shown)
    assert MARKER not in _rows(database), _around(_rows(database))
    assert "••••••" in shown and "shop-public-namespace" in shown  # masked where they were; public stays


def test_logs_at_debug_mask_secrets_from_libraries_too(planted: None, server: RecordingServer, tmp_path: Path) -> None:
    project = secret_project(tmp_path / "project", server, "sqlite:///./runs.db")
    _replies(server)
    result = run_cli("-v", "run", "leaky", "--json", cwd=project.root, env=dict(PLANTED))
    assert json.loads(result.stdout)["status"] == "failed", result.stderr[-2000:]  # the webhook step failed
    assert "HTTP Request: POST" in result.stderr  # httpx logged the requests, URLs and all
    assert MARKER not in result.stderr, _around(result.stderr)
    assert MARKER not in result.stdout, _around(result.stdout)
    assert MARKER not in _rows(project.root / "runs.db")


def _finished(api: httpx.Client, run_id: str) -> dict[str, Any]:
    for _ in range(600):
        record: dict[str, Any] = api.get(f"/api/runs/{run_id}").json()
        if record["status"] not in ("running", "pending"):
            return record
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


def _everything_shown(api: httpx.Client, url: str, run_id: str) -> str:
    texts = [
        api.get(path).text
        for path in (
            "/api/runs",
            f"/api/runs/{run_id}",
            "/api/pipelines",
            "/api/pipelines/leaky",
            "/api/approvals?status=all",
            "/metrics",
            "/api/openapi.json",
        )
    ]
    with httpx.Client(base_url=url, timeout=30) as browser:
        csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/ui/login").text)
        assert csrf is not None
        browser.post("/ui/login", data={"token": TOKEN, "csrf": csrf.group(1)})
        for path in ("/ui/", "/ui/runs", f"/ui/runs/{run_id}", "/ui/pipelines", "/ui/pipelines/leaky", "/ui/approvals"):
            page = browser.get(path)
            assert page.status_code == 200, path
            texts.append(page.text)
    return "\n".join(texts)


def _around(text: str) -> str:
    found = text.find(MARKER)
    return text[max(0, found - 300) : found + 100]
