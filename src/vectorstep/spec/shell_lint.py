"""Where an author's `run:` command would let a `{{ }}` value become shell syntax (for `validate` to warn).

Each `{{ }}` value is shell-quoted as one word. That holds only where the author wrote it as a word
of its own: inside the author's double quotes a quoted value's `$(...)` still runs, inside single
quotes the quoting is undone, and backticks, `eval`, `sh -c` and heredocs read the text as shell
again.
"""

from __future__ import annotations

import re

_INTERPOLATION = re.compile(r"\{\{.*?\}\}", re.S)
_SUB_SHELL = re.compile(r"(?:^|[\s;&|(])(?:ba|z|da|k)?sh\s+(?:-\w+\s+)*-c\s")
_REPARSED = (
    (re.compile(r"(?:^|[\s;&|(])eval\s"), "given to `eval`, which reads it as shell again"),
    (_SUB_SHELL, "given to `sh -c`, which reads it as shell again"),
    (re.compile(r"<<-?\s*['\"]?\w+"), "inside a heredoc, whose text the shell expands"),
)


def interpolation_hazards(run: str) -> list[str]:
    """One sentence per `{{ }}` that sits where its value would be read as shell syntax."""
    hazards: list[str] = []
    single = double = backtick = False
    position = 0
    for found in _INTERPOLATION.finditer(run):
        single, double, backtick = _quoting(run[position : found.start()], single, double, backtick)
        position = found.end()
        where = _where(run[: found.start()], single, double, backtick)
        if where is not None:
            hazards.append(
                f"warning: `{found.group()}` is {where}, so its value becomes shell syntax; "
                "write it as a word of its own (it is quoted for you)"
            )
    return hazards


def _quoting(text: str, single: bool, double: bool, backtick: bool) -> tuple[bool, bool, bool]:
    escaped = False
    for character in text:
        if escaped:
            escaped = False
        elif character == "\\" and not single:
            escaped = True
        elif character == "'" and not double:
            single = not single
        elif character == '"' and not single:
            double = not double
        elif character == "`" and not single:
            backtick = not backtick
    return single, double, backtick


def _where(before: str, single: bool, double: bool, backtick: bool) -> str | None:
    if single:
        return "inside the author's single quotes, which undo its quoting"
    if backtick:
        return "inside backticks, which run it as a command"
    if double:
        return "inside the author's double quotes, where `$(...)` in it still runs"
    command = re.split(r"[;&|\n]", before)[-1]
    for pattern, what in _REPARSED:
        if pattern.search(command if what.startswith("given") else before):
            return what
    return None
