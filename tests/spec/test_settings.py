"""`vectorstep.yaml`: where it is found, relative paths, database URLs, unknown keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from vectorstep.errors import ConfigError
from vectorstep.spec.settings import find_config, load_settings, redact_url, resolve_database_url


def test_config_is_found_by_flag_then_environment_then_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag, from_env, local = (tmp_path / name for name in ("flag.yaml", "env.yaml", "vectorstep.yaml"))
    for path in (flag, from_env, local):
        path.write_text("{}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert find_config(flag, {"VECTORSTEP_CONFIG": str(from_env)}) == flag
    assert find_config(None, {"VECTORSTEP_CONFIG": str(from_env)}) == Path(str(from_env))
    assert find_config(None, {}) == local
    local.unlink()
    assert find_config(None, {}) is None  # the embedded defaults


def test_a_named_config_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        find_config(tmp_path / "missing.yaml", {})
    with pytest.raises(ConfigError, match="VECTORSTEP_CONFIG"):
        find_config(None, {"VECTORSTEP_CONFIG": str(tmp_path / "missing.yaml")})


def test_relative_paths_resolve_against_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir = tmp_path / "etc" / "vectorstep"
    config_dir.mkdir(parents=True)
    config = config_dir / "vectorstep.yaml"
    config.write_text(
        "database: {url: 'sqlite:///./data/runs.db'}\npipelines_dir: ./flows\nagents_dir: /opt/agents\n"
        "mcp_servers:\n  metrics: {command: python3, args: [tools/m.py]}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # somewhere else entirely
    settings = load_settings(config)
    assert settings.pipelines_dir == config_dir / "flows"
    assert settings.steps_dir == config_dir / "steps"
    assert settings.agents_dir == Path("/opt/agents")
    assert settings.database_url == f"sqlite:///{config_dir / 'data' / 'runs.db'}"
    server = settings.spec.mcp_servers["metrics"]
    assert getattr(server, "cwd", None) == str(config_dir)


def test_embedded_defaults_apply_without_a_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(None)
    assert settings.database_url == f"sqlite:///{tmp_path / 'vectorstep.db'}"
    assert settings.spec.limits.trace_tool_result_max_chars == 3000
    assert settings.spec.limits.max_agent_iterations == 20
    assert settings.spec.gateway.mode == "embedded"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u:p@db:5432/vs", "postgresql+asyncpg://u:p@db:5432/vs"),
        ("postgresql+asyncpg://db/vs", "postgresql+asyncpg://db/vs"),
        ("sqlite:////var/lib/vs.db", "sqlite:////var/lib/vs.db"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
    ],
)
def test_database_urls_get_an_async_driver(url: str, expected: str) -> None:
    assert resolve_database_url(url, Path("/base")) == expected


def test_unsupported_database_url_is_explained_without_its_password() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_database_url("mysql://admin:hunter2@db/vs", Path("/"))
    assert "hunter2" not in str(raised.value) and "mysql://admin:***@db/vs" in str(raised.value)
    assert redact_url("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"


def test_unknown_service_key_and_weak_token_are_rejected(tmp_path: Path) -> None:
    config = tmp_path / "vectorstep.yaml"
    config.write_text("databse: {url: x}\nauth:\n  tokens: [{name: am, token: short}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(config)
    messages = {problem.key_path: (problem.line, problem.message) for problem in raised.value.problems}
    assert messages["databse"][0] == 1 and "did you mean 'database'" in messages["databse"][1]
    assert messages["auth.tokens[0].token"][0] == 3


def test_token_roles_and_teams_are_checked_where_they_are_written(tmp_path: Path) -> None:
    config = tmp_path / "vectorstep.yaml"
    config.write_text(
        "auth:\n  tokens:\n"
        "    - {name: am, token: 'a-long-enough-token-1'}\n"
        "    - {name: ops, token: 'a-long-enough-token-2', role: operator, teams: [shop, pay]}\n"
        "    - {name: boss, token: 'a-long-enough-token-3', role: owner}\n"
        "    - {name: both, token: 'a-long-enough-token-4', team: shop, teams: [pay]}\n"
        "    - {name: blank, token: '                   '}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_settings(config)
    messages = {problem.key_path: (problem.line, problem.message) for problem in raised.value.problems}
    assert messages["auth.tokens[2].role"][0] == 5 and "operator" in messages["auth.tokens[2].role"][1]
    assert messages["auth.tokens[3]"][0] == 6 and "not both" in messages["auth.tokens[3]"][1]
    assert messages["auth.tokens[4].token"][0] == 7 and "blank" in messages["auth.tokens[4].token"][1]
    assert not any(key.startswith(("auth.tokens[0]", "auth.tokens[1]")) for key in messages)


def test_env_variables_fill_secrets_and_vectorstep_python_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "vectorstep.yaml"
    config.write_text(
        "auth:\n  tokens: [{name: am, token: '${AM_TOKEN}', team: sre}]\n"
        "mcp_servers:\n  m: {command: '${VECTORSTEP_PYTHON}', args: [x.py]}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("AM_TOKEN", "a-long-enough-secret-token")
    settings = load_settings(config)
    assert settings.spec.auth.tokens[0].token == "a-long-enough-secret-token"
    assert settings.spec.auth.tokens[0].role == "intake"  # a token without a role only posts events
    assert "a-long-enough-secret-token" not in repr(settings.spec.auth)
    assert getattr(settings.spec.mcp_servers["m"], "command", "").endswith(("python", "python3", "python3.11"))


def test_an_unsupported_database_is_located_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "vectorstep.yaml"
    config.write_text("pipelines_dir: ./p\ndatabase:\n  url: mysql://admin:hunter2@db/vs\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(config)
    (problem,) = raised.value.problems
    assert (problem.line, problem.key_path) == (3, "database.url")
    assert "unsupported database 'mysql'" in problem.message and "hunter2" not in problem.message


def test_a_missing_sqlite_folder_is_created(tmp_path: Path) -> None:
    import asyncio

    from vectorstep.store.database import connect
    from vectorstep.store.migrate import upgrade

    database = connect(f"sqlite:///{tmp_path / 'state' / 'deep' / 'runs.db'}")
    asyncio.run(upgrade(database))
    asyncio.run(database.dispose())
    assert (tmp_path / "state" / "deep" / "runs.db").exists()
