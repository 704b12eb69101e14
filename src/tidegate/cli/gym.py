"""``tidegate gym``: list, run, compare, run-suite. Artifacts go under
``<state root>/gym`` (``--state-root``, else ``$TIDEGATE_STATE_ROOT``, else the user state
dir), never into a workspace. Every command has ``--json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

gym_app = typer.Typer(
    name="gym", help="Benchmark scenarios: the same tasks, the same guard, honest numbers.",
    no_args_is_help=True, add_completion=False,
)  # fmt: skip
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
StateRootOpt = Annotated[
    str | None, typer.Option("--state-root", help="Where the gym directory is.")
]
AllowUncontainedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-uncontained",
        help="Where bubblewrap is unusable, run the contestant's code and the benchmark's "
        "tests on this machine uncontained (refused otherwise).",
    ),
]
ContestantOpt = Annotated[
    str | None,
    typer.Option(
        "--contestant",
        help="local-harness, scripted:NAME|PATH, openai:MODEL, anthropic:MODEL or agent:NAME "
        "(default: the scenario's own).",
    ),
]


def _gym_root(state_root: str | None) -> Path:
    from tidegate.gym.places import make_gym_root
    from tidegate.operator.state_root import run_root

    return make_gym_root(run_root(state_root))


def _out(data: Any, as_json: bool, text: str, code: int = 0) -> None:
    from tidegate.text.sanitize import sanitize, sanitize_value

    if as_json:
        sys.stdout.write(json.dumps(sanitize_value(data), indent=2) + "\n")
    else:
        sys.stdout.write(sanitize(text))
    raise typer.Exit(code)


@gym_app.command("list")
def gym_list(as_json: JsonOpt = False) -> None:
    """The shipped scenarios and suites."""
    from tidegate.gym.scenarios import load_scenario, load_suite, names

    scenarios = {n: load_scenario(n) for n in names("scenarios") if not n.endswith(".script")}
    suites = {n: load_suite(n) for n in names("suites")}
    data = {
        "scenarios": [
            {
                "id": s.id,
                "title": s.title,
                "covers": s.covers,
                "mode": s.mode,
                "contestant": s.contestant,
            }
            for s in scenarios.values()
        ],
        "suites": [
            {"id": s.id, "title": s.title, "scenarios": list(s.scenarios)} for s in suites.values()
        ],
    }
    lines = [f"{s.id:<28} {s.mode:<17} {s.covers}" for s in scenarios.values()]
    lines += [f"suite {s.id:<22} {len(s.scenarios)} runs: {s.title}" for s in suites.values()]
    _out(data, as_json, "\n".join(lines) + "\n")


@gym_app.command("run")
def gym_run(
    scenario: Annotated[str, typer.Argument(help="A scenario id (see gym list).")],
    contestant: ContestantOpt = None,
    state_root: StateRootOpt = None,
    allow_uncontained: AllowUncontainedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run one scenario, isolated, and score it."""
    from tidegate.gym.contestants import absolute_contestant
    from tidegate.gym.runner import render_text, run_scenario
    from tidegate.gym.scenarios import load_scenario

    load_scenario(scenario)
    document = run_scenario(
        scenario,
        absolute_contestant(contestant),
        _gym_root(state_root),
        allow_uncontained=allow_uncontained,
    )
    passed = (
        document["scorecard"]["correctness_checks_passed"]
        == document["scorecard"]["correctness_checks_total"]
    )
    text = render_text(document) + f"artifacts: {document['artifacts']}\n"
    _out(document, as_json, text, 0 if passed else 1)


