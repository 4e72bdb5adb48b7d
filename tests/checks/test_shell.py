"""The shell check: hostile values stay one argument, timeouts kill the whole group, fail-closed."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from vectorstep.checks.shell import OUTPUT_CAP_BYTES, run_shell_check
from vectorstep.spec.trust_blocks import ShellCheckSpec
from vectorstep.templating import NamedMapping

# Values an agent might put in its answer, by accident or because it was prompt-injected.
HOSTILE = [
    "; touch {canary}",
    "&& touch {canary}",
    "|| touch {canary}",
    "| tee {canary}",
    "$(touch {canary})",
    "`touch {canary}`",
    "'; touch {canary}; echo '",
    '"; touch {canary}; echo "',
    "\\'; touch {canary} #",
    "\ntouch {canary}",
    "\r\ntouch {canary}",
    "> {canary}",
    ">> {canary}",
    "< /etc/passwd",
    "& touch {canary} &",
    "$HOME ${{HOME}} $((1+1))",
    "*",
    "~root",
    "-rf --no-preserve-root /",
    "{{{{ 7*7 }}}}",
    "a\x00b",
    "$'\\x3b' touch {canary}",
    "checkout-7d9f ; touch {canary}",
    "!!",
]


def spec(**fields: object) -> ShellCheckSpec:
    return ShellCheckSpec.model_validate({"type": "shell", "name": "c", **fields})


def context(value: object) -> dict[str, object]:
    return {"steps": NamedMapping("steps", {"investigate": NamedMapping("steps.investigate", {"pod": value})})}


@pytest.mark.parametrize("template", HOSTILE, ids=[f"hostile-{n}" for n in range(len(HOSTILE))])
async def test_an_agent_value_is_always_one_literal_argument(template: str, tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    value = template.format(canary=canary).replace("\x00", "")
    check = spec(run="set -- {{ steps.investigate.pod }}; echo $#", expect="result == '1'")
    result = await run_shell_check(check, context(value))
    assert not canary.exists(), f"{value!r} escaped its argument"
    echoed = await run_shell_check(
        spec(run="printf '%s' {{ steps.investigate.pod }}", expect="result == steps.investigate.pod.strip()"),
        context(value),
    )
    assert not canary.exists()
    assert result.passed, result.detail  # exactly one argument reached `set --`
    if value.startswith("-"):  # where a word starts (and no `--` before it), printf would read an option
        assert not echoed.passed and "so the program would read it as an option" in echoed.detail
    else:
        assert echoed.passed, echoed.detail  # ... and it was the value itself, byte for byte


async def test_the_argv_form_runs_without_a_shell(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    result = await run_shell_check(
        spec(argv=["printf", "%s", "{{ steps.investigate.pod }}"], expect=f"result == 'x; touch {canary}'"),
        context(f"x; touch {canary}"),
    )
    assert result.passed and not canary.exists()


async def test_expect_sees_result_exit_code_and_the_step_context() -> None:
    held = await run_shell_check(spec(run="echo 0.042", expect="result | float > 0.02"), {})
    missed = await run_shell_check(spec(run="echo 0.001", expect="result | float > 0.02"), {})
    assert held.passed is True and held.detail == "`result | float > 0.02` held: result '0.042', exit code 0"
    assert missed.passed is False
    assert missed.detail == "`result | float > 0.02` did not hold: result '0.001', exit code 0"
    assert (held.name, held.type) == ("c", "shell")


async def test_expect_sees_what_the_command_wrote_to_stderr() -> None:
    result = await run_shell_check(spec(run="echo 'replica lag 3s' >&2", expect="'lag' in stderr and result == ''"), {})
    assert result.passed, result.detail


async def test_the_duration_is_measured_in_milliseconds() -> None:
    result = await run_shell_check(spec(run="sleep 0.3"), {})
    assert result.passed and 250 <= result.duration_ms < 3000, result.duration_ms


async def test_a_non_zero_exit_fails_unless_expect_speaks_of_exit_codes() -> None:
    failed = await run_shell_check(spec(run="echo nope >&2; exit 3"), {})
    expected = await run_shell_check(spec(run="exit 3", expect="exit_code == 3"), {})
    default = await run_shell_check(spec(run="true"), {})
    assert failed.passed is False and failed.detail == "exited with 3: nope"
    assert expected.passed and default.passed


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"run": "echo hi", "expect": "reslt == 'hi'"}, "expect cannot be evaluated"),
        ({"run": "echo hi", "expect": "result | float > 1"}, "expect cannot be evaluated"),
        ({"run": "echo {{ steps.nope.x }}"}, "command cannot be rendered"),
        ({"argv": ["/no/such/program"]}, "cannot start '/no/such/program': No such file or directory"),
        (
            {"argv": ["rm", "{{ steps.investigate.pod }}"]},
            "command cannot be rendered: argument 1 starts with '-', so the program would read it as an option; "
            "put `--` before it in `argv` if the program takes that, or check the value",
        ),
        ({"argv": ["rm", "  {{- steps.investigate.pod }}"]}, "so the program would read it as an option"),
    ],
    ids=["typo", "not-a-number", "undefined-value", "missing-program", "option", "option-after-trimmed-space"],
)
async def test_anything_unclear_is_a_failure_with_its_reason(fields: dict[str, object], detail: str) -> None:
    result = await run_shell_check(spec(**fields), context("-rf"))
    assert result.passed is False and detail in result.detail  # False, never a None that reads as "not failed"


@pytest.mark.parametrize("expect", ["result | int == 0", "result | float < 5"])
async def test_a_number_filter_on_words_fails_closed_never_reads_zero(expect: str) -> None:
    # Jinja's own `int` turns "error: connection refused" into 0, and `result | int == 0` would pass.
    result = await run_shell_check(spec(run="echo 'error: connection refused'", expect=expect), {})
    assert result.passed is False and "'error: connection refused' is not a number" in result.detail


async def test_a_check_runs_in_the_projects_folder_with_nothing_on_stdin(tmp_path: Path) -> None:
    where = await run_shell_check(spec(run="pwd", expect=f"result == '{tmp_path}'"), {}, cwd=tmp_path)
    assert where.passed, where.detail
    # The service's own stdin may be a terminal or a pipe that never ends: a check must not read it.
    never_ends, writer = os.pipe()
    kept_stdin = os.dup(0)
    os.dup2(never_ends, 0)
    try:
        started = time.monotonic()
        reads = await run_shell_check(spec(run="cat", expect="result == ''", timeout_seconds=5), {}, cwd=tmp_path)
    finally:
        os.dup2(kept_stdin, 0)
        for descriptor in (kept_stdin, never_ends, writer):
            os.close(descriptor)
    assert reads.passed, reads.detail
    assert time.monotonic() - started < 4  # `cat` met an empty stdin, not a hang


async def test_output_that_is_not_utf8_is_read_not_a_crash() -> None:
    result = await run_shell_check(spec(run="printf 'ok \\377\\376 done'", expect="'ok' in result"), {})
    assert result.passed, result.detail
    assert "\ufffd" in result.detail  # the bytes that are not UTF-8 show as replacement characters


async def test_a_number_is_rendered_into_a_command_as_one_word() -> None:
    result = await run_shell_check(spec(run="set -- {{ n }}; echo $# $1", expect="result == '1 0.042'"), {"n": 0.042})
    assert result.passed, result.detail


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = await run_shell_check(spec(run=f"sleep 30 & echo $! > {pid_file}; wait", timeout_seconds=0.5), {})
    assert time.monotonic() - started < 5
    assert result.passed is False and result.detail == "timed out after 0.5s; its process group was killed"
    child = int(pid_file.read_text())
    assert _gone(child), "the background child outlived the timeout"  # not only the shell was killed


def _gone(pid: int) -> bool:
    """Dead, or a zombie waiting to be reaped (which no longer runs)."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


