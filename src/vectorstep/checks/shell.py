"""The `shell` check: run a command, then evaluate `expect` on its output and exit code.

Every `{{ }}` value in `run` is shell-quoted, so an agent's `; rm -rf /` is one literal argument;
`argv` runs without a shell at all. The command runs with VectorStep's own environment and
permissions (unsandboxed by design, see grounding.md); on timeout its whole process group is
killed, and output beyond a cap is read and dropped so the command never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from vectorstep.carriage import Uncarriable, checked_arguments
from vectorstep.domain.signals import CheckResult
from vectorstep.errors import TemplateError
from vectorstep.spec.trust_blocks import ShellCheckSpec
from vectorstep.templating import evaluate, looks_like_option, names_in, render_for_shell, render_strict

OUTPUT_CAP_BYTES = 64 * 1024
DEFAULT_EXPECT = "exit_code == 0"


async def run_shell_check(spec: ShellCheckSpec, context: Mapping[str, Any], cwd: Path | None = None) -> CheckResult:
    """Run in `cwd` (the folder of vectorstep.yaml), where relative paths in the command resolve."""
    started = time.monotonic()

    def result(passed: bool, detail: str) -> CheckResult:
        return CheckResult(spec.name, "shell", passed, detail, round((time.monotonic() - started) * 1000, 3))

    argv = _command(spec, context)
    if isinstance(argv, str):
        return result(False, argv)
    try:
        exit_code, stdout, stderr = await _execute(argv, spec.timeout_seconds, cwd)
    except TimeoutError:
        return result(False, f"timed out after {spec.timeout_seconds:g}s; its process group was killed")
    except OSError as error:
        return result(False, f"cannot start {argv[0]!r}: {error.strerror or error}")
    expect = spec.expect or DEFAULT_EXPECT
    if exit_code != 0 and (spec.expect is None or "exit_code" not in names_in(expect)):
        return result(False, f"exited with {exit_code}: {_tail(stderr or stdout)}")
    scope = {**context, "result": stdout.strip(), "exit_code": exit_code, "stderr": stderr.strip()}
    try:
        held = bool(evaluate(expect, scope))
    except TemplateError as error:
        return result(False, f"expect cannot be evaluated: {error} (result: {_tail(stdout)!r})")
    shown = f"result {_tail(stdout.strip())!r}, exit code {exit_code}"
    return result(held, f"`{expect}` {'held' if held else 'did not hold'}: {shown}")


def _command(spec: ShellCheckSpec, context: Mapping[str, Any]) -> list[str] | str:
    """The command to start, or why there is none."""
    try:
        return checked_arguments(_argv(spec, context))
    except TemplateError as error:
        return f"command cannot be rendered: {error}"
    except Uncarriable as refused:
        return f"command cannot be run: {refused}"


def _argv(spec: ShellCheckSpec, context: Mapping[str, Any]) -> list[str]:
    if spec.run is not None:
        return ["/bin/sh", "-c", render_for_shell(spec.run, context)]
    argv: list[str] = []
    for number, part in enumerate(spec.argv or []):
        rendered = render_strict(part, context)
        # As in `run:`, a value that is a whole argument may not smuggle in an option (after `--` it may).
        if part.lstrip().startswith("{{") and looks_like_option(rendered) and "--" not in argv:
            raise TemplateError(
                f"argument {number} starts with '-', so the program would read it as an option; "
                "put `--` before it in `argv` if the program takes that, or check the value"
            )
        argv.append(rendered)
    return argv


async def _execute(argv: list[str], timeout_seconds: float, cwd: Path | None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: a timeout kills the children too
    )
    # PIPE always gives both streams; their types cannot say so.
    stdout_stream = cast(asyncio.StreamReader, process.stdout)
    stderr_stream = cast(asyncio.StreamReader, process.stderr)
    try:
        async with asyncio.timeout(timeout_seconds):
            stdout, stderr, _ = await asyncio.gather(
                _read_capped(stdout_stream), _read_capped(stderr_stream), process.wait()
            )
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        _let_go_of_the_pipes(process)
        raise
    return process.returncode or 0, stdout, stderr


def _let_go_of_the_pipes(process: asyncio.subprocess.Process) -> None:
    """Close our ends of the output pipes, which a process that left the group (a daemon the command
    started) may hold open for ever: each such check would otherwise keep two descriptors. asyncio's
    Process has no public way to this; its transport does."""
    transport: asyncio.SubprocessTransport | None = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


async def _read_capped(stream: asyncio.StreamReader) -> str:
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < OUTPUT_CAP_BYTES:
            kept.extend(chunk[: OUTPUT_CAP_BYTES - len(kept)])
    return kept.decode("utf-8", errors="replace")


def _tail(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]
