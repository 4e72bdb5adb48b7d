"""The `vectorstep` command: parse, call, print. No business logic lives here."""

from __future__ import annotations

from importlib.metadata import version

import click

from vectorstep.cli.approvals import approvals_group, resume_command
from vectorstep.cli.calibration import calibration_group
from vectorstep.cli.common import configure_logging
from vectorstep.cli.db import db_group
from vectorstep.cli.demo import demo_command
from vectorstep.cli.gateway import gateway_group
from vectorstep.cli.init import init_command
from vectorstep.cli.mark import mark_command
from vectorstep.cli.readiness import readiness_command
from vectorstep.cli.replay import replay_command
from vectorstep.cli.run import run_command
from vectorstep.cli.runs import runs_group
from vectorstep.cli.serve import serve_command
from vectorstep.cli.tools import tools_group
from vectorstep.cli.validate import validate_command
from vectorstep.cli.versions import versions_command
from vectorstep.cli.worker import worker_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("vectorstep"), prog_name="vectorstep")
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
def cli(verbose: bool) -> None:
    """VectorStep: multi-step agent pipelines whose steps act only when their trust vector allows."""
    configure_logging(verbose)


cli.add_command(run_command)
cli.add_command(validate_command)
cli.add_command(runs_group)
cli.add_command(db_group)
cli.add_command(demo_command)
cli.add_command(approvals_group)
cli.add_command(serve_command)
cli.add_command(worker_command)
cli.add_command(gateway_group)
cli.add_command(mark_command)
cli.add_command(calibration_group)
cli.add_command(versions_command)
cli.add_command(readiness_command)
cli.add_command(init_command)
cli.add_command(tools_group)
cli.add_command(replay_command)
runs_group.add_command(resume_command)


def main() -> None:
    # One name however it is started (`python -m vectorstep` too): usage lines and shell completion use it.
    cli(prog_name="vectorstep")
