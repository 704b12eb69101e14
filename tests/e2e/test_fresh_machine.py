"""The suite on a machine without bubblewrap (issue #11), run as a nested pytest.

``TIDEGATE_BWRAP`` naming a missing executable is what a machine without bubblewrap looks
like to tidegate's probe. There the tests that need verified containment skip, all with
one reason, while the tests of the uncontained policy run and pass; with ``CI`` set the
same machine is an error, because CI must test containment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CONTAINMENT_MISSING, ROOT

SAMPLE = "tests/integration/test_containment.py"
"""Contained and uncontained tests side by side."""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", SAMPLE],
        cwd=ROOT,
        env={**clean, "TIDEGATE_BWRAP": str(tmp_path / "no-bwrap"), **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_bubblewrap_contained_tests_skip_with_one_reason(tmp_path: Path) -> None:
    res = _pytest(tmp_path)
    out = res.stdout
    assert res.returncode == 0, out[-3000:]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(line.endswith(CONTAINMENT_MISSING) for line in skips), skips
    assert " passed" in out.splitlines()[-1]  # the uncontained-policy tests ran
    assert f"containment: {CONTAINMENT_MISSING}" in out


def test_in_ci_a_failing_probe_is_an_error_not_a_skip(tmp_path: Path) -> None:
    res = _pytest(tmp_path, CI="true")
    assert res.returncode not in (0, 5), res.stdout[-3000:]
    assert "containment probe failed" in res.stdout + res.stderr
    assert "skipped" not in res.stdout
