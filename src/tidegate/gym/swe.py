"""SWE-bench instances through the guarded engine: ``tidegate gym swe INSTANCES.jsonl``.

Reads the public instance format (``instance_id``, ``repo``, ``base_commit``,
``problem_statement``, ``patch``, ``test_patch``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as
JSON lists or JSON-encoded strings; ``version`` and ``environment_setup_commit`` are
kept). Nothing is downloaded: ``--repos DIR`` holds local clones named ``owner__name``
(or ``owner+name/repo``).

For each instance: clone the local mirror to a temp dir, check out ``base_commit``, apply
``test_patch`` and commit it; then the contestant's proposal (``--oracle``: the gold
``patch``) runs through the guarded engine with VERIFY running exactly the FAIL_TO_PASS and
PASS_TO_PASS tests. The oracle run is also the harness check: every FAIL_TO_PASS test must
fail before the patch and pass after, every PASS_TO_PASS test pass after.

Test ids: pytest node ids (``tests/test_x.py::test_y``, parametrized ones included) run
with pytest; Django-style ``test_name (dotted.module.Class)`` ids run with ``unittest`` as
``dotted.module.Class.test_name``. Outcomes are parsed per test from the runner's own
report (pytest ``-rA``, unittest ``-v``). The ``swebench`` package's grading code is not
used: it depends on Docker and Hugging Face datasets, which this offline, Docker-less
setting cannot give; the logic here is the same rule (resolved = every FAIL_TO_PASS and
every PASS_TO_PASS passes after the patch).

The interpreter: ``--python PATH`` runs the tests; else, for an instance that lists
``requirements`` (tidegate's extension of the format: pip requirement strings), a venv the
gym builds once per repository and requirements in the user's cache directory
(``swe-venvs``); else the
interpreter running tidegate. Bare, sympy-style test names (``test_foo``) run with pytest
``-k`` over the files the test patch touches.

Here: the runs, the test commands and their outcomes; the instance format is read in
``swe_instances``, the venvs are built in ``swe_venv``.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.errors import UsageError
from tidegate.exec.containment import policy_for
from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.runner import shell_argv
from tidegate.git.command import Git
from tidegate.gym.places import gym_dir
from tidegate.gym.swe_instances import Instance, load_instances, mirror
from tidegate.gym.swe_venv import benchmark_run, instance_python, venv_cache

if TYPE_CHECKING:
    from tidegate.records.report import FlowReport
    from tidegate.records.request import RunRequest

_DJANGO = re.compile(r"^(\w+) \(([\w.]+)\)$")
_BARE = re.compile(r"^test\w*$")


def test_files(test_patch: str) -> tuple[str, ...]:
    """The files a test patch touches (where bare, sympy-style test names live)."""
    return tuple(dict.fromkeys(re.findall(r"^\+\+\+ b/(\S+)$", test_patch, re.M)))


def verify_command(python: str, tests: tuple[str, ...], files: tuple[str, ...] = ()) -> str:
    """One command that runs exactly ``tests`` and reports each one's outcome."""
    django = [_DJANGO.match(t) for t in tests]
    if tests and all(django):
        ids = [f"{m.group(2)}.{m.group(1)}" for m in django if m]
        return f"{shlex.quote(python)} -m unittest -v " + " ".join(shlex.quote(i) for i in ids)
    if tests and files and all(_BARE.match(t) for t in tests):
        # sympy-style bare names: those functions, in the files the test patch touched
        selector = " or ".join(tests)
        return (
            f"{shlex.quote(python)} -B -m pytest -rA -q -p no:cacheprovider "
            + " ".join(shlex.quote(f) for f in files)
            + f" -k {shlex.quote(selector)}"
        )
    return f"{shlex.quote(python)} -B -m pytest -rA -q -p no:cacheprovider " + " ".join(
        shlex.quote(t) for t in tests
    )


