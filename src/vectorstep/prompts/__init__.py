"""The prompts VectorStep itself writes: the critic verifier's, the independent verifier's, the judge's."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

BUILT_IN_PROMPTS = ("critic", "independent", "grounding_judge")


@cache
def prompt_template(name: str) -> str:
    """The text of `prompts/<name>.j2`, rendered with the sandboxed template environment."""
    return files(__package__).joinpath(f"{name}.j2").read_text(encoding="utf-8")
