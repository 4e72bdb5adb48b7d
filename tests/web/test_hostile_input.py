"""Hostile alert payloads and agent answers, against a real service on SQLite and PostgreSQL.

Whatever a payload or an answer holds, a request gets a 4xx or is accepted, never a 500; an
accepted run is never an "internal error"; every run stays readable through the API and the UI.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import PG_ENV, RecordingServer, database_params, reset_postgres
from tests.fixtures.fake_providers import openai_text
from tests.fixtures.hostile import ALIAS_BOMB
from tests.web.conftest import LiveService
from vectorstep.domain.storable import LONE_SURROGATE, keepable_text
from vectorstep.testing import ProjectDir, answer
from vectorstep.web.limits import BodyLimit

TOKEN = "hostile-admin-token-0123456789"
ENDED = ("completed", "escalated", "failed", "aborted", "stopped")


@dataclass
class Hostile:
    live: LiveService
    provider: RecordingServer
    api: httpx.Client
    browser: httpx.Client

    def post(self, body: bytes, source: str = "generic") -> httpx.Response:
        headers = {"content-type": "application/json"}
        return self.api.post(f"/webhook?source={source}&allow_testing=true", content=body, headers=headers)

    def readable(self, run_id: str) -> dict[str, Any]:
        record = self.api.get(f"/api/runs/{run_id}")
        assert record.status_code == 200, record.text
        page = self.browser.get(f"/ui/runs/{run_id}")
        assert page.status_code == 200, page.text[:300]
        result: dict[str, Any] = record.json()
        return result

    def finished(self, run_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while True:
            record = self.readable(run_id)
            if record["status"] in ENDED:
                return record
            assert time.monotonic() < deadline, f"run {run_id} is still {record['status']}"
            time.sleep(0.05)


def hostile_project(root: Any, database_url: str, provider: RecordingServer) -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent("triage", answer(0.9, "looked at it"))
    project.agent("answerer", {"model": "openai/served-model", "max_tokens": 500}, instructions="Answer in JSON.")
    project.pipeline(
        "inbox",
        {
            "name": "inbox",
            "stage": "production",
            "steps": [{"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}}],
        },
    )
    project.pipeline(
        "acts",
        {
            "name": "acts",
            "stage": "production",
            "notifications": {"escalate": [{"channel": "log", "template": "{{ step_name }}: {{ escalation_reason }}"}]},
            "steps": [
                {"name": "decide", "executor": "gateway", "executor_config": {"agent": "answerer"}},
                {
                    "name": "act",
                    "executor": "webhook",
                    "on_failure": "continue",
                    "prompt_template": "{{ steps.decide.summary }} {{ steps.decide.arg }}",
                    "executor_config": {
                        "url": f"{provider.url}/hook/{{{{ steps.decide.path }}}}",
                        "headers": {"X-Value": "{{ steps.decide.header }}"},
                        "content_type": "text/plain",
                    },
                },
                {
                    "name": "check",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "deterministic_checks": [
                        {"name": "echo", "type": "shell", "run": "echo {{ steps.decide.arg }}"},
                        {"name": "argv", "type": "shell", "argv": ["echo", "{{ steps.decide.path }}"]},
                    ],
                },
            ],
        },
    )
    project.settings(
        {
            "database": {"url": database_url},
            "providers": {"openai": {"api_key": "sk-test", "base_url": f"{provider.url}/v1"}},
            "limits": {"llm_retry_attempts": 1},
            "auth": {"tokens": [{"name": "fuzzer", "token": TOKEN, "role": "admin"}]},
        }
    )
    return project


@pytest.fixture(scope="module", params=database_params())
def hostile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    root = tmp_path_factory.mktemp(f"hostile-{request.param}")
    if request.param == "sqlite":
        database_url = f"sqlite:///{root / 'vectorstep.db'}"
    else:
        database_url = os.environ[PG_ENV]
        asyncio.run(reset_postgres(database_url))
    provider = RecordingServer()
    live = LiveService(hostile_project(root / "project", database_url, provider).config)
    api = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    browser = httpx.Client(base_url=live.url, timeout=30)
    csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/ui/login").text)
    assert csrf is not None
    assert browser.post("/ui/login", data={"token": TOKEN, "csrf": csrf.group(1)}).status_code == 303
    try:
        yield Hostile(live, provider, api, browser)
    finally:
        api.close()
        browser.close()
        live.stop()
        provider.close()


def event(**fields: Any) -> bytes:
    return json.dumps({"pipeline": "inbox", "idempotency_key": uuid.uuid4().hex, **fields}).encode()


def test_values_no_database_can_hold_are_stored_escaped_and_shown(hostile: Hostile) -> None:
    body = event(summary="nul \u0000 and \udcff here", data={"labels": {"svc": "a\u0000b"}, "n": 10**300})
    accepted = hostile.post(body)
    assert accepted.status_code == 202, accepted.text
    record = hostile.finished(accepted.json()["run_id"])
    assert record["status"] == "completed"
    assert record["context"]["summary"] == "nul \\u0000 and \\udcff here"
    assert record["context"]["labels"] == {"svc": "a\\u0000b"}


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b'{"pipeline": "inbox", "summary": NaN}', 400, "NaN is not a JSON number"),
        (b'{"pipeline": "inbox", "data": {"x": -Infinity}}', 400, "-Infinity is not a JSON number"),
        (b'{"pipeline": "inbox", "data": {"n": ' + b"9" * 5000 + b"}}", 400, "not JSON this service accepts"),
        (b'{"pipeline": "inbox", "data": ' + b"[" * 100 + b"]" * 100 + b"}", 400, "deeper than 64"),
        (b'{"pipeline": "inbox", "data": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", 400, "deeper than 64"),
        (event(team="t" * 150), 400, "team is 150 characters; at most 100"),
        (event(idempotency_key="k" * 400), 400, "idempotency_key) is 400 characters"),
        (b"\xff\xfe not text", 400, "not UTF-8"),
        (b'{"pipeline": "inbox", "summary": "' + b"x" * 1_100_000 + b'"}', 413, "larger than 1,048,576 bytes"),
    ],
    ids=["nan", "infinity", "huge-int", "deep", "very-deep", "long-team", "long-key", "binary", "too-large"],
)
def test_bodies_beyond_bounds_are_4xx_that_say_why(hostile: Hostile, body: bytes, status: int, says: str) -> None:
    answered = hostile.post(body)
    assert answered.status_code == status, answered.text[:300]
    assert says in answered.json()["detail"]


def test_a_body_sent_in_chunks_is_refused_once_it_passes_the_limit(hostile: Hostile) -> None:
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"pipeline": "inbox", "summary": "'
        for _ in range(200):  # 12.8 MB if it were all read
            sent += 65536
            yield b"x" * 65536
        yield b'"}'

    answered = hostile.api.post(
        "/webhook?source=generic", content=chunks(), headers={"content-type": "application/json"}
    )
    assert answered.status_code == 413 and "larger than 1,048,576 bytes" in answered.json()["detail"]


json_text = st.text(st.characters(exclude_categories=()), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | json_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(json_text, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    summary=json_text,
    team=st.none() | json_text,
    labels=st.dictionaries(json_text, json_text, max_size=3),
    data=json_values,
)
def test_fuzzed_events_never_answer_5xx_and_accepted_runs_are_readable(
    hostile: Hostile, summary: str, team: str | None, labels: dict[str, str], data: Any
) -> None:
    payload = {"summary": summary, "team": team, "data": {"labels": labels, "extra": data}}
    answered = hostile.post(event(**payload) if _encodable(payload) else json.dumps(payload, allow_nan=True).encode())
    assert answered.status_code < 500, answered.text[:300]
    if answered.status_code == 202:
        record = hostile.readable(answered.json()["run_id"])
        assert not (record.get("error") or "").startswith("internal error")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    summary=json_text,
    path=json_text,
    header=json_text,
    arg=json_text,
    confidence=st.floats(allow_nan=True, allow_infinity=True) | st.just(0.9),
    extra=json_values,
)
def test_fuzzed_agent_answers_fail_closed_and_never_lose_the_run(
    hostile: Hostile, summary: str, path: str, header: str, arg: str, confidence: float, extra: Any
) -> None:
    reply = {"confidence": confidence, "summary": summary, "next_step_context": "", "path": path, "header": header}
    reply |= {"arg": arg, "extra": extra}
    hostile.provider.responses = [openai_text(json.dumps(reply, allow_nan=True))]
    alert = {"pipeline": "acts", "idempotency_key": uuid.uuid4().hex, "summary": "act on it"}
    accepted = hostile.post(json.dumps(alert).encode())
    assert accepted.status_code == 202, accepted.text
    record = hostile.finished(accepted.json()["run_id"])
    assert not (record.get("error") or "").startswith("internal error"), record["error"]
    assert [step["name"] for step in record["steps"]][:1] == ["decide"]
    for step in record["steps"]:
        assert not (step.get("error") or "").startswith("the executor failed unexpectedly"), step["error"]


def _encodable(value: Any) -> bool:
    """Plain JSON (no NaN or Infinity)? Else the body is sent as Python writes it, to be refused."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def test_a_yaml_alias_bomb_sent_to_validate_is_refused_at_once(hostile: Hostile) -> None:
    started = time.monotonic()
    answered = hostile.api.post(
        "/api/pipelines/validate", content=ALIAS_BOMB, headers={"content-type": "application/yaml"}
    )
    assert time.monotonic() - started < 3
    assert answered.status_code == 422
    assert "expands to more than 100,000 values" in answered.json()["problems"][0]["message"]
    assert hostile.api.get("/health").status_code == 200