def outcomes(output: str, tests: tuple[str, ...]) -> dict[str, bool]:
    """Per test: passed or not, from pytest ``-rA`` or unittest ``-v`` output. A bare,
    sympy-style name passes when every case of it (``test_x``, ``test_x[...]``) passed."""
    passed: set[str] = set()
    failed: set[str] = set()
    for line in output.splitlines():
        line = line.strip()
        for word, into in (("PASSED ", passed), ("FAILED ", failed), ("ERROR ", failed)):
            if line.startswith(word):
                node = line.removeprefix(word).split(" - ")[0].strip()
                into.add(node)
                into.add(node.rsplit("::", 1)[-1].split("[", 1)[0])  # the bare name
        # unittest -v: "test_x (pkg.mod.Class) ... ok" (3.11+: "(pkg.mod.Class.test_x)")
        match = re.match(r"^(\w+) \(([\w.]+?)(?:\.\1)?\).*\.\.\. ok$", line)
        if match:
            passed.add(f"{match.group(1)} ({match.group(2)})")
    return {t: t in passed and t not in failed for t in tests}


_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "gym", "GIT_AUTHOR_EMAIL": "gym@tidegate.invalid",
            "GIT_COMMITTER_NAME": "gym", "GIT_COMMITTER_EMAIL": "gym@tidegate.invalid"}  # fmt: skip


def _git(cwd: Path, *args: str, input: str | None = None) -> Any:
    """A git call through the one git wrapper (no hooks, no pager, no prompts). Its
    transports are all off but the local one, for the clone of the local mirror."""
    data = input.encode("utf-8") if input is not None else None
    git = Git(cwd, config=("protocol.file.allow=always",))
    return git.run(*args, env=_GIT_ENV, input=data, check=False)


def _run_tests(repo: Path, command: str, python: str, clearance: Clearance) -> str:
    """The instance's tests, run the benchmark's way: contained (the clone writable, no
    network) or as ``clearance`` allows."""
    policy = policy_for("auto", network=False, writable=(repo,))
    assert policy is not None
    policy = replace(policy, executables=(python,))
    res = benchmark_run(shell_argv(command), repo, policy, clearance, "tests")
    out = res.stdout_file.read_bytes() + res.stderr_file.read_bytes()
    return out.decode("utf-8", "replace")


