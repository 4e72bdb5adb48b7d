"""A pytest plugin for `make mutation`.

Functions reached in a test's subprocesses count for that test (see sitecustomize.py beside it);
and while a mutant is tried, the in-process tests run before the pipeline cases, so the first
failure (mutmut stops there) usually comes from a test that takes milliseconds, not seconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# The evidence windows and the anchor check are pure functions of a text, tried by their own tests
# directly; through a pipeline case (seconds each) a judge would only run them again. Their mutants
# are therefore not filed under the pipeline cases, which keeps `make mutation` near a quarter hour.
IN_PROCESS_ONLY = tuple(
    f"vectorstep.grounding.{module}."
    for module in ("windows", "anchors", "local_check", "misread", "counts", "counted", "qualifiers")
)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    if os.environ.get("MUTANT_UNDER_TEST", "stats") != "stats":
        items.sort(key=lambda item: "tests/pipelines/" in item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: Any, nextitem: Any) -> None:
    hits_file = os.environ.get("MUTATION_HITS_FILE")
    if not hits_file or os.environ.get("MUTANT_UNDER_TEST") != "stats" or not Path(hits_file).exists():
        return
    from mutmut.state import state  # noqa: PLC0415 - mutmut's state exists only under `mutmut run`

    path = Path(hits_file)
    hits = path.read_text(encoding="utf-8").splitlines()
    state()._stats.update(line for line in hits if line and not line.startswith(IN_PROCESS_ONLY))
    path.unlink()
