"""`vectorstep tools list`: start every configured tool server, list its tools, and say why one cannot start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.errors import ToolError
from vectorstep.runtime.toolbox import ToolHub
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import Settings


@click.group("tools")
def tools_group() -> None:
    """The tool servers agents call (MCP servers and Python tools)."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def list_command(as_json: bool, config_path: Path | None) -> int:
    """Start each server, list its tools and the agents granted it; show a failing server's stderr tail.

    Exits 1 when a server cannot start."""
    found = run_async(_servers(settings_from(config_path)))
    out = Output()
    if as_json:
        out.json(found)
    elif not found:
        out.line("no tool servers are configured (mcp_servers and python_tools in vectorstep.yaml)")
    for server in [] if as_json else found:
        granted = ", ".join(server["granted_to"]) or "no agent"
        if server["error"] is None:
            out.line(f"{server['name']}: {len(server['tools'])} tool(s), granted to {granted}", style="bold")
            for tool in server["tools"]:
                out.line(f"  {tool['name']}  {tool['description'].splitlines()[0] if tool['description'] else ''}")
        else:
            out.line(f"{server['name']}: cannot start (granted to {granted})", style="bold red")
            for line in server["error"].splitlines():
                out.line(f"  {line}")
    return 1 if any(server["error"] is not None for server in found) else 0


async def _servers(settings: Settings) -> list[dict[str, Any]]:
    spec = settings.spec
    agents = load_project(settings).agents
    hub = ToolHub(spec.mcp_servers, spec.python_tools, settings.base_dir)
    found: list[dict[str, Any]] = []
    try:
        for name in [*spec.mcp_servers, *spec.python_tools]:
            connection = hub.connection(name)
            assert connection is not None
            granted = sorted(agent.name for agent in agents.values() if name in agent.spec.tool_grants())
            try:
                tools = await connection.tools()
            except ToolError as error:
                found.append({"name": name, "granted_to": granted, "error": str(error), "tools": []})
                continue
            listed = [{"name": tool.qualified_name, "description": tool.description} for tool in tools]
            found.append({"name": name, "granted_to": granted, "error": None, "tools": listed})
    finally:
        await hub.aclose()
    return found