async def test_output_is_capped_but_the_command_is_not_blocked() -> None:
    result = await run_shell_check(spec(run="head -c 5000000 /dev/zero | tr '\\\\0' 'x'", expect="result | length"), {})
    assert result.passed
    capped = await run_shell_check(
        spec(run="head -c 5000000 /dev/zero | tr '\\\\0' 'x'", expect=f"result | length == {OUTPUT_CAP_BYTES}"), {}
    )
    assert capped.passed, capped.detail


async def test_a_failure_shows_the_end_of_long_output() -> None:
    # 100 "b" then 300 "e": the detail keeps the last 300 characters, where the error usually is.
    long = await run_shell_check(spec(run="printf 'b%.0s' $(seq 100) >&2; printf 'e%.0s' $(seq 300) >&2; exit 1"), {})
    exact = await run_shell_check(spec(run="printf 'e%.0s' $(seq 300) >&2; exit 1"), {})
    assert long.detail == "exited with 1: …" + "e" * 300
    assert exact.detail == "exited with 1: " + "e" * 300  # nothing was cut, so no ellipsis


async def test_output_arriving_in_pieces_is_capped_at_the_same_size() -> None:
    pieces = "head -c 40000 /dev/zero | tr '\\0' 'x'; sleep 0.2; head -c 100000 /dev/zero | tr '\\0' 'y'"
    result = await run_shell_check(spec(run=pieces, expect=f"result | length == {OUTPUT_CAP_BYTES}"), {})
    assert result.passed, result.detail[:200]


async def test_a_timeout_is_reported_as_one_when_the_command_left_a_daemon_holding_its_output(tmp_path: Path) -> None:
    # The shell exits at once; a process in its own session keeps stdout open, so the output never
    # ends. When the timeout fires, the command's own process group is already gone.
    pid_file = tmp_path / "daemon.pid"
    run = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 30' &"
    descriptors = len(os.listdir("/proc/self/fd"))
    try:
        result = await run_shell_check(spec(run=run, timeout_seconds=0.5), {})
        await asyncio.sleep(0.05)  # the pipes close on the event loop's next turns
        assert len(os.listdir("/proc/self/fd")) <= descriptors  # the daemon's pipes were let go of
    finally:
        deadline = time.monotonic() + 3
        while not pid_file.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert result.passed is False and result.detail == "timed out after 0.5s; its process group was killed"
