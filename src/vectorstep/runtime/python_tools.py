"""Python function tools: `python_tools: {ops: ["mytools.k8s:restart_count"]}` makes `ops__restart_count`.

For people who do not want to write an MCP server. Each function's signature (with its type
hints) becomes the tool's input schema and its docstring the description; arguments are
validated before the call. A plain function runs in a worker thread, a coroutine function on
the loop; either is bounded by `limits.mcp_tool_timeout_seconds`. Modules are imported from the
folder of vectorstep.yaml, on first use.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from vectorstep.errors import ToolError
from vectorstep.runtime.mcp_servers import ToolInfo, ToolOutcome


class _Tool:
    def __init__(self, function: Callable[..., Any], arguments: type[BaseModel]) -> None:
        self.function = function
        self.arguments = arguments


class PythonToolGroup:
    """A named group of functions, used like an MCP server (`tools: [<group>]` grants them)."""

    def __init__(self, name: str, references: Sequence[str], base_dir: Path | None) -> None:
        self.name = name
        self._references = list(references)
        self._base_dir = base_dir
        self._tools: dict[str, _Tool] | None = None
        self._failure: str | None = None

    def status(self) -> dict[str, Any]:
        if self._failure is not None:
            return {"state": "failing", "error": self._failure}
        return {"state": "running" if self._tools is not None else "not_started"}

    async def tools(self) -> list[ToolInfo]:
        return [
            ToolInfo(self.name, name, inspect.getdoc(tool.function) or "", tool.arguments.model_json_schema())
            for name, tool in self._loaded().items()
        ]

    async def call(self, tool: str, arguments: dict[str, Any], timeout_seconds: float) -> ToolOutcome:
        found = self._loaded().get(tool)
        if found is None:
            return ToolOutcome(f"no tool {self.name}__{tool}", is_error=True)
        try:
            given = found.arguments.model_validate(arguments).model_dump()
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())
            return ToolOutcome(f"invalid arguments for {self.name}__{tool}: {problems}", is_error=True)
        try:
            if inspect.iscoroutinefunction(found.function):
                result = await asyncio.wait_for(found.function(**given), timeout_seconds)
            else:
                result = await asyncio.wait_for(asyncio.to_thread(found.function, **given), timeout_seconds)
        except TimeoutError:
            return ToolOutcome(f"tool {self.name}__{tool} timed out after {timeout_seconds:g}s", is_error=True)
        except Exception as error:  # the tool's own failure is the model's to see, not ours to raise
            return ToolOutcome(f"{type(error).__name__}: {error}", is_error=True)
        return ToolOutcome(result if isinstance(result, str) else json.dumps(result, default=str), is_error=False)

    def _loaded(self) -> dict[str, _Tool]:
        if self._tools is None:
            try:
                self._tools = {reference.rsplit(":", 1)[1]: self._load(reference) for reference in self._references}
            except ToolError as error:
                self._failure = str(error)
                raise
            self._failure = None
        return self._tools

    def _load(self, reference: str) -> _Tool:
        module_name, function_name = reference.split(":")
        if self._base_dir is not None and str(self._base_dir) not in sys.path:
            sys.path.insert(0, str(self._base_dir))
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            raise ToolError(f"python_tools.{self.name}: cannot import {module_name!r}: {error}") from error
        function = getattr(module, function_name, None)
        if not callable(function):
            raise ToolError(f"python_tools.{self.name}: {module_name!r} has no function {function_name!r}")
        return _Tool(function, _arguments_model(function))

    async def aclose(self) -> None:
        return None


def _arguments_model(function: Callable[..., Any]) -> type[BaseModel]:
    """The function's parameters as a pydantic model: its JSON schema is what the model is shown."""
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function, eval_str=True).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = Any if parameter.annotation is parameter.empty else parameter.annotation
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model: type[BaseModel] = create_model(
        f"{function.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model
