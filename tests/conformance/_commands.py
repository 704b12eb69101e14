"""Shared by the command conformance tests: run a shell string contained or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import requires_containment
from tidegate.exec.containment import ContainmentPolicy
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command, shell_argv

BACKENDS = [
    pytest.param("none", id="uncontained"),
    pytest.param(
        "bubblewrap",
        id="bubblewrap",
        marks=requires_containment,
    ),
]


def run_sh(backend: str, ws: Path, command: str, **kwargs: Any) -> CommandResult:
    """``command`` through the published interpreter in ``ws``, under ``backend``."""
    policy = None
    if backend == "bubblewrap":
        policy = ContainmentPolicy(required=True, network=False, writable=(ws,))
    kwargs.setdefault("timeout_s", 20)
    res = run_command(
        shell_argv(command),
        ws,
        spill_dir=ws.parent / "spill",
        containment=policy,
        **kwargs,
        clearance=Clearance.user(),
    )
    assert res.containment.backend == backend
    return res
