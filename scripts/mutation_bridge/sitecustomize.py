"""Loaded by every Python process `make mutation` starts (its directory is on PYTHONPATH).

While mutmut maps which tests reach which function (MUTANT_UNDER_TEST=stats), a `vectorstep`
subprocess started by a test records the functions it reached in a file; `mutation_hits` adds them
to the test that started it. Without this, a mutant that only a subprocess-driven test can catch
would never be tried against that test. In every other process this does nothing.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

_HITS_FILE = os.environ.get("MUTATION_HITS_FILE")


def _record_hits_of_this_process(hits_file: str) -> None:
    # Imported here: every process loads this file, and only these few need mutmut.
    from mutmut import configuration  # noqa: PLC0415
    from mutmut.state import state  # noqa: PLC0415

    # mutmut reads its settings from the working directory; a test's subprocess runs elsewhere.
    working_directory = os.getcwd()
    os.chdir(Path(hits_file).parent.parent)
    try:
        configuration._config = configuration._load_config()
    finally:
        os.chdir(working_directory)

    def write_hits() -> None:
        with open(hits_file, "a", encoding="utf-8") as hits:
            hits.writelines(f"{name}\n" for name in state()._stats)

    atexit.register(write_hits)


if _HITS_FILE and os.environ.get("MUTANT_UNDER_TEST") == "stats":
    _record_hits_of_this_process(_HITS_FILE)
