"""Printing for people: rich tables on a terminal, plain aligned text when piped."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vectorstep.domain.storable import storable

STATUS_STYLES = {
    "completed": "green",
    "stopped": "cyan",
    "escalated": "yellow",
    "aborted": "red",
    "failed": "bold red",
    "skipped": "dim",
    "waiting": "magenta",
    "running": "blue",
    "interrupted": "red",
}


class Output:
    def __init__(self, *, stderr: bool = False) -> None:
        stream = sys.stderr if stderr else sys.stdout
        self.console = Console(file=stream, highlight=False, soft_wrap=True)
        self.is_terminal = self.console.is_terminal

    def line(self, text: str = "", style: str | None = None) -> None:
        if self.is_terminal:
            self.console.print(Text(text, style=style or ""))
        else:
            self.console.file.write(text + "\n")

    def json(self, value: Any) -> None:
        # As stored: what no text can hold (a lone surrogate, NUL) is written as its escape.
        self.console.file.write(json.dumps(storable(value), indent=2, ensure_ascii=False, default=str) + "\n")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]], *, status_column: int | None = None) -> None:
        if not self.is_terminal:
            self._plain_table(headers, rows)
            return
        table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None, padding=(0, 2, 0, 0))
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            cells = [Text(cell) for cell in row]
            if status_column is not None:
                cells[status_column].stylize(STATUS_STYLES.get(row[status_column], ""))
            table.add_row(*cells)
        self.console.print(table)

    def _plain_table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]
        for row in (headers, *rows):
            self.console.file.write(
                "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() + "\n"
            )


def clipped(text: str, width: int) -> str:
    """`text` within `width` characters, cut at a word's end with an ellipsis, never mid-word."""
    if len(text) <= width:
        return text
    cut = text[: width - 1].rstrip()
    space = cut.rfind(" ")
    return (cut[:space].rstrip(" ,;:") if space > width // 2 else cut) + "…"


def duration(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def tokens(input_tokens: int, output_tokens: int) -> str:
    if not input_tokens and not output_tokens:
        return "—"
    return f"{input_tokens:,}/{output_tokens:,}"