@gym_app.command("compare")
def gym_compare(
    scenario: Annotated[str, typer.Argument(help="A scenario id.")],
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The latest two completed runs: improved, unchanged or regressed."""
    from tidegate.gym.compare import compare
    from tidegate.gym.scenarios import load_scenario

    load_scenario(scenario)
    result = compare(_gym_root(state_root), scenario)
    lines = [f"{scenario}: {result['classification']}"]
    for name, f in result["figures"].items():
        lines.append(
            f"  {name:<26} current {f['current']!s:<12} previous {f['previous']!s:<12} delta {f['delta']}"
        )
    _out(result, as_json, "\n".join(lines) + "\n")


@gym_app.command("run-suite")
def gym_run_suite(
    suite: Annotated[str, typer.Argument(help="A suite id (see gym list).")],
    contestant: ContestantOpt = None,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Parallel runs.")] = 1,
    executor: Annotated[
        str, typer.Option("--executor", help="local (a process pool) or ray.")
    ] = "local",
    address: Annotated[str | None, typer.Option("--address", help="A Ray cluster address.")] = None,
    state_root: StateRootOpt = None,
    allow_uncontained: AllowUncontainedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite's scenarios in parallel; each run is isolated."""
    from tidegate.gym.contestants import absolute_contestant
    from tidegate.gym.scorecard import shown
    from tidegate.gym.suite import run_suite

    result = run_suite(
        suite,
        _gym_root(state_root),
        contestant=absolute_contestant(contestant),
        workers=workers,
        executor=executor,
        address=address,
        allow_uncontained=allow_uncontained,
    )
    lines = [
        f"suite {suite}: {len(result['runs'])} runs on {executor} x{workers} in {result['wall_time_s']} s"
    ]
    failed = 0
    for run in result["runs"]:
        if "error" in run:
            failed += 1
            lines.append(f"  {run['scenario']:<28} ERROR {run['error']}")
            continue
        card = run["scorecard"]
        ok = card["correctness_checks_passed"] == card["correctness_checks_total"]
        failed += not ok
        lines.append(
            f"  {run['scenario']:<28} {run['status']:<10} checks {card['correctness_checks_passed']}/"
            f"{card['correctness_checks_total']}  damage {card['workspace_damage']}  "
            f"retries {shown(card['retry_count'])}"
        )
    _out(result, as_json, "\n".join(lines) + "\n", 0 if not failed else 1)


@gym_app.command("swe")
def gym_swe(
    instances: Annotated[Path, typer.Argument(help="A SWE-bench instance file (JSONL).")],
    repos: Annotated[Path, typer.Option("--repos", help="Local clones named owner__name.")] = Path(
        "."
    ),
    oracle: Annotated[
        bool, typer.Option("--oracle", help="Grade each instance's gold patch.")
    ] = False,
    predictions: Annotated[
        Path | None,
        typer.Option("--predictions", help="Grade an official predictions file (JSONL)."),
    ] = None,
    contestant: ContestantOpt = None,
    instance: Annotated[
        list[str] | None, typer.Option("--instance", help="Only these ids.")
    ] = None,
    python: Annotated[
        str | None,
        typer.Option("--python", help="Override: run the tests with this interpreter."),
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Name the run's directory.")
    ] = None,
    state_root: StateRootOpt = None,
    allow_uncontained: AllowUncontainedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Grade SWE-bench instances the way SWE-bench grades: resolved, partially resolved,
    unresolved, error or empty patch, per instance, with swebench's report.json."""
    from tidegate.gym.contestants import absolute_contestant
    from tidegate.gym.swe import run_swe

    summary = run_swe(
        instances,
        repos,
        _gym_root(state_root),
        oracle=oracle,
        contestant=absolute_contestant(contestant),
        predictions=predictions,
        only=instance or [],
        python=python,
        allow_uncontained=allow_uncontained,
        run_id=run_id,
    )
    lines = [
        f"{r['instance_id']:<32} {r['status']}"
        + (f"  {r.get('error', '')}" if r["status"] == "error" else "")
        for r in summary["results"]
    ]
    lines.append(
        f"resolved {summary['resolved']}/{summary['instances']} (rate {summary['resolve_rate']})"
    )
    lines.append(f"reports: {summary['run_dir']}")
    _out(
        summary,
        as_json,
        "\n".join(lines) + "\n",
        0 if summary["resolved"] == summary["instances"] else 1,
    )


@gym_app.command("swe-mirrors")
def gym_swe_mirrors(
    directory: Annotated[Path, typer.Argument(help="Where to build the synthetic mirrors.")],
    as_json: JsonOpt = False,
) -> None:
    """Build the local mirrors the shipped synthetic instance file refers to."""
    from tidegate.gym.swe_synthetic import build_mirrors, shipped_instances

    commits = build_mirrors(directory)
    text = "".join(f"{repo} {commit}\n" for repo, commit in commits.items())
    _out(
        {"mirrors": commits, "instances": str(shipped_instances())},
        as_json,
        text + f"instances: {shipped_instances()}\n",
    )
