"""``src/tidegate/gym/swe_data/specs.jsonl``: the per-version specs of the Python
repositories as the ``swebench`` package last shipped them (4.1.0's
``MAP_REPO_VERSION_TO_SPECS_PY`` and ``MAP_REPO_TO_REQS_PATHS``; 5.x moved them into each
task's ``eval.sh``). ``python tests/integration/gym/_specs.py`` rewrites the file from the
wheel on PyPI; the slow test in ``test_swe_specs.py`` checks the shipped file against it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

SWEBENCH = "4.1.0"
SHIPPED = Path(__file__).parents[3] / "src" / "tidegate" / "gym" / "swe_data" / "specs.jsonl"


def official_specs(cache: Path) -> dict[str, Any]:
    """The specs read from swebench's own module in its wheel (downloaded once)."""
    wheel = cache / f"swebench-{SWEBENCH}-py3-none-any.whl"
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
             "--disable-pip-version-check", "-d", str(cache), f"swebench=={SWEBENCH}"],
            check=True, capture_output=True,
        )  # fmt: skip
    source = cache / "python_constants.py"
    with zipfile.ZipFile(wheel) as archive:
        source.write_bytes(archive.read("swebench/harness/constants/python.py"))
    loader = importlib.util.spec_from_file_location("swebench_constants_python", source)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return {
        "swebench": SWEBENCH,
        "specs": module.MAP_REPO_VERSION_TO_SPECS_PY,
        "requirements_paths": module.MAP_REPO_TO_REQS_PATHS,
    }


def render(data: dict[str, Any]) -> str:
    """One line per repository (JSONL, so a change reads as a small diff)."""
    return "".join(
        json.dumps({"repo": repo, "swebench": data["swebench"],
                    "requirements_paths": data["requirements_paths"].get(repo, []),
                    "versions": data["specs"][repo]}, sort_keys=True) + "\n"
        for repo in sorted(data["specs"])
    )  # fmt: skip


if __name__ == "__main__":
    cache = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tidegate-swebench-wheel")
    SHIPPED.write_text(render(official_specs(cache)))
    print(SHIPPED)
