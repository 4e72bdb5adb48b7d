"""`vectorstep init [DIR]`: a new project that validates and runs offline at once.

It holds the settings (SQLite; a UI/API token taken from an environment variable, with a random
default made for this project), one pipeline whose step is gated by its trust, a scripted agent that
calls a tool, and a tiny MCP tool server written with the `mcp` package's server API. Nothing that
exists is overwritten.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from vectorstep.cli.common import reports_errors
from vectorstep.cli.output import Output
from vectorstep.errors import ConfigError

SETTINGS = """\
# VectorStep settings. Relative paths are resolved against this file's folder.
database: {{url: "sqlite:///./vectorstep.db"}}

pipelines_dir: ./pipelines
agents_dir: ./agents
steps_dir: ./steps

# The tool server in tools/server.py, started by VectorStep when an agent first needs it.
# ${{VECTORSTEP_PYTHON}} is the Python that runs VectorStep (it has the `mcp` package).
mcp_servers:
  ops: {{command: "${{VECTORSTEP_PYTHON}}", args: [tools/server.py]}}

# Who may use the UI and the API of `vectorstep serve`. Set VECTORSTEP_TOKEN in the environment;
# the default below was made at random for this project by `vectorstep init`.
auth:
  tokens:
    - {{name: admin, role: admin, token: "${{VECTORSTEP_TOKEN:-{token}}}"}}
"""

PIPELINE = """\
# An alert about a service: an agent looks at the service's status with its tool, and the step
# proceeds only when its trust clears the threshold. Try:
#   vectorstep run service-alert --payload payloads/checkout.json
name: service-alert
description: Check a failing service's status and say what changed.
stage: testing              # nothing is sent while testing; set `production` when you trust it
trigger:
  match: {{labels.service: {{regex: ".+"}}}}

context_template:
  include: [summary, labels.service]

steps:
  - name: investigate
    executor: gateway
    executor_config: {{agent: investigator}}
    prompt_template: |
      Alert: {{{{ summary }}}}
      Look up the status of {{{{ service }}}} with your tool, and say what changed.
      Answer with JSON: confidence, summary, next_step_context.
    confidence_threshold: 0.7
    on_low_confidence: escalate
    # Grounding by the anchor check (no model): are the answer's figures in its own tool results?
    grounding: {{executor: local}}
    deterministic_checks:
      - type: shell
        name: service_is_named
        run: "test -n {{{{ service }}}}"
"""

AGENT = """\
# Scripted: plays the turns below instead of calling a model, so the project runs offline.
# To use a real model, set `model:` (for example openai/gpt-4o-mini, with `providers:` in
# vectorstep.yaml) and delete `script:`; the instructions below then become its system prompt.
name: investigator
description: Looks up a service's status and reports what changed.
model: scripted
tools: [ops]
script:
  - tool_calls:
      - {{name: ops__service_status, args: {{service: checkout}}}}
  - answer:
      confidence: 0.85
      summary: "checkout's 5xx ratio is 4.2% since deploy 8f3a91c"
      next_step_context: "roll back deploy 8f3a91c"
      reasoning:  # the claims grounding checks against the tool's results
        supports: ["checkout's 5xx ratio is 4.2%", "its latest deploy is 8f3a91c"]
"""

INSTRUCTIONS = """\
You investigate alerts about services. Use your tools to look up facts; never state a figure your
tools did not give you. Answer with one JSON object: confidence (0-1), summary, next_step_context.
"""

TOOL_SERVER = '''\
"""A tiny MCP tool server (stdio). Tools are plain functions; VectorStep names them ops__<function>."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("ops", instructions="Status of this team's services (example data).")

STATUS = {{
    "checkout": {{"error_ratio": 0.042, "latest_deploy": "8f3a91c", "deployed_at": "2026-03-01T14:02:17Z"}},
    "cart": {{"error_ratio": 0.0004, "latest_deploy": "c41d0e7", "deployed_at": "2026-02-27T09:12:40Z"}},
}}


@app.tool()
def service_status(service: str) -> dict[str, object]:
    """The service's current 5xx ratio and its latest deploy."""
    if service not in STATUS:
        # The agent sees this message as the tool's error, and can try something else.
        raise ToolError(f"unknown service {{service!r}}; known: {{', '.join(sorted(STATUS))}}")
    return {{"service": service, **STATUS[service]}}


if __name__ == "__main__":
    app.run()
'''

PAYLOAD = """\
{{"summary": "checkout 5xx ratio above 2%", "severity": "critical", "data": {{"labels": {{"service": "checkout"}}}}}}
"""

README = """\
# {name}

A VectorStep project made by `vectorstep init`.

    vectorstep validate .
    vectorstep run service-alert --payload payloads/checkout.json
    vectorstep runs list
    VECTORSTEP_TOKEN=... vectorstep serve      # then http://127.0.0.1:8080/ui/

- `pipelines/service-alert.yaml` — the pipeline: one step gated by its trust.
- `agents/investigator/` — the agent (scripted: it runs offline; give it a real model when ready).
- `tools/server.py` — the MCP tool server its agent calls.
"""


@click.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@reports_errors
def init_command(folder: Path) -> int:
    """Start a project in FOLDER (default: here): settings, a pipeline, an agent and a tool server."""
    files = {
        "vectorstep.yaml": SETTINGS.format(token=secrets.token_hex(16)),
        "pipelines/service-alert.yaml": PIPELINE.format(),
        "agents/investigator/agent.yaml": AGENT.format(),
        "agents/investigator/instructions.md": INSTRUCTIONS,
        "tools/server.py": TOOL_SERVER.format(),
        "payloads/checkout.json": PAYLOAD.format(),
        "README.md": README.format(name=folder.resolve().name),
    }
    existing = [name for name in files if (folder / name).exists()]
    if existing:
        raise ConfigError.single(
            str(folder / existing[0]), f"already exists; `vectorstep init` never overwrites ({len(existing)} file(s))"
        )
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "steps").mkdir(exist_ok=True)
    (folder / "vectorstep.yaml").chmod(0o600)  # it holds this project's default token
    out = Output()
    out.line(f"made a VectorStep project in {folder}", style="bold")
    for name in files:
        out.line(f"  {name}")
    where = "" if folder == Path(".") else f"cd {folder} && "
    out.line(f"next: {where}vectorstep run service-alert --payload payloads/checkout.json")
    return 0
