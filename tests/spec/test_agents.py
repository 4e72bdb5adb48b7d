"""Agent folders: instructions, `soul.md`, scripts, and the version hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from vectorstep.errors import ConfigError
from vectorstep.spec.agent_files import load_agent, load_agents
from vectorstep.testing import ProjectDir, answer


def test_agent_loads_with_its_instructions_and_a_12_hex_version(project: ProjectDir) -> None:
    project.agent("triage", {"model": "scripted", "script": [answer(0.9)]}, instructions="You triage alerts.\n")
    agent = load_agent(project.root / "agents" / "triage")
    assert agent.name == "triage" and agent.instructions == "You triage alerts."
    assert len(agent.version) == 12 and int(agent.version, 16) >= 0


def test_soul_md_is_the_same_thing_as_instructions_md(project: ProjectDir) -> None:
    project.agent("a", {"model": "scripted", "script": [answer(0.9)]}, instructions="Be careful.")
    first = load_agent(project.root / "agents" / "a")
    folder = project.root / "agents" / "a"
    (folder / "instructions.md").rename(folder / "soul.md")
    second = load_agent(folder)
    assert second.instructions == "Be careful." and second.version == first.version


def test_both_instruction_files_is_an_error(project: ProjectDir) -> None:
    project.agent("a", {"model": "scripted", "script": [answer(0.9)]}, instructions="x")
    (project.root / "agents" / "a" / "soul.md").write_text("y", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"both instructions\.md and soul\.md"):
        load_agent(project.root / "agents" / "a")


def version_with(project: ProjectDir, instructions: str, **settings: object) -> str:
    data = {"model": "scripted", "script": [answer(0.9)], **settings}
    project.agent("v", data, instructions=instructions)
    return load_agent(project.root / "agents" / "v").version


def test_version_ignores_trailing_spaces_and_blank_edges_but_not_content(project: ProjectDir) -> None:
    base = version_with(project, "Line one\nLine two")
    assert version_with(project, "\n\nLine one   \nLine two\t\n\n") == base
    assert version_with(project, "Line one\r\nLine two") == base
    assert version_with(project, "Line one\nLine 2") != base
    assert version_with(project, "Line one\nLine two", max_tokens=1000) != base
    assert version_with(project, "Line one\nLine two", description="docs only") == base


def test_scripts_must_end_with_an_answer_and_only_scripted_models_have_one(project: ProjectDir) -> None:
    project.agent("a", {"model": "scripted", "script": [{"tool_calls": [{"name": "m__q"}]}]})
    project.agent("b", {"model": "openai/gpt-4.1", "script": [answer(0.9)]})
    project.agent("c", {"model": "scripted"})
    agents, problems = load_agents(project.root / "agents")
    assert agents == {}
    messages = " | ".join(problem.message for problem in problems)
    assert "last turn of a script must be an `answer`" in messages
    assert "only for `model: scripted`" in messages
    assert "needs a `script`" in messages


def test_agent_name_must_match_its_folder(project: ProjectDir) -> None:
    project.agent("triage", {"name": "triager", "model": "scripted", "script": [answer(0.9)]})
    with pytest.raises(ConfigError, match="differs from its folder"):
        load_agent(project.root / "agents" / "triage")


def test_tool_grants_combine_whole_servers_and_named_tools(tmp_path: Path) -> None:
    project = ProjectDir(tmp_path)
    project.agent(
        "a",
        {
            "model": "scripted",
            "script": [answer(0.9)],
            "tools": ["logs", {"metrics": ["query"]}, {"metrics": ["series"]}],
        },
    )
    grants = load_agent(tmp_path / "agents" / "a").spec.tool_grants()
    assert grants == {"logs": None, "metrics": frozenset({"query", "series"})}


def test_writing_the_folder_name_as_name_is_the_same_version(project: ProjectDir) -> None:
    project.agent("triage", {"model": "scripted", "script": [answer(0.9)]})
    implicit = load_agent(project.root / "agents" / "triage").version
    project.agent("triage", {"name": "triage", "model": "scripted", "script": [answer(0.9)]})
    assert load_agent(project.root / "agents" / "triage").version == implicit


def test_agent_reference_problems_name_their_line(project: ProjectDir) -> None:
    from vectorstep.spec.project import check_agents
    from vectorstep.spec.settings import load_settings

    project.agent(
        "a", "model: gpt-4\nmodel_fallbacks: [scripted, opnai/x]\ntools:\n  - metrics\n  - {logs: [search]}\n"
    )
    project.settings({"mcp_servers": {"metrics": {"command": "x"}}})
    agents, problems = load_agents(project.root / "agents")
    assert problems == []
    found = {(p.line, p.key_path) for p in check_agents(agents, load_settings(project.config))}
    assert found == {(1, "model"), (2, "model_fallbacks[1]"), (5, "tools[1]")}
