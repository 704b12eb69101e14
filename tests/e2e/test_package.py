"""The package builds as a user or an index receives it: an sdist and a wheel
(``python -m build``), metadata that ``twine check`` passes, the console script and the
shipped data files inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_builds_and_passes_twine_check(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheels = list(tmp_path.glob("tidegate-*.whl"))
    sdists = list(tmp_path.glob("tidegate-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "tidegate/py.typed" in names
    assert any(n.startswith("tidegate/agents/contracts/") and n.endswith(".json") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "tidegate = tidegate.cli:entry" in zipfile.ZipFile(wheels[0]).read(entry).decode()
    metadata = zipfile.ZipFile(wheels[0]).read(next(n for n in names if n.endswith("METADATA")))
    text = metadata.decode()
    for extra in ("models", "mcp", "terminal", "all", "dev"):
        assert f"Provides-Extra: {extra}" in text, extra
    assert "Requires-Dist: openai" in text and 'extra == "models"' in text
