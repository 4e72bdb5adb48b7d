"""The `vectorstep` command as users type it: validate, runs list/show, db upgrade, output and exit codes."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import run_cli, tool_server_config
from vectorstep.cli.output import clipped
from vectorstep.store.migrate import HEAD_REVISION
from vectorstep.testing import ProjectDir, alertmanager_payload, answer


def small_project(project: ProjectDir) -> None:
    project.settings({"database": {"url": "sqlite:///./state/runs.db"}})
    (project.root / "state").mkdir(exist_ok=True)
    project.scripted_agent("triage", answer(0.9, "checkout 5xx confirmed"))
    project.pipeline(
        "checkout",
        {
            "name": "checkout",
            "context_template": {"include": ["summary"]},
            "steps": [
                {
                    "name": "triage",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "prompt_template": "Triage: {{ summary }}",
                }
            ],
        },
    )
    project.payload("alert", alertmanager_payload())


def test_validate_warns_where_a_value_would_become_shell_syntax(project: ProjectDir) -> None:
    small_project(project)
    checks = [
        {"name": "own-word", "type": "shell", "run": "kubectl get pod {{ steps.triage.pod }} -n shop"},
        {"name": "in-quotes", "type": "shell", "run": 'echo "pod: {{ steps.triage.pod }}"'},
        {"name": "evaluated", "type": "shell", "run": "eval {{ steps.triage.command }}"},
        {"name": "sub-shell", "type": "shell", "run": "bash -c {{ steps.triage.command }}"},
    ]
    step = {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}}
    project.pipeline("checks", {"name": "checks", "steps": [{**step, "deterministic_checks": checks}]})
    for target in (".", "pipelines/checks.yaml"):
        checked = run_cli("validate", target, cwd=project.root)
        assert checked.returncode == 0, checked.stdout  # a warning, not a problem
        warnings = [line for line in checked.stderr.splitlines() if "warning:" in line]
        assert [line.split(": warning: ")[0] for line in warnings] == [
            "pipelines/checks.yaml:6: steps[0].deterministic_checks[1].run",
            "pipelines/checks.yaml:7: steps[0].deterministic_checks[2].run",
            "pipelines/checks.yaml:8: steps[0].deterministic_checks[3].run",
        ], checked.stderr
        assert "inside the author's double quotes" in warnings[0] and "given to `eval`" in warnings[1]
        assert "given to `sh -c`" in warnings[2]


def test_validate_warns_when_a_catch_all_hides_the_pipelines_after_it(project: ProjectDir) -> None:
    small_project(project)
    step = {"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}}
    project.pipeline("a-everything", {"name": "everything", "trigger": {"match": {}}, "steps": [step]})
    project.pipeline("b-payments", {"name": "payments", "trigger": {"match": {"team": "pay"}}, "steps": [step]})
    checked = run_cli("validate", ".", cwd=project.root)
    assert checked.returncode == 0, checked.stdout
    assert "pipelines/a-everything.yaml:7: trigger.match: warning: `match: {}` takes every event" in checked.stderr
    assert checked.stderr.rstrip().endswith("never match one: payments")


def test_empty_answers_say_what_was_asked(project: ProjectDir) -> None:
    small_project(project)
    (project.root / "nothing").mkdir()
    none_of_them = run_cli("runs", "list", "--pipeline", "nope", cwd=project.root)
    nothing = run_cli("validate", "nothing", cwd=project.root)
    assert none_of_them.returncode == 0 and none_of_them.stdout.strip() == "no runs with pipeline nope"
    assert nothing.returncode == 2
    assert nothing.stderr.strip() == "nothing to validate: no pipeline, step, agent or vectorstep.yaml in nothing"
    # `validate .` in an empty folder (run on the embedded defaults) says the same.
    here = run_cli("validate", ".", cwd=project.root / "nothing")
    assert here.returncode == 2
    assert here.stderr.strip() == "nothing to validate: no pipeline, step, agent or vectorstep.yaml in ."


def test_validate_a_whole_project_and_single_files(project: ProjectDir) -> None:
    small_project(project)
    ok = run_cli("validate", ".", cwd=project.root)
    assert ok.returncode == 0 and ok.stdout.startswith("ok:"), ok.stderr
    (project.root / "pipelines" / "broken.yaml").write_text(
        "name: broken\nsteps:\n  - name: a\n    executor: gateway\n    executor_config: {agent: triage, modle: x}\n",
        encoding="utf-8",
    )
    bad = run_cli("validate", "pipelines/broken.yaml", "pipelines/checkout.yaml", cwd=project.root)
    assert bad.returncode == 2
    assert bad.stdout.splitlines() == [
        "pipelines/broken.yaml:5: steps[0].executor_config.modle: unknown key 'modle' (did you mean 'model'?); "
        "expected one of: agent, model, session_key, thinking_level, timeout_seconds, trace_max_chars"
    ]
    assert "1 problem(s) in 2 file(s)" in bad.stderr and "Traceback" not in bad.stderr
    # The whole project counts the file that did not load, too.
    files = int(ok.stdout.split()[1])
    whole = run_cli("validate", ".", cwd=project.root)
    assert f"1 problem(s) in {files + 1} file(s)" in whole.stderr, whole.stderr
    # A project folder on the embedded defaults (no vectorstep.yaml), validated from elsewhere, is a project.
    (project.root / "vectorstep.yaml").unlink(missing_ok=True)
    elsewhere = run_cli("validate", project.root.name, cwd=project.root.parent)
    assert "broken.yaml:5: steps[0].executor_config.modle" in elsewhere.stdout, elsewhere.stdout + elsewhere.stderr


def test_run_then_list_and_show_plain_when_piped(project: ProjectDir) -> None:
    small_project(project)
    run = run_cli("run", "checkout", "--payload", "alert.json", cwd=project.root)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[1].split() == ["step", "status", "S", "trust", "model", "tokens", "in/out", "duration"]
    assert lines[2].split()[:5] == ["triage", "completed", "0.90", "0.90", "scripted"]
    assert "\x1b[" not in run.stdout  # no colour codes in a pipe
    listed = run_cli("runs", "list", cwd=project.root)
    assert listed.returncode == 0 and "checkout" in listed.stdout and "completed" in listed.stdout
    run_id = lines[0].split()[1]
    shown = run_cli("runs", "show", run_id[:8], cwd=project.root)
    assert shown.returncode == 0 and "checkout 5xx confirmed" in shown.stdout
    assert "run_started" not in shown.stdout and "run of checkout started" in shown.stdout  # the log, readable
    as_json = json.loads(run_cli("runs", "list", "--json", cwd=project.root).stdout)
    assert [entry["run_id"] for entry in as_json] == [run_id]


def test_config_comes_from_the_environment_variable(project: ProjectDir, tmp_path: Path) -> None:
    small_project(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("run", "checkout", "--json", cwd=elsewhere, env={"VECTORSTEP_CONFIG": str(project.config)})
    assert result.returncode == 0, result.stderr
    assert (project.root / "state" / "runs.db").exists() and not (elsewhere / "vectorstep.db").exists()


def test_unknown_pipeline_and_run_ids_are_clear_errors(project: ProjectDir) -> None:
    small_project(project)
    missing = run_cli("run", "chekout", cwd=project.root)
    assert missing.returncode == 2 and "did you mean 'checkout'" in missing.stderr
    unknown_run = run_cli("runs", "show", "ffffffff", cwd=project.root)
    assert unknown_run.returncode == 2 and "no run 'ffffffff'" in unknown_run.stderr
    assert "Traceback" not in missing.stderr + unknown_run.stderr


def test_a_person_marks_a_run_and_a_step_and_marking_again_replaces(project: ProjectDir) -> None:
    small_project(project)
    run_id = json.loads(run_cli("run", "checkout", "--json", cwd=project.root).stdout)["run_id"]
    first = run_cli("mark", f"{run_id[:8]}/triage", "correct", "--by", "alice", cwd=project.root)
    again = run_cli(
        "mark", f"{run_id[:8]}/triage", "incorrect", "--comment", "wrong pod", "--by", "bob", cwd=project.root
    )
    whole = run_cli("mark", run_id[:8], "partial", "--by", "alice", cwd=project.root)
    no_step = run_cli("mark", f"{run_id[:8]}/nope", "correct", cwd=project.root)
    assert first.stdout.strip() == f"marked step triage of run {run_id[:12]} correct (by alice)"
    assert again.returncode == 0 and whole.stdout.strip() == f"marked run {run_id[:12]} partial (by alice)"
    assert no_step.returncode == 2 and "has no step 'nope'" in no_step.stderr
    with sqlite3.connect(project.root / "state" / "runs.db") as connection:
        steps = connection.execute("SELECT label, comment, marked_by FROM step_feedback ORDER BY id").fetchall()
        runs = connection.execute("SELECT label, marked_by FROM run_feedback").fetchall()
    assert steps == [("correct", None, "alice"), ("incorrect", "wrong pod", "bob")]  # history kept, the last counts
    assert runs == [("partial", "alice")]


def test_db_upgrade_reports_what_it_did(project: ProjectDir) -> None:
    small_project(project)
    first = run_cli("db", "upgrade", cwd=project.root)
    second = run_cli("db", "upgrade", cwd=project.root)
    assert first.returncode == 0 and f"upgraded from empty to revision {HEAD_REVISION}" in first.stdout
    assert second.returncode == 0 and "up to date" in second.stdout


def test_an_unreachable_database_is_an_error_without_a_traceback_or_password(project: ProjectDir) -> None:
    small_project(project)
    project.settings({"database": {"url": "postgresql://vs:s3cret-pw@127.0.0.1:1/vs"}})
    result = run_cli("run", "checkout", cwd=project.root)
    assert result.returncode == 2  # a setup mistake, like a bad file
    assert result.stderr.startswith("error: cannot reach the database postgresql+asyncpg://vs:***@127.0.0.1:1/vs: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "s3cret-pw" not in result.stderr and "Traceback" not in result.stderr


def test_the_demo_runs_offline_and_says_where_to_look(tmp_path: Path) -> None:
    result = run_cli("demo", cwd=tmp_path, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "status: completed" in result.stdout
    assert "status: escalated — step propose-remediation escalated" in result.stdout
    assert "Where to look next" in result.stdout and "vectorstep runs show" in result.stdout
    assert "serve --config " in result.stdout and "--database sqlite:///./vectorstep.db" in result.stdout
    served_with_the_samples(tmp_path)
    assert (tmp_path / "vectorstep.db").exists()
    listed = run_cli("runs", "list", "--json", "--limit", "100", cwd=tmp_path)
    runs = json.loads(listed.stdout)
    scenarios = [run for run in runs if not run["pipeline"].startswith("calibration-")]
    assert sorted(run["status"] for run in scenarios) == [
        "completed",
        "completed",
        "completed",
        "escalated",
        "escalated",
    ]
    # Calibration: 20 marked runs of each agent, then one judged by that history.
    judged = {run["pipeline"]: run for run in reversed(runs) if run["pipeline"].startswith("calibration-")}
    assert len([run for run in runs if run["pipeline"] == "calibration-oversold"]) == 21
    assert judged["calibration-oversold"]["status"] == "escalated"
    assert judged["calibration-honest"]["status"] == "completed"
    assert "(history: 20 production runs recorded and marked, 12 of them correct)" in result.stdout
    shown_calibration = json.loads(run_cli("calibration", "show", "--json", cwd=tmp_path).stdout)
    accuracy = {
        entry["bucket"]["executor_agent"]: entry["report"]["bins"][0]["accuracy"] for entry in shown_calibration
    }
    assert accuracy == {"gateway:disk-sizer": 0.6, "gateway:disk-sizer-careful": 0.9}
    assert "Trust (enforced) — authorise-remediation" in result.stdout
    assert "Grounding is enforced: trust became min(0.90, G) = 0.50." in result.stdout
    shown = json.loads(run_cli("runs", "show", runs[-1]["run_id"], "--json", cwd=tmp_path).stdout)
    investigate = next(step for step in shown["steps"] if step["name"] == "investigate")
    tool_results = [event for event in investigate["trace"] if event["type"] == "tool_result"]
    assert tool_results and all(not event["is_error"] for event in tool_results)


def test_init_makes_a_project_that_validates_and_runs_offline_at_once(tmp_path: Path) -> None:
    made = run_cli("init", "ops", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "ops"
    assert "next: cd ops && vectorstep run service-alert --payload payloads/checkout.json" in made.stdout
    assert (root / "vectorstep.yaml").stat().st_mode & 0o077 == 0  # its default token is the owner's alone
    checked = run_cli("validate", ".", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = run_cli("run", "service-alert", "--payload", "payloads/checkout.json", "--json", cwd=root)
    assert ran.returncode == 0, ran.stderr
    (step,) = json.loads(ran.stdout)["steps"]
    assert step["status"] == "completed" and step["grounding_score"] == 1.0  # its claims are in its tool's result
    (result,) = [event for event in step["trace"] if event["type"] == "tool_result"]
    assert '"error_ratio":0.042' in result["content"].replace(" ", "") and not result["is_error"]
    again = run_cli("init", "ops", cwd=tmp_path)
    assert (
        again.returncode == 2 and "vectorstep.yaml: already exists; `vectorstep init` never overwrites" in again.stderr
    )
    assert "Traceback" not in again.stderr


def test_tools_list_starts_each_server_and_shows_why_one_cannot_start(project: ProjectDir) -> None:
    project.scripted_agent("reader", answer(0.9), tools=["tools"])
    crashing = tool_server_config("broken", "--crash")
    project.settings({"database": {"url": "sqlite:///./runs.db"}, "mcp_servers": {**tool_server_config(), **crashing}})
    listed = run_cli("tools", "list", cwd=project.root)
    assert listed.returncode == 1  # a server cannot start
    assert "tools: " in listed.stdout and "granted to reader" in listed.stdout
    assert "  tools__echo  Return the text unchanged." in listed.stdout
    assert "broken: cannot start (granted to no agent)" in listed.stdout
    assert "cannot start: missing credentials" in listed.stdout  # the tail of its stderr
    as_json = json.loads(run_cli("tools", "list", "--json", cwd=project.root).stdout)
    assert {server["name"]: server["error"] is None for server in as_json} == {"tools": True, "broken": False}


def test_runs_watch_follows_a_run_another_process_drives_until_it_ends(project: ProjectDir) -> None:
    small_project(project)
    project.pipeline(
        "slow",
        {
            "name": "slow",
            "steps": [
                {
                    "name": "triage",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "confidence_threshold": 0.95,  # S is 0.9: the run escalates, exit code 3
                    "deterministic_checks": [{"name": "pause", "type": "shell", "run": "sleep 1.5"}],
                }
            ],
        },
    )
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VECTORSTEP_")}
    driving = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "run", "slow", "--payload", "alert.json"],
        cwd=project.root,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            listed = run_cli("runs", "list", "--json", cwd=project.root)
            found = json.loads(listed.stdout) if listed.returncode == 0 and listed.stdout.startswith("[") else []
            if found:
                break
            time.sleep(0.05)
        watched = run_cli("runs", "watch", found[0]["run_id"][:10], "--interval", "0.1", cwd=project.root)
    finally:
        driving.wait(timeout=60)
    assert watched.returncode == 3, watched.stderr  # the run's own exit code: escalated
    assert "step triage started (gateway)" in watched.stdout
    assert "status: escalated — step triage escalated" in watched.stdout
    assert watched.stdout.index("started") < watched.stdout.index("run escalated")


def test_the_shell_completes_pipeline_names_and_run_ids(project: ProjectDir) -> None:
    small_project(project)
    ran = run_cli("run", "checkout", "--payload", "alert.json", "--json", cwd=project.root)
    run_id = json.loads(ran.stdout)["run_id"]

    def complete(words: str) -> list[str]:
        env = {
            "_VECTORSTEP_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split(" ")) - 1),
        }
        return run_cli(cwd=project.root, env=env).stdout.split()

    assert complete("vectorstep run che") == ["plain,checkout"]
    assert complete(f"vectorstep runs show {run_id[:4]}") == [f"plain,{run_id}"]
    assert complete("vectorstep runs show zzz") == []


def served_with_the_samples(tmp_path: Path) -> None:
    """The demo's runs and the sample pipelines in one service, as the demo and the README say."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    samples = Path(__file__).parents[2] / "samples" / "vectorstep.yaml"
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VECTORSTEP_")}
    command = ["serve", "--config", str(samples), "--database", "sqlite:///./vectorstep.db", "--port", str(port)]
    serving = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", *command],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                runs = httpx.get(f"http://127.0.0.1:{port}/api/runs", params={"limit": 100}, timeout=2).json()["runs"]
                pipelines = httpx.get(f"http://127.0.0.1:{port}/api/pipelines", timeout=2).json()["pipelines"]
                break
            except httpx.HTTPError:
                time.sleep(0.1)
    finally:
        serving.terminate()
        serving.wait(timeout=20)
    assert {run["pipeline"] for run in runs} >= {"checkout-5xx", "trust-vector-remediation", "calibration-oversold"}
    assert {pipeline["name"] for pipeline in pipelines} >= {"checkout-5xx", "calibration-honest"}


def test_run_json_keeps_stdout_for_the_record_and_tells_progress_on_stderr(project: ProjectDir) -> None:
    small_project(project)
    ran = run_cli("run", "checkout", "--payload", "alert.json", "--json", cwd=project.root)
    assert json.loads(ran.stdout)["status"] == "completed"  # stdout is the record alone
    assert "triage (gateway)" in ran.stderr and "completed" in ran.stderr


def test_reasons_are_clipped_at_a_word_not_in_one() -> None:
    reason = "step investigate escalated: combined_trust 0.42 is below its confidence_threshold 0.75"
    assert clipped(reason, 60) == "step investigate escalated: combined_trust 0.42 is below…"
    assert clipped("short", 60) == "short" and len(clipped("x" * 80, 60)) == 60
