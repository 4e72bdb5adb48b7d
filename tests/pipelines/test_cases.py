"""End-to-end pipeline cases as data: each folder is run through `vectorstep run --json`.

A case folder holds `pipeline.yaml`, optional `payload.json`, `agents/`, `steps/` and `vectorstep.yaml`,
and `expected.yaml`: the exit code, and a subset of the run record (or text the output must contain).
A string expected value starting with `re:` is a regular expression searched in the actual value;
`gt:N` asks for a number greater than N. `show_contains` lists text `vectorstep runs show` must print.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import TOOL_SERVER, run_cli

CASES = sorted(path for path in Path(__file__).parent.iterdir() if (path / "expected.yaml").is_file())

DEFAULT_CONFIG = """\
database: {url: "sqlite:///./runs.db"}
pipelines_dir: ./pipelines
agents_dir: ./agents
steps_dir: ./steps
mcp_servers:
  tools: {command: "${VECTORSTEP_PYTHON}", args: ["${TOOL_SERVER}"]}
"""


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_pipeline_case(case: Path, tmp_path: Path) -> None:
    expected = YAML(typ="safe").load((case / "expected.yaml").read_text(encoding="utf-8"))
    workdir = tmp_path / case.name
    shutil.copytree(case, workdir)
    if not (workdir / "vectorstep.yaml").exists():
        (workdir / "vectorstep.yaml").write_text(DEFAULT_CONFIG, encoding="utf-8")
    args = ["run", "pipeline.yaml", "--config", "vectorstep.yaml"]
    if (workdir / "payload.json").exists():
        args += ["--payload", "payload.json"]
    if expected.get("json", True):
        args.append("--json")
    env = {"TOOL_SERVER": str(TOOL_SERVER)}
    result = run_cli(*args, cwd=workdir, env=env)
    context = f"exit {result.returncode}\nstdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}"
    assert result.returncode == expected["exit_code"], context
    for text in expected.get("stdout_contains", []):
        assert text in result.stdout, context
    for text in expected.get("stderr_contains", []):
        assert text in result.stderr, context
    assert "Traceback" not in result.stderr, context
    if "record" in expected:
        record = json.loads(result.stdout)
        assert_subset(expected["record"], record, "record")
        shown = run_cli("runs", "show", record["run_id"], "--json", "--config", "vectorstep.yaml", cwd=workdir, env=env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) == record  # what was printed is what was stored
        if expected.get("show_contains"):
            plain = run_cli("runs", "show", record["run_id"], "--config", "vectorstep.yaml", cwd=workdir, env=env)
            for text in expected["show_contains"]:
                assert text in plain.stdout, plain.stdout
            assert "(None)" not in plain.stdout, plain.stdout


def assert_subset(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a mapping, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} is missing (have {sorted(actual)})"
            assert_subset(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (
            f"{where}: expected {len(expected)} items, got {actual!r}"
        )
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            assert_subset(want, got, f"{where}[{index}]")
    elif isinstance(expected, str) and expected.startswith("gt:"):
        assert isinstance(actual, int | float) and actual > float(expected[3:]), f"{where}: {actual!r} !> {expected}"
    elif isinstance(expected, str) and expected.startswith("re:"):
        assert isinstance(actual, str) and re.search(expected[3:], actual, re.DOTALL), (
            f"{where}: {actual!r} !~ {expected}"
        )
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected), f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
