"""Finding and loading `vectorstep.yaml`, with relative paths resolved against its folder."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vectorstep.domain.secrets import SECRETS
from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.base import validate_document
from vectorstep.spec.service import ServiceSpec, StdioServerSpec
from vectorstep.spec.source import (
    Document,
    KeyPath,
    Location,
    SourceMap,
    display_path,
    format_key_path,
    load_document,
)

CONFIG_ENV = "VECTORSTEP_CONFIG"
CONFIG_FILE = "vectorstep.yaml"


@dataclass(frozen=True)
class Settings:
    """The service settings with every path made absolute."""

    spec: ServiceSpec
    config_path: Path | None
    base_dir: Path
    pipelines_dir: Path
    steps_dir: Path
    agents_dir: Path
    database_url: str
    locations: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def source(self) -> str:
        return display_path(self.config_path) if self.config_path else "embedded defaults"

    def problem(self, key_path: KeyPath, message: str) -> Problem:
        """A problem with a key of this file, located when the file exists."""
        line = self.locations.locate(key_path).line if self.locations is not None else None
        return Problem(self.source, line, format_key_path(key_path), message)


def find_config(explicit: Path | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """`--config`, then `$VECTORSTEP_CONFIG`, then `./vectorstep.yaml`; None means embedded defaults."""
    environ = os.environ if environ is None else environ
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError.single(str(explicit), "config file not found (given with --config)")
        return explicit
    from_env = environ.get(CONFIG_ENV)
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise ConfigError.single(from_env, f"config file not found (given by ${CONFIG_ENV})")
        return path
    local = Path.cwd() / CONFIG_FILE
    return local if local.is_file() else None


def load_settings(
    config_path: Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
    base_dir: Path | None = None,
) -> Settings:
    """Load `config_path` (None: the embedded defaults, relative to `base_dir` or else the working directory).

    With `only`, just those top-level keys are read; the rest keep their defaults (for commands that
    only read the database, say)."""
    locations: SourceMap | None = None
    if config_path is None:
        spec = ServiceSpec()
    else:
        document = load_document(config_path, environ=environ, only=only)
        if document.data is None:
            document = Document(data={}, source=SourceMap(Location(display_path(config_path), 1)), path=config_path)
        spec = validate_document(ServiceSpec, document)
        locations = document.source
    SECRETS.make_public(frozenset(spec.public_vars))
    base_dir = (config_path.parent if config_path else base_dir or Path.cwd()).resolve()
    return Settings(
        spec=_resolve_server_dirs(spec, base_dir),
        config_path=config_path.resolve() if config_path else None,
        base_dir=base_dir,
        pipelines_dir=_resolve(base_dir, spec.pipelines_dir),
        steps_dir=_resolve(base_dir, spec.steps_dir),
        agents_dir=_resolve(base_dir, spec.agents_dir),
        database_url=resolve_database_url(spec.database.url, base_dir),
        locations=locations,
    )


def _resolve(base_dir: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base_dir / path).resolve()


def _resolve_server_dirs(spec: ServiceSpec, base_dir: Path) -> ServiceSpec:
    # A stdio server started from another working directory must still find its script.
    servers = {
        name: server.model_copy(update={"cwd": str(_resolve(base_dir, server.cwd or "."))})
        if isinstance(server, StdioServerSpec)
        else server
        for name, server in spec.mcp_servers.items()
    }
    return spec.model_copy(update={"mcp_servers": servers})


def resolve_database_url(url: str, base_dir: Path) -> str:
    """Pick the driver (asyncpg for PostgreSQL) and make a relative SQLite path absolute against `base_dir`."""
    for prefix in ("sqlite+pysqlite:///", "sqlite+aiosqlite:///", "sqlite:///"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if rest in ("", ":memory:"):
                return "sqlite:///:memory:"
            path = Path(rest).expanduser()
            if not path.is_absolute():
                path = (base_dir / path).resolve()
            return f"sqlite:///{path}"
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ConfigError.single(
        "vectorstep.yaml",
        f"unsupported database url {redact_url(url)!r}; use sqlite:///path/to/file.db "
        "or postgresql+asyncpg://user@host/db",
        key_path="database.url",
    )


def redact_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url
