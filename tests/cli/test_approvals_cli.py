"""Deciding from another terminal, and a restart in the middle of a wait."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import run_cli
from vectorstep.testing import ProjectDir, answer


def waiting_project(project: ProjectDir, *, stage: str = "production") -> None:
    project.settings({"database": {"url": "sqlite:///./runs.db"}})
    project.scripted_agent("planner", answer(0.9, "roll back 8f3a"))
    project.pipeline(
        "rollback",
        {
            "name": "rollback",
            "stage": stage,
            "steps": [
                {
                    "name": "plan",
                    "executor": "gateway",
                    "executor_config": {"agent": "planner"},
                    "deterministic_checks": [
                        {"type": "human", "name": "signoff", "message": "Roll back 8f3a?", "timeout_seconds": 3600}
                    ],
                },
                {
                    "name": "confirm",
                    "executor": "human",
                    "executor_config": {"message": "Done?", "timeout_seconds": 3600},
                },
            ],
        },
    )


def start_run(project: ProjectDir) -> subprocess.Popen[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VECTORSTEP_")}
    return subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "run", "rollback"],
        cwd=project.root,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def pending(project: ProjectDir, step: str = "plan", *, timeout: float = 30) -> list[dict[str, object]]:
    """The pending approvals once one for `step` is among them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = run_cli("approvals", "list", "--json", cwd=project.root)
        found = json.loads(listed.stdout) if listed.returncode == 0 else []
        if any(approval["step"] == step for approval in found):
            return found
        time.sleep(0.3)
    raise AssertionError(f"no pending approval for {step} appeared")


def test_a_decision_from_another_terminal_lets_the_waiting_run_go_on(project: ProjectDir) -> None:
    waiting_project(project)
    process = start_run(project)
    try:
        (first,) = pending(project)
        assert set(first) >= {"id", "run_id", "step", "message", "stage", "status", "created_at"}
        assert (first["step"], first["message"], first["status"]) == ("plan", "Roll back 8f3a?", "pending")
        approved = run_cli("approvals", "approve", str(first["id"])[:10], "--by", "alice", cwd=project.root)
        assert approved.returncode == 0 and "approved by alice" in approved.stdout
        assert "continues in the process that waits for it" in approved.stdout
        (second,) = pending(project, "confirm")
        rejected = run_cli("approvals", "reject", str(second["id"]), "--by", "bob", cwd=project.root)
        assert "rejected by bob" in rejected.stdout
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 3, err  # the person said no: escalated
    assert "waiting for a person — approval" in err and "vectorstep approvals approve" in err
    assert "confirm" in out and "escalated" in out


def test_a_restart_in_the_middle_of_a_wait(project: ProjectDir) -> None:
    waiting_project(project, stage="testing")
    process = start_run(project)
    (first,) = pending(project)
    process.send_signal(signal.SIGTERM)  # the process that waited is gone
    process.communicate(timeout=30)
    listed = json.loads(run_cli("runs", "list", "--json", cwd=project.root).stdout)
    assert listed[0]["status"] == "waiting"
    # Nobody drives the run any more: the one who decides continues it (and waits for the next person).
    approving = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "approvals", "approve", str(first["id"])],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (second,) = pending(project, "confirm")
        run_cli("approvals", "reject", str(second["id"]), cwd=project.root)
        out, err = approving.communicate(timeout=60)
    finally:
        approving.kill()
    assert "continuing run" in out, out + err
    assert approving.returncode == 3 and "escalated" in out  # the second person said no


def test_a_run_whose_process_died_hard_is_resumed_once_its_lease_ran_out(project: ProjectDir) -> None:
    waiting_project(project)
    process = start_run(project)
    (first,) = pending(project)
    process.kill()  # SIGKILL: no chance to say goodbye; its lease stays until it runs out
    process.communicate(timeout=30)
    approved = run_cli("approvals", "approve", str(first["id"]), cwd=project.root)
    assert "continues in the process that waits for it" in approved.stdout
    too_soon = run_cli("runs", "resume", str(first["run_id"])[:8], cwd=project.root)
    assert too_soon.returncode == 1 and too_soon.stdout.rstrip().endswith("nothing was resumed")  # its lease holds
    with sqlite3.connect(project.root / "runs.db") as connection:  # let the lease run out
        connection.execute("UPDATE pipeline_runs SET lease_expires_at = '2000-01-01 00:00:00'")
    resumed = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "runs", "resume", str(first["run_id"])[:8]],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (second,) = pending(project, "confirm")
        run_cli("approvals", "approve", str(second["id"]), cwd=project.root)
        out, err = resumed.communicate(timeout=60)
    finally:
        resumed.kill()
    assert resumed.returncode == 0, err
    assert "continuing run" in out and "completed" in out
    shown = json.loads(run_cli("runs", "show", str(first["run_id"]), "--json", cwd=project.root).stdout)
    assert shown["status"] == "completed" and [step["name"] for step in shown["steps"]] == ["plan", "confirm"]
    assert Path(project.root / "runs.db").exists()


def test_the_person_at_the_terminal_decides_by_typing(project: ProjectDir) -> None:
    import pty
    import select

    waiting_project(project)
    controller, terminal = pty.openpty()  # `vectorstep run` sees a real terminal
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VECTORSTEP_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "run", "rollback"],
        cwd=project.root,
        env={**environment, "TERM": "dumb", "COLUMNS": "200"},
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    seen = b""
    answered = 0
    deadline = time.monotonic() + 60
    try:
        while process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(controller, 4096)
                except OSError:
                    break
            if seen.count(b"Type y or n and Enter") > answered:
                os.write(controller, b"y\n" if answered == 0 else b"n\n")
                answered += 1
        process.wait(timeout=30)
    finally:
        process.kill()
        os.close(controller)
    text = seen.decode(errors="replace")
    assert answered == 2, text
    assert process.returncode == 3, text  # approved the plan at the prompt, then said no to `confirm`
    decided = json.loads(run_cli("approvals", "list", "--all", "--json", cwd=project.root).stdout)
    assert sorted(approval["status"] for approval in decided) == ["approved", "rejected"]
