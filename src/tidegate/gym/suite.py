"""``gym run-suite``: a suite's scenario runs on a process pool (``local``) or on Ray.

Each run is isolated (``runner.run_scenario``: its own seed repository, state directory
and temp dir), so its scorecard is the same whichever executor ran it. What is shipped to
a worker is only the scenario id, the contestant spec and the gym directory; scenarios and
scripts are package data every worker has; artifacts land in the gym directory (a shared
filesystem on a cluster), and the worker returns the report document.

Ray: ``ray.init()`` starts a local instance (no dashboard) unless ``--address`` names a
cluster. A worker lost mid-run makes Ray retry the task once (``max_retries=1``: a scenario
run is idempotent, a new run directory each time); a second loss is reported as that
entry's error, and the rest of the suite still reports.

``on_result`` is told each run's document as it finishes, in the order they finish (the
returned ``runs`` keep the suite's order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from tidegate.errors import UsageError
from tidegate.gym.runner import run_scenario
from tidegate.gym.scenarios import load_suite


def _one(args: tuple[str, str | None, str, bool]) -> dict[str, Any]:
    scenario, contestant, gym_root, allow_uncontained = args
    try:
        return run_scenario(
            scenario, contestant, Path(gym_root), allow_uncontained=allow_uncontained
        )
    except Exception as exc:  # the suite reports every entry, failed ones included
        return {"scenario": scenario, "error": f"{type(exc).__name__}: {exc}"}


def run_suite(
    suite_id: str,
    gym_root: Path,
    *,
    contestant: str | None,
    workers: int,
    executor: str,
    address: str | None = None,
    allow_uncontained: bool = False,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    suite = load_suite(suite_id)
    jobs = [(s, contestant, str(gym_root), allow_uncontained) for s in suite.scenarios]
    started = time.monotonic()
    if executor == "local":
        if address:
            raise UsageError("--address is for --executor ray")
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_one, job) for job in jobs]
            results = _in_order(futures, on_result)
        startup = 0.0
    elif executor == "ray":
        results, startup = _ray(jobs, workers, address, on_result)
    else:
        raise UsageError(f"--executor {executor!r}: use local or ray")
    wall = time.monotonic() - started
    return {
        "suite": suite.id,
        "executor": executor,
        "workers": workers,
        "wall_time_s": round(wall, 3),
        "executor_startup_s": round(startup, 3),
        "runs": results,
    }


def _in_order(
    futures: list[Future[dict[str, Any]]], on_result: Callable[[dict[str, Any]], None] | None
) -> list[dict[str, Any]]:
    """The futures' results in their order, each told to ``on_result`` as it finishes."""
    if on_result is not None:
        for future in as_completed(futures):
            on_result(future.result())
    return [future.result() for future in futures]


def _ray(
    jobs: list[tuple[str, str | None, str, bool]],
    workers: int,
    address: str | None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[list[dict[str, Any]], float]:
    try:
        import ray
    except ImportError as exc:
        raise UsageError("--executor ray needs Ray: pip install 'ray>=2.40'") from exc
    started = time.monotonic()
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    startup = time.monotonic() - started
    try:
        remote = ray.remote(max_retries=1, num_cpus=1)(_one)
        refs = [remote.remote(job) for job in jobs]
        done: dict[int, dict[str, Any]] = {}
        index = {ref: i for i, ref in enumerate(refs)}
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                i = index[ref]
                try:
                    done[i] = ray.get(ref)
                except Exception as exc:  # a worker lost twice
                    error = f"ray: {type(exc).__name__}: {exc}"
                    done[i] = {"scenario": jobs[i][0], "error": error}
                if on_result is not None:
                    on_result(done[i])
        results = [done[i] for i in range(len(jobs))]
    finally:
        ray.shutdown()
    return results, startup


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A run's scorecard without the figures that move with the machine (for checking that
    two executors gave the same results)."""
    if "error" in document:
        return {"scenario": document["scenario"], "error": document["error"]}
    card = {
        k: v
        for k, v in document["scorecard"].items()
        if k not in ("wall_time_s", "tidegate_overhead_s")
    }
    return {"scenario": document["scenario"], "status": document["status"], "scorecard": card}