HOSTILE_TEXT = ["a\u0000b", "x" * 5000, "\udcff", "' OR 1=1 --", "%"]


@pytest.mark.parametrize("value", HOSTILE_TEXT, ids=["nul", "long", "lone-surrogate", "quote", "percent"])
def test_hostile_filters_and_names_in_urls_find_nothing_and_never_fail(hostile: Hostile, value: str) -> None:
    """A NUL, an unpaired surrogate or a value longer than any column, in a filter or a path, is a page
    that finds only what holds exactly that value, or a 4xx: PostgreSQL refuses a NUL in text, and
    that must not become a 500; a `%` is no wildcard."""
    encoded = quote(value, safe="", errors="surrogatepass")
    hostile.post(event(summary="a run of a hostile team", team=value))  # refused or kept: either way
    for name in ("pipeline", "team", "status", "stage"):
        listed = hostile.api.get(f"/api/runs?{name}={encoded}")
        assert listed.status_code in (200, 400, 422), (name, listed.status_code, listed.text[:200])
        if listed.status_code == 200:  # only runs that hold exactly that value, as it is kept (escaped)
            runs = listed.json()["runs"]
            assert all(run[name] == keepable_text(value) for run in runs), (name, runs[:1])
    for path in ("/ui/runs", "/ui/approvals", "/ui/calibration", "/ui/marking", "/ui/insights"):
        for name in ("pipeline", "team", "status", "step", "period", "by"):
            page = hostile.browser.get(f"{path}?{name}={encoded}")
            assert page.status_code < 500, (path, name, page.status_code, page.text[:200])
    for path in (
        "/api/runs/",
        "/ui/runs/",
        "/ui/pipelines/",
        "/ui/approvals/",
        "/api/approvals/",
    ):
        client = hostile.api if path.startswith("/api") else hostile.browser
        page = client.get(path + encoded)
        assert page.status_code in (404, 422), (path, page.status_code, page.text[:200])
    # An insights page of a name nothing was recorded under is an empty page.
    assert hostile.browser.get(f"/ui/insights/step/{encoded}").status_code == 200


