"""`vectorstep versions` as users type it: a step's and an agent's versions, diffs, and clear mistakes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import run_cli
from vectorstep.testing import ProjectDir, alertmanager_payload, answer


def checkout(project: ProjectDir, prompt: str) -> None:
    project.pipeline(
        "checkout",
        {
            "name": "checkout",
            "stage": "production",
            "context_template": {"include": ["summary"]},
            "steps": [
                {
                    "name": "triage",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "prompt_template": prompt,
                }
            ],
        },
    )


def run(project: ProjectDir) -> str:
    ran = run_cli("run", "checkout", "--payload", "alert.json", "--json", cwd=project.root)
    assert ran.returncode == 0, ran.stderr
    return str(json.loads(ran.stdout)["run_id"])


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[ProjectDir, list[str]]:
    """Three runs: the first prompt; an edited prompt; the same prompt with the agent's instructions edited."""
    project = ProjectDir(tmp_path_factory.mktemp("versions") / "project")
    project.settings({"database": {"url": "sqlite:///./runs.db"}})
    project.payload("alert", alertmanager_payload())
    project.agent("triage", {"model": "scripted", "script": [answer(0.9, "checkout 5xx confirmed")]}, "Be brief.")
    checkout(project, "Triage: {{ summary }}")
    run_ids = [run(project)]
    marked = run_cli("mark", run_ids[0], "correct", "--by", "alice", cwd=project.root)
    assert marked.returncode == 0, marked.stderr
    checkout(project, "Triage: {{ summary }}\nSay which service is failing.")
    run_ids.append(run(project))
    project.agent("triage", {"model": "scripted", "script": [answer(0.9, "checkout 5xx confirmed")]}, "Be brief!")
    run_ids.append(run(project))
    return project, run_ids


def listed(project: ProjectDir, *args: str) -> dict[str, Any]:
    shown = run_cli("versions", *args, "--json", cwd=project.root)
    assert shown.returncode == 0, shown.stderr
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


def test_a_steps_versions_list_each_prompt_and_agent_version_with_its_runs(
    history: tuple[ProjectDir, list[str]],
) -> None:
    project, run_ids = history
    found = listed(project, "checkout/triage")
    first, second = found["prompt_versions"]
    assert first["text"] == "Triage: {{ summary }}" and first["runs"] == 1
    assert second["text"] == "Triage: {{ summary }}\nSay which service is failing." and second["runs"] == 2
    assert [run["run_id"] for run in second["recent_runs"]] == run_ids[:0:-1]
    assert first["calibration"]["n"] == 1 and first["calibration"]["accuracy"] == 1.0  # the marked run
    assert second["calibration"] is None
    old_agent, new_agent = found["agent_versions"]
    assert (old_agent["runs"], new_agent["runs"]) == (2, 1)
    assert "# instructions\nBe brief.\n" in old_agent["text"] and '"model": "scripted"' in old_agent["text"]

    plain = run_cli("versions", "checkout/triage", cwd=project.root)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0] == "checkout/triage: 2 prompt versions"
    assert lines[1].split()[:4] == ["version", "first", "seen", "(UTC)"]
    assert lines[2].split()[0] == first["hash"][:12] and lines[2].split()[-1] == "recorded"
    assert "100% (" in lines[2]
    assert "agent versions it ran with: 2" in plain.stdout
    assert f"--diff {first['hash'][:8]} {second['hash'][:8]}" in plain.stdout


def test_two_versions_are_compared_by_a_prefix_of_their_hashes(history: tuple[ProjectDir, list[str]]) -> None:
    project, _ = history
    first, second = listed(project, "checkout/triage")["prompt_versions"]
    compared = run_cli("versions", "checkout/triage", "--diff", first["hash"][:6], second["hash"][:6], cwd=project.root)
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.splitlines() == [
        f"--- checkout/triage {first['hash'][:12]}",
        f"+++ checkout/triage {second['hash'][:12]}",
        "@@ -1 +1,2 @@",
        " Triage: {{ summary }}",
        "+Say which service is failing.",
    ]
    old_agent, new_agent = listed(project, "--agent", "triage")["versions"]
    agents = run_cli("versions", "--agent", "triage", "--diff", old_agent["hash"], new_agent["hash"], cwd=project.root)
    assert "-Be brief.\n+Be brief!\n" in agents.stdout
    as_json = json.loads(
        run_cli(
            "versions",
            "--agent",
            "triage",
            "--diff",
            old_agent["hash"][:5],
            new_agent["hash"][:5],
            "--json",
            cwd=project.root,
        ).stdout
    )
    assert as_json["diff"].endswith("-Be brief.\n+Be brief!\n") and as_json["reason"] is None


def test_an_agents_versions_say_where_each_ran(history: tuple[ProjectDir, list[str]]) -> None:
    project, _ = history
    plain = run_cli("versions", "--agent", "triage", cwd=project.root)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == "triage: 2 versions"
    assert "ran in: checkout/triage (2)" in plain.stdout and "ran in: checkout/triage (1)" in plain.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["checkout/triag"], "no recorded versions of step 'checkout/triag' (did you mean 'checkout/triage'?)"),
        (
            ["chekout/triage"],
            "no recorded versions of pipeline 'chekout' (did you mean 'checkout'?); pipelines: checkout",
        ),
        (["--agent", "triag"], "no recorded versions of agent 'triag' (did you mean 'triage'?); agents: triage"),
        (["checkout"], "give the step as PIPELINE/STEP (for example incident/triage), not 'checkout'"),
        ([], "give a step as PIPELINE/STEP, or --agent NAME (one of them)"),
        (["checkout/triage", "--diff", "zzzz", "zzzz"], "no version 'zzzz' of checkout/triage"),
    ],
    ids=["step", "pipeline", "agent", "no-step", "nothing", "unknown-version"],
)
def test_mistakes_are_clear_and_exit_2(history: tuple[ProjectDir, list[str]], args: list[str], message: str) -> None:
    project, _ = history
    refused = run_cli("versions", *args, cwd=project.root)
    assert refused.returncode == 2, refused.stdout
    assert message in refused.stderr and "Traceback" not in refused.stderr
