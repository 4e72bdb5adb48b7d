"""Every shell block of README.md and docs/*.md marked `<!-- runnable -->` runs, offline, as written.

A marker is an HTML comment on the line right before the fence (GitHub does not show it):

    <!-- runnable in=PROJECT setup=A,B exit=N output=ignore -->

- `in`: where the block runs, a fresh temporary folder holding: `empty` (nothing; the default),
  `init` (a project made by `vectorstep init .`), `samples` (a copy of the repository's
  `samples/` as `samples/`), or a project of `tests/fixtures/docs/`.
- `setup`: scripts of that project's `setup/` folder (`A.py`, ...) run first, in order; what
  they leave is built once per test session and copied for each block.
- `exit`: the exit status the block ends with (0 by default).
- `output=ignore`: do not compare the output shown in a `console` block.

A `sh` block runs as one `bash -e` script. In a `console` block the lines starting with `$ ` are
the commands, each run when the one before succeeded, and every other line is output the commands must print: each line must appear,
compared by its shape (ids, numbers and dates masked, spaces collapsed), so a recorded output
stays true while ids and timings change.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = ROOT / "tests" / "fixtures" / "docs"
BIN = Path(sys.executable).parent
MARKER = re.compile(r"^<!-- runnable(?P<options>(?:\s+[\w-]+=\S+)*)\s*-->$")
FENCE = re.compile(r"^```(?P<kind>sh|console)\s*$")
TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class DocBlock:
    """A marked block: where it is, how it runs, and what it shows."""

    path: str
    line: int
    kind: str
    text: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    def script(self) -> str:
        if self.kind == "sh":
            return self.text
        # Each command line must succeed for the next to run; a line's own `;` keeps its meaning.
        commands = [line[2:] for line in self.text.splitlines() if line.startswith("$ ")]
        return " && ".join(f"{{ {command}\n}}" for command in commands)

    def expected_lines(self) -> list[str]:
        if self.kind != "console" or self.options.get("output") == "ignore":
            return []
        lines = [line for line in self.text.splitlines() if not line.startswith("$ ")]
        return [line for line in lines if line.strip() and line.strip() != "..."]


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def collect(path: Path) -> list[DocBlock]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for index, line in enumerate(lines):
        marker = MARKER.match(line.rstrip())  # at the start of a line: not an indented example
        if marker is None:
            continue
        where = f"{path.relative_to(ROOT)}:{index + 1}"
        fence = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        if fence is None:
            raise AssertionError(f"{where}: a runnable marker must be followed by a ```sh or ```console fence")
        end = next((i for i in range(index + 2, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise AssertionError(f"{where}: the fence is never closed")
        options = dict(option.split("=", 1) for option in marker.group("options").split())
        unknown = set(options) - {"in", "setup", "exit", "output"}
        if unknown:
            raise AssertionError(f"{where}: unknown marker options {sorted(unknown)}")
        text = "\n".join(lines[index + 2 : end])
        blocks.append(DocBlock(str(path.relative_to(ROOT)), index + 2, fence.group("kind"), text, options))
    return blocks


BLOCKS = [block for path in doc_files() for block in collect(path)]


def shape(line: str) -> str:
    """A line with what changes from run to run masked: ids, signed numbers, dates and times, spacing."""
    line = re.sub(r"\b[0-9a-f]{8,}\b", "<id>", line)
    line = re.sub(r"[+-]?\d+", "0", line)  # a difference's sign too: `-21 [-228, +166]`
    return " ".join(line.split())


def _environment(home: Path) -> dict[str, str]:
    keep = {"PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT"}
    environ = {name: value for name, value in os.environ.items() if name in keep}
    environ.update(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        HOME=str(home),
        USER="root",
        NO_COLOR="1",
        TERM="dumb",
        COLUMNS="250",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return environ


def _sh(command: str, cwd: Path, home: Path, *, errexit: bool = True) -> subprocess.CompletedProcess[str]:
    flags = ["-e", "-o", "pipefail"] if errexit else []
    return subprocess.run(
        ["bash", *flags, "-c", command],
        cwd=cwd,
        env=_environment(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


class Projects:
    """Project folders after their setup scripts, built once and copied for each block."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._built: dict[tuple[str, ...], Path] = {}

    def prepare(self, name: str, setup: tuple[str, ...], into: Path, home: Path) -> None:
        if name == "empty":
            return
        if name == "samples":
            shutil.copytree(ROOT / "samples", into / "samples", ignore=shutil.ignore_patterns("*.db", "__pycache__"))
            return
        if name == "init":
            shutil.copytree(self._state(name, (), home), into, dirs_exist_ok=True)
            return
        shutil.copytree(self._state(name, setup, home), into, dirs_exist_ok=True)

    def _state(self, name: str, setup: tuple[str, ...], home: Path) -> Path:
        key = (name, *setup)
        if key in self._built:
            return self._built[key]
        folder = self._root / "-".join(key)
        if setup:
            shutil.copytree(self._state(name, setup[:-1], home), folder)
            result = _sh(f"python setup/{shlex.quote(setup[-1])}.py", folder, home)
            assert result.returncode == 0, f"setup {setup[-1]} of {name} failed:\n{result.stdout}\n{result.stderr}"
        elif name == "init":
            folder.mkdir()
            result = _sh("vectorstep init .", folder, home)
            assert result.returncode == 0, result.stderr
        else:
            assert (PROJECTS / name).is_dir(), f"no project tests/fixtures/docs/{name}"
            shutil.copytree(PROJECTS / name, folder)
        self._built[key] = folder
        return folder


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Projects:
    return Projects(tmp_path_factory.mktemp("doc-projects"))


def test_runnable_blocks_are_found() -> None:
    kinds = {block.path for block in BLOCKS}
    assert "README.md" in kinds
    assert "docs/changing-prompts.md" in kinds


@pytest.mark.timeout(TIMEOUT_SECONDS * 3)
@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_doc_block_runs(block: DocBlock, projects: Projects, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    setup = tuple(name for name in block.options.get("setup", "").split(",") if name)
    projects.prepare(block.options.get("in", "empty"), setup, work, home)
    result = _sh(block.script(), work, home, errexit=block.kind == "sh")
    output = result.stdout + result.stderr
    expected_exit = int(block.options.get("exit", "0"))
    assert result.returncode == expected_exit, (
        f"{block.id}: exit {result.returncode}, expected {expected_exit}\n--- output ---\n{output}"
    )
    printed = {shape(line) for line in output.splitlines()}
    missing = [line for line in block.expected_lines() if shape(line) not in printed]
    assert not missing, f"{block.id}: lines the doc shows were not printed:\n" + "\n".join(
        [*missing, "--- output ---", output]
    )
