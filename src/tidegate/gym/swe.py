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
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tidegate.disk.linksafe import DIR_FLAGS, entry_mode, opened_dir, replace_file
from tidegate.errors import CapabilityMismatch, UsageError
from tidegate.exec.containment import ContainmentPolicy, policy_for
from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.runner import CommandResult, run_command, shell_argv
from tidegate.git.command import Git
from tidegate.gym.places import check_plain_name, gym_dir
from tidegate.text.jsonparse import parse_json

_DJANGO = re.compile(r"^(\w+) \(([\w.]+)\)$")
READY_FILE = ".tidegate-ready"


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    requirements: tuple[str, ...] | None = None
    """tidegate's extension: what the gym installs into the instance's own venv."""


def _requirements(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(r, str) and r.strip() for r in value):
        raise UsageError(f"{where}: requirements must be a list of requirement strings")
    return tuple(value)


def venv_cache() -> Path:
    """Where instance venvs are built and kept: the user's cache directory, not the state
    root, which contained commands never see (the key that signs run records is there)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tidegate")) / "swe-venvs"


def _benchmark_run(
    argv: list[str], cwd: Path, policy: ContainmentPolicy, clearance: Clearance, label: str
) -> CommandResult:
    """A benchmark's command (its tests, its requirements' installs) through the one
    runner: contained where bubblewrap works, else only with the user's approval."""
    spill = Path(tempfile.mkdtemp(prefix="tidegate-swe-out-"))
    try:
        return run_command(
            argv, cwd, 1800, spill, label=label, clearance=clearance, containment=policy
        )
    except CapabilityMismatch as exc:
        raise UsageError(str(exc)) from exc


def instance_python(instance: Instance, venvs: Path, base: str, clearance: Clearance) -> str:
    """The interpreter for an instance that lists ``requirements``: a venv the gym builds
    once per (repository, requirements) under ``venvs`` (``venv_cache()``) with ``base``,
    and reuses. The
    installs run the benchmark's packages' code: contained (network on, only the venv
    writable) or as ``clearance`` allows. Since they may write ``venvs``, nothing there is
    followed if a link: ``venvs`` itself is refused, a link at a venv's name is removed
    and the venv built anew."""
    import hashlib

    assert instance.requirements is not None
    key = hashlib.sha256(json.dumps([instance.repo, base, *instance.requirements]).encode())
    name = key.hexdigest()[:16]
    venv = venvs / name
    python = venv / "bin" / "python"
    venvs.parent.mkdir(parents=True, exist_ok=True)
    with opened_dir(venvs.parent, venvs.name, create=True) as venvs_fd:
        if _venv_ready(venvs_fd, name):
            return str(python)
        _remove_entry(venvs_fd, name)
        steps = [[base, "-m", "venv", str(venv)]]
        if instance.requirements:
            steps.append([str(python), "-m", "pip", "install", "--quiet", *instance.requirements])
        policy = policy_for("auto", network=True, writable=(venvs,))
        assert policy is not None
        policy = replace(policy, executables=(base,))
        for argv in steps:
            res = _benchmark_run(argv, venvs, policy, clearance, "venv")
            if not res.ok:
                raise UsageError(
                    f"{instance.instance_id}: building its venv failed: {res.stderr_tail.strip()[-300:]}"
                )
    with opened_dir(venvs.parent, venvs.name, name) as built:
        ready = ("\n".join(instance.requirements) + "\n").encode()
        replace_file(built, READY_FILE, ready, shown=venv / READY_FILE)
    return str(python)


def _venv_ready(venvs: int, name: str) -> bool:
    """The venv ``name`` was built to the end: a directory (not a link) holding the
    ready file."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=venvs)
    except OSError:
        return False
    try:
        mode = entry_mode(fd, READY_FILE)
        return mode is not None and stat.S_ISREG(mode)
    finally:
        os.close(fd)


def _remove_entry(directory: int, name: str) -> None:
    """Whatever is at ``name`` removed: a directory's tree, or the link or file itself."""
    mode = entry_mode(directory, name)
    if mode is None:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)


def _tests(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = parse_json(value)
        except ValueError as exc:
            raise UsageError(f"{where}: not a JSON list of test ids") from exc
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise UsageError(f"{where}: not a list of test ids")
    return tuple(value)


def load_instances(path: Path) -> list[Instance]:
    instances = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read as UTF-8 text") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = parse_json(line)
        except ValueError as exc:
            raise UsageError(f"{where}: invalid JSON") from exc
        missing = [
            k
            for k in (
                "instance_id",
                "repo",
                "base_commit",
                "patch",
                "test_patch",
                "FAIL_TO_PASS",
                "PASS_TO_PASS",
            )
            if k not in raw
        ]
        if missing:
            raise UsageError(f"{where}: missing {', '.join(missing)}")
        if not re.fullmatch(r"[0-9a-f]{7,40}", str(raw["base_commit"])):
            raise UsageError(f"{where}: base_commit is not a commit id")
        instances.append(Instance(
            instance_id=check_plain_name(str(raw["instance_id"]), f"{where}: instance_id"),
            repo=str(raw["repo"]),
            base_commit=str(raw["base_commit"]), problem_statement=str(raw.get("problem_statement", "")),
            patch=str(raw["patch"]), test_patch=str(raw["test_patch"]),
            fail_to_pass=_tests(raw["FAIL_TO_PASS"], f"{where}: FAIL_TO_PASS"),
            pass_to_pass=_tests(raw["PASS_TO_PASS"], f"{where}: PASS_TO_PASS"),
            extra={k: raw[k] for k in ("version", "environment_setup_commit") if k in raw},
            requirements=_requirements(raw.get("requirements"), where),
        ))  # fmt: skip
    return instances


def mirror(repos: Path, repo: str) -> Path:
    owner, _, name = repo.partition("/")
    for candidate in (repos / f"{owner}__{name}", repos / f"{owner}+{name}" / "repo"):
        if (candidate / ".git").exists() or (candidate / "HEAD").is_file():
            return candidate
    raise UsageError(f"no local clone of {repo} under {repos} (expected {owner}__{name})")


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
    res = _benchmark_run(shell_argv(command), repo, policy, clearance, "tests")
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
    from tidegate.flow.transaction import execute
    from tidegate.planners.given import GivenProposalPlanner
    from tidegate.records.modes import Mode
    from tidegate.records.proposal import Proposal
    from tidegate.records.request import RunRequest
    from tidegate.store import StoreRecorder, open_run_store

    scratch = Path(tempfile.mkdtemp(prefix="tidegate-swe-"))
    result: dict[str, Any] = {"instance_id": instance.instance_id, "repo": instance.repo}
    try:
        repo = scratch / "repo"
        source = mirror(repos, instance.repo)
        for step in (
            _git(scratch, "clone", "-q", "--no-hardlinks", str(source), str(repo)),
            _git(repo, "checkout", "-q", "--detach", instance.base_commit),
            _git(repo, "apply", "--whitespace=nowarn", "-", input=instance.test_patch),
            _git(repo, "add", "-A"),
            _git(repo, "commit", "-q", "--no-verify", "-m", "SWE-bench test_patch"),
        ):
            if step.returncode != 0:
                return {**result, "status": "error", "error": f"setup: {step.stderr.strip()[:300]}"}
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
            report = execute(request, planner=planner, recorder=StoreRecorder(store))
        finally:
            store.close()
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