@pytest.mark.parametrize("value", HOSTILE_TEXT, ids=["nul", "long", "lone-surrogate", "quote", "percent"])
def test_hostile_names_in_marks_and_decisions_are_4xx_or_kept_escaped(hostile: Hostile, value: str) -> None:
    """A mark on a step no run has, or a decision on an approval that does not exist, is a 404 whatever
    the name holds; a comment is kept whatever it holds, and one that is not text at all (a lone
    surrogate) is a 422 that names the field, never a 500."""
    accepted = hostile.post(event(summary="mark me"))
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    hostile.finished(run_id)
    encoded = quote(value, safe="", errors="surrogatepass")
    step = hostile.api.post(f"/api/runs/{run_id}/steps/{encoded}/feedback", json={"label": "correct"})
    assert step.status_code in (404, 422), (step.status_code, step.text[:200])
    for verb in ("approve", "reject"):
        decided = hostile.api.post(f"/api/approvals/{encoded}/{verb}")
        assert decided.status_code in (404, 422), (verb, decided.status_code, decided.text[:200])
    comment = value[:4000]
    marked = hostile.api.post(
        f"/api/runs/{run_id}/feedback",
        content=json.dumps({"label": "partial", "comment": comment}).encode(),
        headers={"content-type": "application/json"},
    )
    if LONE_SURROGATE.search(comment):  # not text at all: refused, saying where
        assert marked.status_code == 422, marked.text[:200]
        assert marked.json()["detail"][0]["loc"] == ["body", "comment"]
    else:
        assert marked.status_code == 201, marked.text[:200]
        assert marked.json()["comment"] == comment
    assert hostile.readable(run_id)["status"] == "completed"


