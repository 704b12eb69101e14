"""Agent CLIs for the tests: found, or skipped with one line (an error in CI, which must
install them: see .ci/run)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import Repo
from tidegate.agents.contracts import load_contract
from tidegate.exec.containment import probe


def require_agent(name: str) -> str:
    contract = load_contract(name)
    program = contract.find_program()
    if program is None:
        message = f"{name} is not installed (install it with: {contract.install})"
        if os.environ.get("CI"):
            pytest.fail(f"CI must install the agent CLIs: {message}")
        pytest.skip(message)
    return program


def require_containment() -> None:
    if not probe().verified:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have bubblewrap: {probe().reason}")
        pytest.skip(f"agents run contained; {probe().reason}")


@pytest.fixture
def dirty(committed_repo: Repo) -> Repo:
    """Staged, unstaged and untracked work the agent must never touch."""
    committed_repo.write("README.md", "# calc\nstaged line\n")
    committed_repo.git("add", "README.md")
    committed_repo.write("README.md", "# calc\nstaged line\nunstaged line\n")
    committed_repo.write("notes.txt", "untracked notes\n")
    return committed_repo
