"""Generate marked history for a pipeline, to see calibration act without weeks of real marks.

Runs the pipeline's first step COUNT times as production runs (the real engine, agents and store),
and marks each run the way a person would, right ACCURACY of the time in an even pattern. Then
`vectorstep calibration show` and the UI's Calibration page draw that agent's reliability, and the
next run of a step with `calibration: {enforce: true}` is trusted as far as the history says.

    python samples/tools/generate_calibration_history.py calibration-oversold --accuracy 0.6 --count 40 \\
        --config samples/vectorstep.yaml --payload samples/payloads/disk-full.json [--database URL]

The runs go to --database (default: ./vectorstep.db, where `vectorstep demo` records its runs).

`vectorstep demo` does the same for its two calibration scenarios (20 runs each).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path

from vectorstep.cli.demo_history import generate_history
from vectorstep.cli.run import read_context, runnable_pipeline
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.store.database import connect
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunRepository


async def main(given: argparse.Namespace) -> None:
    pipeline, accuracy, count = given.pipeline, given.accuracy, given.count
    settings = dataclasses.replace(load_settings(given.config), database_url=given.database)
    project = load_project(settings)
    loaded = runnable_pipeline(project, pipeline)
    database = connect(settings.database_url)
    try:
        await upgrade(database)
        right = await generate_history(
            project, RunRepository(database), loaded, read_context(given.payload, None), accuracy=accuracy, count=count
        )
    finally:
        await database.dispose()
    print(f"{count} production runs of {pipeline} recorded and marked: {right} correct, {count - right} incorrect")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline")
    parser.add_argument("--accuracy", type=float, default=0.6, help="the share marked correct (default 0.6)")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--config", type=Path, default=Path("vectorstep.yaml"))
    parser.add_argument("--payload", type=Path, required=True)
    parser.add_argument("--database", default=f"sqlite:///{Path.cwd() / 'vectorstep.db'}")
    arguments = parser.parse_args()
    if not 0 <= arguments.accuracy <= 1 or arguments.count < 1:
        parser.error("--accuracy is between 0 and 1, and --count at least 1")
    asyncio.run(main(arguments))
