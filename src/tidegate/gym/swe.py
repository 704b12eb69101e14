"""SWE-bench instances graded the way SWE-bench grades: ``tidegate gym swe``.

Reads the public instance format (``swe_instances``). What is graded is one patch per
instance, a prediction:

* ``--predictions FILE``: an official predictions file (``instance_id``,
  ``model_name_or_path``, ``model_patch``; JSONL or a JSON list);
* ``--oracle``: each instance's gold ``patch`` (``model_name_or_path`` ``gold``);
* ``--contestant SPEC``: the contestant works the instance through the guarded engine on
  a clone at ``base_commit`` (no test patch: the official setting), and its change is
  the patch.

Each patch is graded by ``swe_eval`` on the instance's environment (``swe_env``), with
no guard of tidegate's own between the patch and its grade (the benchmark has none).
Everything lands under ``<gym>/swe/<run id>/``: the predictions the run produced
(``predictions.jsonl``, which the official harness accepts), per instance
``<model>/<instance id>/report.json`` (swebench's fields, tidegate's under
``tidegate``) and ``test_output.txt``, and ``summary.json`` (swebench's run summary and
each instance's status: resolved, partially resolved, unresolved, error, empty patch).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.errors import UsageError
from tidegate.exec.guard import Clearance, Origin
from tidegate.gym.places import check_plain_name, gym_dir, write_artifact
from tidegate.gym.swe_env import Environment, env_spec, environment, git, venv_cache
from tidegate.gym.swe_eval import Graded, grade
from tidegate.gym.swe_grade import EMPTY_PATCH, HARNESS_ERROR, PARTIAL, RESOLVED, UNRESOLVED
from tidegate.gym.swe_instances import Instance, load_instances, mirror
from tidegate.gym.swe_specs import RunSpec, spec_for
from tidegate.text.jsonparse import parse_json

if TYPE_CHECKING:
    from tidegate.records.report import FlowReport
    from tidegate.records.request import RunRequest

Prediction = dict[str, Any]


def load_predictions(path: Path) -> dict[str, Prediction]:
    """An official predictions file (JSONL, or one JSON list), by instance id."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read as UTF-8 text") from exc
    try:
        rows = parse_json(text) if text.lstrip().startswith("[") else [
            parse_json(line) for line in text.splitlines() if line.strip()
        ]  # fmt: skip
    except ValueError as exc:
        raise UsageError(f"{path}: invalid JSON") from exc
    found: dict[str, Prediction] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("instance_id"), str):
            raise UsageError(f"{path}: a prediction without an instance_id")
        patch = row.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            raise UsageError(f"{path}: {row['instance_id']}: model_patch is not text")
        found[row["instance_id"]] = {"instance_id": row["instance_id"], "model_patch": patch,
                                     "model_name_or_path": str(row.get("model_name_or_path", "unknown"))}  # fmt: skip
    return found


