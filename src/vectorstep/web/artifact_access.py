"""A run's step artifacts for the API and the UI: the run found for the caller (team scoping as for the
run itself), and an artifact served as a plain-text download, never as a page."""

from __future__ import annotations

from fastapi.responses import Response

from vectorstep.domain.artifacts import NAME_RULE, is_safe_name
from vectorstep.errors import NotFoundError
from vectorstep.spec.base import did_you_mean
from vectorstep.store.artifacts import ArtifactRepository, StoredArtifact
from vectorstep.web.auth import Principal
from vectorstep.web.service import Service


async def step_artifacts(
    service: Service, principal: Principal, run_id: str, step: str
) -> tuple[str, list[StoredArtifact]]:
    """(the whole run id, the step's artifacts without their texts)."""
    found = await service.runs.resolve_run_id(run_id)
    run = await service.runs.get_run(found)
    principal.require_team(run.team, f"run {found}")
    names = [record.name for record in run.steps]
    if step not in names:
        listed = ", ".join(names) or "none recorded yet"
        raise NotFoundError(f"run {found} has no step {step!r}{did_you_mean(step, names)}; its steps: {listed}")
    return found, await ArtifactRepository(service.database).list(found, step)


async def download(service: Service, principal: Principal, run_id: str, step: str, name: str) -> Response:
    """The artifact's text as an attachment: `text/plain`, so a browser never renders what an agent wrote."""
    found, listed = await step_artifacts(service, principal, run_id, step)
    if not is_safe_name(name):  # never one that was stored: say what names look like
        raise NotFoundError(f"{name[:60]!r} is not an artifact name ({NAME_RULE})")
    if name not in {artifact.name for artifact in listed}:
        known = [artifact.name for artifact in listed]
        raise NotFoundError(
            f"step {step} of run {found} has no artifact {name!r}{did_you_mean(name, known)}; "
            f"its artifacts: {', '.join(known) or 'none'}"
        )
    artifact = await ArtifactRepository(service.database).get(found, step, name)
    return Response(
        content=(artifact.content or "").encode("utf-8", "backslashreplace"),
        media_type="text/plain; charset=utf-8",
        headers={
            # The name is a safe file name (letters, digits, '.', '_', '-'): quoting it is enough.
            "Content-Disposition": f'attachment; filename="{artifact.name}"',
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, no-store",
            "X-Artifact-Truncated": "true" if artifact.truncated else "false",
            "X-Artifact-Size": str(artifact.size),
        },
    )
