"""Deciding an approval at the terminal where `vectorstep run` waits for it."""

from __future__ import annotations

import asyncio
import getpass
import sys
import threading

from vectorstep.approvals.desk import Decide
from vectorstep.cli.output import Output
from vectorstep.domain.approvals import Approval


def terminal_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "cli"


async def ask_at_terminal(approval: Approval, decide: Decide) -> None:
    """Ask on the terminal without blocking: the run keeps polling, so a decision made elsewhere wins too."""
    loop = asyncio.get_running_loop()
    Output(stderr=True).line(
        f"  Approve {approval.check or approval.step}? Type y or n and Enter — or decide from anywhere with "
        f"`vectorstep approvals approve|reject {approval.id[:12]}`",
        style="bold magenta",
    )
    user = terminal_user()

    def read() -> None:
        answer = sys.stdin.readline().strip().lower()
        if answer in ("y", "yes", "n", "no"):
            approve = answer.startswith("y")
            loop.call_soon_threadsafe(lambda: loop.create_task(decide(approve, user)))

    # A daemon thread: when the decision comes from elsewhere, the process must not wait for Enter.
    threading.Thread(target=read, name="approval-prompt", daemon=True).start()