@pytest.mark.parametrize("value", HOSTILE_TEXT, ids=["nul", "long", "lone-surrogate", "quote", "percent"])
def test_hostile_values_in_the_uis_forms_are_4xx_or_kept_escaped(hostile: Hostile, value: str) -> None:
    """The UI's forms take what a person types: a mark's step and comment, a decision, a manual
    run's summary, a replay's step and candidate, a sign-in token. Whatever they hold, the answer is
    a page, a redirect or a 4xx that says why, never a 500, and the run marked stays readable."""
    accepted = hostile.post(event(summary="mark me in the UI"))
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    hostile.finished(run_id)
    page = hostile.browser.get(f"/ui/runs/{run_id}")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    csrf = found.group(1)
    # A form body is bytes: a lone surrogate arrives as the bytes that encode it, which are not UTF-8.
    encoded = quote(value, safe="", errors="surrogatepass")

    def form(path: str, **fields: str) -> httpx.Response:
        body = "&".join(f"{key}={quote(text, safe='', errors='surrogatepass')}" for key, text in fields.items())
        headers = {"content-type": "application/x-www-form-urlencoded"}
        return hostile.browser.post(path, content=f"csrf={csrf}&{body}".encode(), headers=headers)

    answers = {
        "mark a hostile step": form(f"/ui/runs/{run_id}/feedback", label="correct", step=value),
        "mark with a hostile comment": form(f"/ui/runs/{run_id}/feedback", label="partial", comment=value),
        "mark with a hostile label": form(f"/ui/runs/{run_id}/feedback", label=value),
        "mark from a hostile page": form(f"/ui/runs/{run_id}/feedback", label="partial", back=value),
        "decide a hostile approval": form(f"/ui/approvals/{encoded}/decide", decision="approve"),
        "decide hostilely": form(f"/ui/approvals/{encoded}/decide", decision=value),
        "run with a hostile summary": form("/ui/pipelines/inbox/run", summary=value),
        "replay a hostile step": form("/ui/pipelines/acts/replay", kind="model", candidate="scripted", step=value),
        "replay a hostile candidate": form("/ui/pipelines/acts/replay", kind="agent", candidate=value, step="decide"),
        "replay a hostile prompt": form("/ui/pipelines/acts/replay", kind="prompt", prompt=value, step="decide"),
        "replay a hostile k": form("/ui/pipelines/acts/replay", kind="model", candidate="scripted", k=value),
        "sign in with a hostile token": form("/ui/login", token=value, next=value),
    }
    statuses = {what: answer.status_code for what, answer in answers.items()}
    assert statuses == {
        "mark a hostile step": 404,  # no step of the run has that name
        "mark with a hostile comment": 303,  # kept, as the person wrote it (escaped where it must be)
        "mark with a hostile label": 400,
        "mark from a hostile page": 303,  # back to the run: never to an address the form names
        "decide a hostile approval": 404,
        "decide hostilely": 400,
        "run with a hostile summary": 303,
        "replay a hostile step": 400,
        "replay a hostile candidate": 400,
        "replay a hostile prompt": 400,
        "replay a hostile k": 400,
        "sign in with a hostile token": 401,
    }, {what: answer.text[:200] for what, answer in answers.items()}
    assert answers["mark from a hostile page"].headers["location"] == f"/ui/runs/{run_id}"
    started = answers["run with a hostile summary"].headers["location"].rsplit("/", 1)[1]
    assert hostile.finished(started)["status"] in ENDED
    assert hostile.readable(run_id)["status"] == "completed"


def test_numbers_json_has_not_in_an_api_body_are_a_422_naming_the_field_or_kept_as_text(hostile: Hostile) -> None:
    """The body parser lets `NaN` and `±Infinity` through; where a field wants text they are a 422
    that names it (FastAPI's own answer could not write them and was a 500), and in free data a run
    keeps them as text."""
    accepted = hostile.post(event(summary="mark me"))
    run_id = accepted.json()["run_id"]
    hostile.finished(run_id)
    json_headers = {"content-type": "application/json"}
    for path, body, field in [
        ("/api/pipelines/inbox/run", b'{"summary": NaN}', ["body", "summary"]),
        ("/api/pipelines/inbox/run", b'{"severity": Infinity}', ["body", "severity"]),
        ("/api/pipelines/inbox/run", b'{"labels": {"service": -Infinity}}', ["body", "labels", "service"]),
        (f"/api/runs/{run_id}/feedback", b'{"label": "correct", "comment": NaN}', ["body", "comment"]),
    ]:
        answer = hostile.api.post(path, content=body, headers=json_headers)
        assert answer.status_code == 422, (path, body, answer.status_code, answer.text[:200])
        assert answer.json()["detail"][0]["loc"] == field
    started = hostile.api.post("/api/pipelines/inbox/run", content=b'{"data": {"ratio": NaN}}', headers=json_headers)
    assert started.status_code == 202, started.text[:200]
    assert hostile.finished(started.json()["run_id"])["status"] in ENDED


@pytest.mark.parametrize(
    "declared", [b"9" * 5000, b"1" + b"0" * 30, b"1048577"], ids=["5000-digits", "31-digits", "limit+1"]
)
def test_a_declared_length_beyond_the_limit_is_a_413_however_many_digits_it_has(declared: bytes) -> None:
    # The HTTP server in front may pass any Content-Length through: the limit reads it without failing.
    sent: list[dict[str, Any]] = []

    async def never_called(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a body declared too large reached the application")

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "headers": [(b"content-length", declared)]}
    asyncio.run(BodyLimit(never_called)(scope, receive, send))
    assert sent[0]["status"] == 413
    assert b"larger than 1,048,576 bytes" in sent[1]["body"]