def run_swe(
    path: Path,
    repos: Path,
    gym_root: Path,
    *,
    oracle: bool = False,
    contestant: str | None = None,
    predictions: Path | None = None,
    only: list[str] | None = None,
    python: str | None = None,
    allow_uncontained: bool = False,
    run_id: str | None = None,
    on_result: Callable[[dict[str, Any], float], None] | None = None,
) -> dict[str, Any]:
    """Grade ``path``'s instances one by one; ``on_result`` is told each instance's result
    and its duration in seconds as it is graded."""
    if sum((oracle, contestant is not None, predictions is not None)) != 1:
        raise UsageError("give one of --oracle, --contestant SPEC or --predictions FILE")
    repos = repos.absolute()  # relative paths are the caller's
    if python is not None and "/" in python:
        python = str(Path(python).absolute())
    instances = load_instances(path)
    if only:
        unknown = set(only) - {i.instance_id for i in instances}
        if unknown:
            raise UsageError(f"unknown instance(s): {', '.join(sorted(unknown))}")
        instances = [i for i in instances if i.instance_id in only]
    given = load_predictions(predictions) if predictions is not None else None
    if given is not None:
        instances = [i for i in instances if i.instance_id in given]
    run_id = check_plain_name(run_id or f"{int(time.time() * 1000)}", "run id")
    run_dir = gym_root / "swe" / run_id
    clearance = Clearance(Origin.BENCHMARK, "--allow-uncontained" if allow_uncontained else None)
    results, produced = [], []
    for instance in instances:
        if given is not None:
            prediction = given[instance.instance_id]
        elif oracle:
            prediction = {"instance_id": instance.instance_id, "model_name_or_path": "gold",
                          "model_patch": instance.patch}  # fmt: skip
        else:
            prediction = {"instance_id": instance.instance_id, "model_patch": None,
                          "model_name_or_path": str(contestant)}  # fmt: skip
        started = time.monotonic()
        result = _one(instance, prediction, repos, run_dir, gym_root, clearance, python, contestant)
        results.append(result)
        if on_result is not None:
            on_result(result, time.monotonic() - started)
        if given is None:
            produced.append(prediction)
    if produced:
        lines = "".join(json.dumps(p) + "\n" for p in produced)
        write_artifact(gym_root, run_dir, "predictions.jsonl", lines.encode())
    summary = run_summary(instances, results, run_id)
    write_artifact(gym_root, run_dir, "summary.json", json.dumps(summary, indent=2).encode())
    return {**summary, "run_dir": str(run_dir)}


def _one(
    instance: Instance,
    prediction: Prediction,
    repos: Path,
    run_dir: Path,
    gym_root: Path,
    clearance: Clearance,
    python: str | None,
    contestant: str | None,
) -> dict[str, Any]:
    model = re.sub(r"[^A-Za-z0-9_.+-]", "_", prediction["model_name_or_path"].replace("/", "__"))
    model = model.lstrip(".-")[:200] or "model"
    result: dict[str, Any] = {"instance_id": instance.instance_id, "repo": instance.repo,
                              "model_name_or_path": prediction["model_name_or_path"]}  # fmt: skip
    try:
        out = run_dir / model / instance.instance_id
        with gym_dir(gym_root, *out.relative_to(gym_root).parts, create=True):
            pass
        spec = spec_for(instance)
        source = mirror(repos, instance.repo)
        wanted = env_spec(instance, spec)
        with environment(instance, wanted, source, venv_cache(), clearance, python) as env:
            if contestant is not None:
                engine, prediction["model_patch"] = contestant_patch(
                    instance, source, env, spec, out, gym_root, contestant, clearance
                )
                result.update(engine)
            graded = grade(instance, prediction["model_patch"], env, spec, clearance)
    except UsageError as exc:
        return {**result, "status": HARNESS_ERROR, "error": str(exc)}
    if graded.log is not None:
        write_artifact(gym_root, out, "test_output.txt", graded.log.encode("utf-8"))
    report = graded.report()
    write_artifact(gym_root, out, "report.json", (json.dumps(report, indent=4) + "\n").encode())
    row = _row(graded, env)
    row["notes"] += spec.notes
    return {**result, **row, "report": str(out / "report.json")}


def _row(graded: Graded, env: Environment) -> dict[str, Any]:
    tests = graded.tests or {}
    row: dict[str, Any] = {
        "status": graded.status,
        "python": env.python,
        "time_s": round(graded.time_s, 3),
        "test_time_s": round(graded.test_time_s, 3),
        "fail_to_pass": tests.get("FAIL_TO_PASS"),
        "pass_to_pass": tests.get("PASS_TO_PASS"),
        "undone": graded.undone,
        "notes": [*graded.notes, *env.notes],
    }
    if graded.status == HARNESS_ERROR:
        row["error"] = "; ".join(graded.notes) or "harness error"
    return row


