"""Real SWE-bench-format instances from a project's own history on PyPI: two consecutive
source releases of more-itertools (sdists, which ship the tests). The base commit is the
older release; the gold patch is the newer release's change to the package, the test
patch its change to ``tests/``; FAIL_TO_PASS and PASS_TO_PASS are found by running the
tests (as SWE-bench's validation does): failing before the gold patch and passing after,
passing both times. The only network used is the package registry (``pip download``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

PROJECT, PACKAGE = "more-itertools", "more_itertools"
RELEASES = (("10.2.0", "10.3.0"), ("10.3.0", "10.4.0"), ("10.4.0", "10.5.0"))
_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=_ENV, check=True, capture_output=True)
    return done.stdout.decode()


def sdist(version: str, cache: Path) -> Path:
    """The release's source tree, downloaded once into ``cache``."""
    tree = cache / f"{PROJECT}-{version}"
    if tree.is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "--disable-pip-version-check", "-d", str(cache), f"{PROJECT}=={version}"],
        check=True, capture_output=True,
    )  # fmt: skip
    with tarfile.open(cache / f"{PROJECT}-{version}.tar.gz") as archive:
        archive.extractall(cache, filter="data")
    return tree


def _copy(source: Path, repo: Path, folder: str) -> None:
    shutil.rmtree(repo / folder, ignore_errors=True)
    shutil.copytree(source / folder, repo / folder)


def _diff(repo: Path, source: Path, folder: str) -> str:
    _copy(source, repo, folder)
    _git(repo, "add", "-A")
    patch = _git(repo, "diff", "--cached", "HEAD")
    _git(repo, "reset", "-q", "--hard", "HEAD")
    return patch


def _outcomes(repo: Path, files: list[str], patches: list[str]) -> dict[str, str]:
    for patch in patches:
        subprocess.run(["git", "apply", "-"], cwd=repo, env=_ENV, input=patch.encode(), check=True)
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q", *files],
        cwd=repo, env=env, capture_output=True, text=True,
    )  # fmt: skip
    _git(repo, "reset", "-q", "--hard", "HEAD")
    _git(repo, "clean", "-fdxq")
    return {m[1]: m[0] for m in re.findall(r"^(PASSED|FAILED|ERROR) (\S+)", done.stdout, re.M)}


def release_instance(old: str, new: str, mirrors: Path, cache: Path) -> dict[str, Any]:
    """The instance ``old`` -> ``new`` on a mirror ``more-itertools__<old>`` under
    ``mirrors`` (one repository per instance, named as the instance's repo)."""
    repo_name = f"{PROJECT}/{PROJECT}-{old}"
    repo = mirrors / f"{PROJECT}__{PROJECT}-{old}"
    base, head = sdist(old, cache), sdist(new, cache)
    shutil.copytree(base, repo, ignore=shutil.ignore_patterns("PKG-INFO"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{PROJECT} {old}")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    gold, tests = _diff(repo, head, PACKAGE), _diff(repo, head, "tests")
    files = sorted(set(re.findall(r"^diff --git a/\S+ b/(\S+\.py)$", tests, re.M)))
    before, after = _outcomes(repo, files, [tests]), _outcomes(repo, files, [gold, tests])
    f2p = sorted(t for t, s in after.items() if s == "PASSED" and before.get(t) != "PASSED")
    p2p = sorted(t for t, s in after.items() if s == "PASSED" and before.get(t) == "PASSED")
    return {
        "instance_id": f"{PROJECT}__{old}-{new}", "repo": repo_name, "base_commit": commit,
        "problem_statement": f"The changes of {PROJECT} {new}.", "patch": gold,
        "test_patch": tests, "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
        "version": old,
    }  # fmt: skip
