"""Broken setups people really have: each is one clear line naming what is wrong, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from vectorstep.testing import ProjectDir, answer

PIPELINE = {"name": "p", "steps": [{"name": "s", "executor": "gateway", "executor_config": {"agent": "a"}}]}


def setup(root: Path, settings: str | None = None, *, agent_model: str = "scripted") -> ProjectDir:
    project = ProjectDir(root)
    project.agent("a", {"name": "a", "model": agent_model, "script": [{"answer": answer(0.9)}]})
    project.pipeline("p", PIPELINE)
    if settings is not None:
        (root / "vectorstep.yaml").write_text(settings, encoding="utf-8")
    return project


CASES = [
    ("yaml-syntax", "database: {url: [unclosed\n", ("validate", "."), "vectorstep.yaml"),
    ("unknown-key", "databse: {url: 'sqlite:///./x.db'}\n", ("validate", "."), "did you mean 'database'"),
    ("wrong-type", "limits: {max_concurrent_runs: many}\n", ("validate", "."), "limits.max_concurrent_runs"),
    ("unset-variable", "database: {url: '${NO_SUCH_DATABASE_URL}'}\n", ("runs", "list"), "NO_SUCH_DATABASE_URL"),
    (
        "unreachable-postgres",
        "database: {url: 'postgresql+asyncpg://vs:secret@127.0.0.1:9/vs'}\n",
        ("runs", "list"),
        "cannot reach the database",
    ),
    ("unknown-database", "database: {url: 'mysql://db/vs'}\n", ("runs", "list"), "database.url"),
    ("short-token", "auth: {tokens: [{name: a, token: short, role: admin}]}\n", ("serve",), "auth.tokens"),
    ("bad-bin-width", "calibration: {bin_width: 0.125}\n", ("validate", "."), "multiple of 0.01"),
    ("missing-config", None, ("--help",), ""),
]


@pytest.mark.parametrize(("settings", "command", "says"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_broken_setup_is_one_clear_error_without_a_traceback(
    tmp_path: Path, settings: str | None, command: tuple[str, ...], says: str
) -> None:
    project = setup(tmp_path / "project", settings)
    if settings is None:  # a --config that does not exist
        command = ("runs", "list", "--config", "nope.yaml")
        says = "nope.yaml"
    result = run_cli(*command, cwd=project.root, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert says in result.stderr + result.stdout
    assert "secret" not in result.stderr  # a password in a URL is never printed


def test_a_payload_that_is_not_json_and_an_agent_with_an_unknown_model_are_located(tmp_path: Path) -> None:
    project = setup(tmp_path / "project")
    (project.root / "alert.json").write_text("{not json", encoding="utf-8")
    bad_payload = run_cli("run", "p", "--payload", "alert.json", cwd=project.root)
    assert bad_payload.returncode == 2 and "alert.json" in bad_payload.stderr and "Traceback" not in bad_payload.stderr
    project.agent("a", {"name": "a", "model": "gpt-4o"})
    unknown_model = run_cli("validate", ".", cwd=project.root)
    said = unknown_model.stderr + unknown_model.stdout
    assert unknown_model.returncode == 2 and "agents/a/agent.yaml:" in said and "unknown model 'gpt-4o'" in said
    assert "Traceback" not in said


ALIAS_LADDER = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{below}'] * 10)}]\n" for below, name in zip("abcdef", "bcdefg", strict=True)
)
PAYLOADS = [
    ("json-nested-deep", "alert.json", b"[" * 100_000 + b"]" * 100_000, "alert.json: the payload nests"),
    ("json-not-utf8", "alert.json", b'{"summary": "\xff\xfe"}', "alert.json: the payload is not UTF-8 text"),
    ("json-huge-integer", "alert.json", b'{"n": 1' + b"0" * 5000 + b"}", "an integer of more than 4,300 digits"),
    ("json-nan", "alert.json", b'{"n": NaN}', "NaN is not a JSON number"),
    ("json-syntax", "alert.json", b'{\n "summary": "x",\n oops\n}', "alert.json:3: the payload is not JSON"),
    ("yaml-alias-ladder", "alert.yaml", ALIAS_LADDER.encode(), "expands to more than 100,000 values"),
    ("yaml-nested-deep", "alert.yaml", b"a: " + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    ("yaml-syntax", "alert.yaml", b"summary: [unclosed\n", "alert.yaml:2: invalid YAML"),
]


@pytest.mark.parametrize(
    ("name", "content", "says"), [case[1:] for case in PAYLOADS], ids=[case[0] for case in PAYLOADS]
)
def test_a_hostile_payload_file_is_one_clear_error_without_a_traceback(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    """`run --payload` reads a file within the bounds a webhook body is read within: however deep,
    long, mis-encoded or alias-laden it is, the answer is one line that names the file, exit 2."""
    project = setup(tmp_path / "project")
    (project.root / name).write_bytes(content)
    result = run_cli("run", "p", "--payload", name, cwd=project.root, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert says in result.stderr, result.stderr


def test_commands_that_only_read_history_need_no_secret_they_never_use(tmp_path: Path) -> None:
    settings = (
        "database: {url: 'sqlite:///./runs.db'}\n"
        "notifications: {slack: {bot_token: '${NO_SLACK_TOKEN_HERE}', channel: '#ops'}}\n"
    )
    project = setup(tmp_path / "project", settings)
    for command in (("runs", "list"), ("approvals", "list"), ("calibration", "show")):
        result = run_cli(*command, cwd=project.root)
        assert result.returncode == 0, (command, result.stderr)
    ran = run_cli("run", "p", cwd=project.root)  # a run may notify: there the variable is needed
    assert ran.returncode == 2 and "${NO_SLACK_TOKEN_HERE} is not set" in ran.stderr
