"""How far a run request is trusted: the clearance VERIFY runs with, and script paths made absolute."""

from __future__ import annotations

from pathlib import Path

from tidegate.exec.guard import Clearance, Origin, least_trusted
from tidegate.records.request import RunRequest


def verify_clearance(request: RunRequest, configured_mode: str | None = None) -> Clearance:
    """What the guard is told about VERIFY's command: the least trusted of whoever chose
    the command and whoever wrote the code it runs (a model's or an agent's change is
    their code, whoever chose ``pytest``; a ``scripted:`` model replays the user's own
    file). The user's approval to run it uncontained: ``--containment none`` on the
    command line, or ``configured_mode`` ``none`` (the loaded configuration's, which only
    the user's own untracked ``.tidegate/config.toml`` can set: a repository may only
    tighten it, ``tidegate.config``)."""
    code = Origin.USER
    if request.agent is not None:
        code = Origin.AGENT
    elif request.model is not None and not request.model.startswith("scripted:"):
        code = Origin.MODEL
    origin = least_trusted(Origin(request.origin), code)
    approved = request.uncontained_approval
    if request.containment == "none":
        approved = "--containment none"
    elif request.containment is None and configured_mode == "none":
        approved = "containment.mode = none in .tidegate/config.toml"
    return Clearance(origin, approved)


def absolute_script(spec: str | None) -> str | None:
    """``scripted:PATH`` (a planner or model spec) with a relative PATH made absolute
    against the current directory; any other spec as given.

    Called where a spec is parsed, in the invoking directory, so that the path names the
    same file wherever the run later reads it: a gym's scratch repository, an objective
    file's directory, a ``resume`` from elsewhere."""
    if spec is None or not spec.startswith("scripted:"):
        return spec
    raw = spec.removeprefix("scripted:")
    path = Path(raw).expanduser()
    return spec if not raw or path.is_absolute() else f"scripted:{path.absolute()}"
