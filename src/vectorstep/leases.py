"""Whose lease is it, and is that process still there?

A run's lease names the process driving it: `[serve:]<host>:<pid>:<nonce>`. A lease normally ends
when it runs out (30 s after its holder stopped renewing it). But a process killed and restarted
at once would wait that long for nothing — or, checking only at start, never settle those runs. On
the same host the holder can be looked up: a pid that is gone, or that is now another program,
holds nothing.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

HOST = socket.gethostname()


def holder_is_gone(owner: str | None) -> bool:
    """True when `owner` is a process of this host that no longer runs VectorStep."""
    if not owner:
        return False
    parts = owner.removeprefix("serve:").split(":")
    if len(parts) < 3 or parts[0] != HOST or not parts[1].isdigit():
        return False  # another host's process: only its lease running out tells
    return not _runs_vectorstep(int(parts[1]))


def _runs_vectorstep(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: not ours to judge
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: the pid is alive, assume it is still the holder
    return b"vectorstep" in command
