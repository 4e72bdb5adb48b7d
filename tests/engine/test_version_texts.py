"""What a step's record carries for version history: the template it rendered, and the definition of the
agent version that ran — only when the loaded agent is that version (a remote gateway's may differ)."""

from __future__ import annotations

from vectorstep.engine.services import Engine
from vectorstep.intake.generic import manual_context
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import load_settings
from vectorstep.testing import FakeClock, ProjectDir, answer

TEMPLATE = "Triage {{ context.summary }}"


def project_with(project: ProjectDir, instructions: str) -> Project:
    project.agent("triage", {"model": "scripted", "script": [answer(0.9, "done")]}, instructions)
    project.agent("broken", {"model": "scripted", "script": [{"answer": "no JSON at all"}]})
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {"name": "skipped", "executor": "gateway", "executor_config": {"agent": "triage"}, "when": "false"},
                {
                    "name": "triage",
                    "executor": "gateway",
                    "executor_config": {"agent": "triage"},
                    "prompt_template": TEMPLATE,
                },
                {
                    "name": "unreadable",
                    "executor": "gateway",
                    "executor_config": {"agent": "broken"},
                    "on_failure": "continue",
                },
            ],
        },
    )
    project.settings({})
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    return loaded


async def test_a_step_carries_its_template_and_the_definition_of_the_agent_version_that_ran(
    project: ProjectDir,
) -> None:
    loaded = project_with(project, "Be brief.")
    async with Engine(loaded, clock=FakeClock()) as engine:
        record = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
    skipped, triage, unreadable = record.steps
    assert skipped.version_texts is None  # it ran nothing
    assert triage.version_texts is not None
    assert triage.version_texts.prompt_template == TEMPLATE
    assert triage.version_texts.agent_definition == loaded.agents["triage"].definition
    assert "# instructions\nBe brief.\n" in triage.version_texts.agent_definition
    assert unreadable.status.value == "failed" and unreadable.version_texts is not None  # its prompt went out
    assert unreadable.version_texts.prompt_template == ""


async def test_an_agent_that_differs_from_the_loaded_one_has_no_definition(project: ProjectDir) -> None:
    ran = project_with(project, "Be brief.")
    edited = project_with(project, "Be thorough.")  # the loaded copy moved on; the runtime still runs the old one
    runtime = EmbeddedRuntime(ran.agents, ran.settings.spec, clock=FakeClock(), base_dir=ran.settings.base_dir)
    async with Engine(edited, clock=FakeClock(), runtime=runtime) as engine:
        record = await engine.run(edited.pipelines["p"].spec, manual_context(FakeClock().now()))
    triage = record.steps[1]
    assert triage.agent_version == ran.agents["triage"].version != edited.agents["triage"].version
    assert triage.version_texts is not None and triage.version_texts.agent_definition is None
    assert triage.version_texts.prompt_template == TEMPLATE
