"""The synthetic SWE-bench mirrors behind the shipped ``swe_data/synthetic.jsonl``: small
repositories built with fixed identities and dates, so their commit ids (the instances'
``base_commit``) are the same on every machine. ``tidegate gym swe-mirrors DIR`` writes
them as ``DIR/owner__name``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tidegate.gym.scenarios import Seed
from tidegate.gym.seed import build

MIRRORS: dict[str, Seed] = {
    "tidegate-gym/calc": Seed(
        files={
            "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
            "test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
        }
    ),
    "tidegate-gym/strings": Seed(
        files={
            "strings.py": "def title(text):\n    return text.upper()\n",
            "tests/__init__.py": "",
            "tests/test_strings.py": (
                "import unittest\n\nfrom strings import title\n\n\n"
                "class StringTests(unittest.TestCase):\n"
                "    def test_empty(self):\n        self.assertEqual(title(''), '')\n"
            ),
        }
    ),
}


def build_mirrors(directory: Path) -> dict[str, str]:
    """Build every mirror under ``directory``; repo -> base commit id."""
    commits = {}
    for repo, seed in MIRRORS.items():
        owner, name = repo.split("/")
        commits[repo] = build(seed, directory / f"{owner}__{name}")
    return commits


def shipped_instances() -> Path:
    return Path(str(resources.files("tidegate.gym") / "swe_data" / "synthetic.jsonl"))