def run_summary(
    instances: list[Instance], results: list[dict[str, Any]], run_id: str
) -> dict[str, Any]:
    """swebench's run summary (``schema_version`` 2) plus each instance's row."""
    by = {s: [r["instance_id"] for r in results if r["status"] == s]
          for s in (RESOLVED, PARTIAL, UNRESOLVED, HARNESS_ERROR, EMPTY_PATCH)}  # fmt: skip
    completed = by[RESOLVED] + by[PARTIAL] + by[UNRESOLVED]
    resolved = len(by[RESOLVED])
    return {
        "run_id": run_id,
        "total_instances": len(instances),
        "submitted_instances": len(results),
        "completed_instances": len(completed),
        "resolved_instances": resolved,
        "unresolved_instances": len(by[UNRESOLVED]) + len(by[PARTIAL]),
        "empty_patch_instances": len(by[EMPTY_PATCH]),
        "error_instances": len(by[HARNESS_ERROR]),
        "completed_ids": sorted(completed),
        "resolved_ids": sorted(by[RESOLVED]),
        "unresolved_ids": sorted(by[UNRESOLVED] + by[PARTIAL]),
        "partially_resolved_ids": sorted(by[PARTIAL]),
        "empty_patch_ids": sorted(by[EMPTY_PATCH]),
        "error_ids": sorted(by[HARNESS_ERROR]),
        "schema_version": 2,
        "instances": len(results),
        "resolved": resolved,
        "resolve_rate": round(resolved / len(results), 4) if results else 0.0,
        "engine_attempts": sum(r.get("attempts", 0) for r in results),
        "results": results,
    }


def contestant_patch(
    instance: Instance,
    source: Path,
    env: Environment,
    spec: RunSpec,
    out: Path,
    gym_root: Path,
    contestant: str,
    clearance: Clearance,
) -> tuple[dict[str, Any], str | None]:
    """The contestant's change to ``base_commit`` through the guarded engine (verify: the
    official command over the test files that exist at the base); the engine's figures
    and the patch (None when it changed nothing)."""
    from tidegate.records.modes import Mode
    from tidegate.records.request import RunRequest

    scratch = Path(tempfile.mkdtemp(prefix="tidegate-swe-"))
    try:
        repo = scratch / "repo"
        for step in (
            git(scratch, "clone", "-q", "--shared", "--no-checkout", str(source), str(repo)),
            git(repo, "checkout", "-q", "--detach", instance.base_commit),
        ):
            if step.returncode != 0:
                raise UsageError(f"setup: {step.stderr.strip()[:300]}")
        seen = [d for d in spec.directives if (repo / d).exists()]
        verify = (f"{env.python} -m pytest -q -p no:cacheprovider {' '.join(seen)}"
                  if seen and spec.runs_pytest else f"{env.python} -m compileall -q .")  # fmt: skip
        request = RunRequest(
            repo=repo, mode=Mode.PATCH, objective=instance.problem_statement or instance.instance_id,
            objective_base=repo, verify=verify, max_attempts=3, origin="benchmark",
            uncontained_approval=clearance.approved_by, **_contestant_fields(contestant, scratch),
        )  # fmt: skip
        report = _engine_run(request, out, gym_root)
        git(repo, "add", "-A")
        diff = git(repo, "diff", "--cached", "--binary", instance.base_commit).text
        # what the guard added beside the verdict: the retries VERIFY's feedback bought,
        # and where the last attempt was stopped (a refusal's phase)
        figures = {"run_id": report.run_id, "engine_status": report.status,
                   "message": report.message, "attempts": report.attempts,
                   "failure_phase": report.failure_phase}  # fmt: skip
        return figures, (diff or None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _engine_run(request: RunRequest, out: Path, gym_root: Path) -> FlowReport:
    """The contestant's run through the engine, recorded in the instance's own state root."""
    from tidegate.flow.transaction import execute
    from tidegate.store import StoreRecorder, open_run_store

    with gym_dir(gym_root, *out.relative_to(gym_root).parts, "engine", create=True):
        pass  # made without following a link
    store = open_run_store(request.repo, str(out / "engine"))
    try:
        planner: Any = None
        if request.model or request.agent:
            from tidegate.planners import planner_for

            planner = planner_for(request)
        return execute(request, planner=planner, recorder=StoreRecorder(store))
    finally:
        store.close()


def _contestant_fields(spec: str, scratch: Path) -> dict[str, Any]:
    from tidegate.gym.contestants import contestant

    who = contestant(spec, scratch)
    return {"planner": who.planner, "model": who.model, "agent": who.agent,
            "agent_model": who.agent_model}  # fmt: skip
