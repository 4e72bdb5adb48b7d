"""`vectorstep demo`: run the offline sample pipelines and say what happened and where to look."""

from __future__ import annotations

import click


@click.command("demo")
def demo_command() -> None:
    """Run the offline demo (scripted agents, real tools, no API keys)."""
