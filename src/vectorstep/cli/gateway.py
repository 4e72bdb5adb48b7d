"""`vectorstep gateway serve`: the agent runtime alone, for services that run with `gateway: {mode: remote}`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from vectorstep.cli.common import config_option, reports_errors, settings_from
from vectorstep.cli.output import Output
from vectorstep.errors import ConfigError

TOKEN_VARIABLE = "VECTORSTEP_GATEWAY_TOKEN"  # noqa: S105 - the name of the variable, not a secret
MIN_TOKEN_CHARS = 16


@click.group("gateway")
def gateway_group() -> None:
    """The agent runtime as a separate service."""


@gateway_group.command("serve")
@config_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8788, show_default=True, help="Port.")
@reports_errors
def gateway_serve_command(config_path: Path | None, host: str, port: int) -> int:
    """Run agents for remote VectorStep services over WebSocket /rpc (token required)."""
    settings = settings_from(config_path)
    token = os.environ.get(TOKEN_VARIABLE) or settings.spec.gateway.token or ""
    if len(token.strip()) < MIN_TOKEN_CHARS or token != token.strip():
        raise ConfigError(
            [
                settings.problem(
                    ("gateway", "token"),
                    f"the gateway needs a token of at least {MIN_TOKEN_CHARS} characters, not blank and with no "
                    f"whitespace around it: set ${TOKEN_VARIABLE} "
                    "or `gateway.token` (from ${VAR}); services send it as their own `gateway.token`",
                )
            ]
        )
    import uvicorn  # noqa: PLC0415 - only this command serves

    from vectorstep.runtime.remote_server import create_gateway_app  # noqa: PLC0415

    app = create_gateway_app(settings, token)
    Output(stderr=True).line(f"VectorStep gateway on ws://{host}:{port}/rpc (agents from {settings.agents_dir})")
    uvicorn.run(app, host=host, port=port, loop="asyncio", log_level="info", access_log=False, server_header=False)
    return 0