def run_instance(
    instance: Instance,
    repos: Path,
    gym_root: Path,
    *,
    oracle: bool,
    contestant: str | None,
    python: str,
    approval: str | None = None,
) -> dict[str, Any]:
    """One instance through the engine. The instance's tests and patches are benchmark
    code: contained, or run uncontained only with the user's ``approval``."""
    from tidegate.records.modes import Mode
    from tidegate.records.request import RunRequest

    scratch = Path(tempfile.mkdtemp(prefix="tidegate-swe-"))
    result: dict[str, Any] = {"instance_id": instance.instance_id, "repo": instance.repo}
    try:
        repo = scratch / "repo"
        failure = _prepare_clone(scratch, repo, mirror(repos, instance.repo), instance)
        if failure is not None:
            return {**result, "status": "error", "error": f"setup: {failure}"}
        tests = instance.fail_to_pass + instance.pass_to_pass
        command = verify_command(python, tests, test_files(instance.test_patch))
        clearance = Clearance(Origin.BENCHMARK, approval)
        if oracle:
            before = outcomes(_run_tests(repo, command, python, clearance), instance.fail_to_pass)
            result["fail_to_pass_failed_before"] = all(not ok for ok in before.values())
        request = RunRequest(
            repo=repo, mode=Mode.PATCH, objective=instance.problem_statement or instance.instance_id,
            objective_base=repo, verify=command, max_attempts=1 if oracle else 3,
            origin="benchmark", uncontained_approval=approval,
            **_contestant_fields(contestant, scratch),
        )  # fmt: skip
        report = _engine_run(request, repo, instance, gym_root, oracle=oracle)
        after = outcomes(_run_tests(repo, command, python, clearance), tests)
        f2p = {t: after[t] for t in instance.fail_to_pass}
        p2p = {t: after[t] for t in instance.pass_to_pass}
        resolved = report.status == "succeeded" and all(f2p.values()) and all(p2p.values())
        result.update(
            status="resolved" if resolved else "not-resolved",
            run_id=report.run_id, engine_status=report.status, message=report.message,
            fail_to_pass=f2p, pass_to_pass=p2p,
        )  # fmt: skip
        if oracle:
            result["harness_ok"] = bool(result["fail_to_pass_failed_before"] and resolved)
        return result
    except UsageError as exc:
        return {**result, "status": "error", "error": str(exc)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _prepare_clone(scratch: Path, repo: Path, source: Path, instance: Instance) -> str | None:
    """Clone the mirror to ``repo`` at the base commit with the test patch committed;
    the first failing step's error, or None."""
    for step in (
        _git(scratch, "clone", "-q", "--no-hardlinks", str(source), str(repo)),
        _git(repo, "checkout", "-q", "--detach", instance.base_commit),
        _git(repo, "apply", "--whitespace=nowarn", "-", input=instance.test_patch),
        _git(repo, "add", "-A"),
        _git(repo, "commit", "-q", "--no-verify", "-m", "SWE-bench test_patch"),
    ):
        if step.returncode != 0:
            return str(step.stderr.strip()[:300])
    return None


def _engine_run(
    request: RunRequest, repo: Path, instance: Instance, gym_root: Path, *, oracle: bool
) -> FlowReport:
    """The contestant's (or, for the oracle, the gold patch's) run through the engine,
    recorded in the instance's own state root."""
    from tidegate.flow.transaction import execute
    from tidegate.planners.given import GivenProposalPlanner
    from tidegate.records.proposal import Proposal
    from tidegate.store import StoreRecorder, open_run_store

    with gym_dir(gym_root, "swe", instance.instance_id, create=True):
        pass  # the instance's state root, made without following a link
    store = open_run_store(repo, str(gym_root / "swe" / instance.instance_id))
    try:
        planner: Any = None
        if oracle:
            planner = GivenProposalPlanner(Proposal(diff=instance.patch), "the gold patch")
        if planner is None and (request.model or request.agent):
            from tidegate.planners import planner_for

            planner = planner_for(request)
        return execute(request, planner=planner, recorder=StoreRecorder(store))
    finally:
        store.close()


def _contestant_fields(spec: str | None, scratch: Path) -> dict[str, Any]:
    from tidegate.gym.contestants import contestant

    if spec is None:
        return {}
    who = contestant(spec, scratch)
    return {
        "planner": who.planner,
        "model": who.model,
        "agent": who.agent,
        "agent_model": who.agent_model,
    }


def run_swe(
    path: Path,
    repos: Path,
    gym_root: Path,
    *,
    oracle: bool,
    contestant: str | None,
    only: list[str],
    python: str | None,
    allow_uncontained: bool = False,
) -> dict[str, Any]:
    if oracle and contestant:
        raise UsageError("give --oracle or --contestant, not both")
    if not oracle and not contestant:
        raise UsageError("give --oracle (the gold patches) or --contestant SPEC")
    # Relative paths are the caller's: each instance runs git and its tests elsewhere.
    repos = repos.absolute()
    if python is not None and "/" in python:
        python = str(Path(python).absolute())
    instances = load_instances(path)
    if only:
        unknown = set(only) - {i.instance_id for i in instances}
        if unknown:
            raise UsageError(f"unknown instance(s): {', '.join(sorted(unknown))}")
        instances = [i for i in instances if i.instance_id in only]
    approval = "--allow-uncontained" if allow_uncontained else None
    results = []
    for instance in instances:
        chosen = python or sys.executable
        if python is None and instance.requirements is not None:
            try:
                chosen = instance_python(
                    instance,
                    venv_cache(),
                    sys.executable,
                    Clearance(Origin.BENCHMARK, approval),
                )
            except UsageError as exc:
                results.append(
                    {"instance_id": instance.instance_id, "repo": instance.repo,
                     "status": "error", "error": str(exc)}
                )  # fmt: skip
                continue
        result = run_instance(
            instance,
            repos,
            gym_root,
            oracle=oracle,
            contestant=contestant,
            python=chosen,
            approval=approval,
        )
        results.append({**result, "python": chosen})
    resolved = sum(1 for r in results if r["status"] == "resolved")
    return {
        "instances": len(results),
        "resolved": resolved,
        "resolve_rate": round(resolved / len(results), 4) if results else 0.0,
        "results": results,
    }
