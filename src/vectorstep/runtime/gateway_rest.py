"""The REST routes of a gateway that existing services read (SYSTEM.md §13.2), with their field names.

`GET /agents`, `/agents/{name}`, `/agents/{name}/soul`, `/agents/{name}/agent`, `/mcp/tools` and
`/mcp/servers`. They need the gateway token unless `gateway.rest_auth: none` (existing services send
none), and then a warning says so when the gateway starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request

from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.spec.agent_files import AgentDefinition

log = logging.getLogger(__name__)


def serve_rest_routes(
    app: FastAPI,
    agents: Mapping[str, AgentDefinition],
    served: EmbeddedRuntime,
    rest_auth: str,
    require_token: Callable[[Request], None],
) -> None:
    if rest_auth == "none":
        log.warning(
            "gateway.rest_auth is none: /agents and /mcp answer anyone who can reach this port "
            "(agent instructions and tool schemas included); keep it on a private network"
        )
    router = APIRouter(dependencies=[Depends(require_token)] if rest_auth == "token" else [])
    _agent_routes(router, agents)
    _tool_routes(router, served)
    app.include_router(router)


def _agent_routes(router: APIRouter, agents: Mapping[str, AgentDefinition]) -> None:
    def found(name: str) -> AgentDefinition:
        agent = agents.get(name)
        if agent is None:
            raise HTTPException(404, detail=f"no agent {name!r} on this gateway")
        return agent

    @router.get("/agents")
    async def list_agents() -> dict[str, Any]:
        return {"agents": [_describe(agent) for agent in sorted(agents.values(), key=lambda agent: agent.name)]}

    @router.get("/agents/{name}")
    async def show_agent(name: str) -> dict[str, Any]:
        agent = found(name)
        return {
            "name": agent.name,
            "version": agent.version,
            "config": agent.spec.model_dump(mode="json", exclude_none=True),
            "agent_yaml": _text_of(agent.folder / "agent.yaml"),
            "soul_md": agent.instructions,
        }

    @router.get("/agents/{name}/soul")
    async def agent_soul(name: str) -> dict[str, Any]:
        return {"name": name, "content": found(name).instructions}

    @router.get("/agents/{name}/agent")
    async def agent_file(name: str) -> dict[str, Any]:
        return {"name": name, "content": _text_of(found(name).folder / "agent.yaml")}


def _tool_routes(router: APIRouter, served: EmbeddedRuntime) -> None:
    @router.get("/mcp/tools")
    async def mcp_tools() -> dict[str, Any]:
        listing = await served.tool_listing()
        return {
            server: [
                {
                    "name": tool.name,
                    "registeredName": tool.qualified_name,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                }
                for tool in tools
            ]
            for server, tools in listing.items()
        }

    @router.get("/mcp/servers")
    async def mcp_servers() -> dict[str, Any]:
        return {
            server: {
                "running": status.get("state") == "running",
                "pid": status.get("pid"),
                "restart_count": max(int(status.get("starts") or 0) - 1, 0),
                "state": status.get("state"),
            }
            for server, status in served.tool_status().items()
        }


def _describe(agent: AgentDefinition) -> dict[str, Any]:
    return {
        "name": agent.name,
        "model": agent.spec.model,
        "model_fallbacks": list(agent.spec.model_fallbacks),
        "tools": sorted(agent.spec.tool_grants()),
        "version": agent.version,
        "description": agent.spec.description,
    }


def _text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
