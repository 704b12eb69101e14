"""Attack: text tidegate shows (a file name, a command's output, a model's answer, a record)
carries Unicode bidirectional controls, so what the terminal displays is not what the bytes
say ("Trojan Source", CVE-2021-42574): embeddings and overrides (U+202A-U+202E), isolates
(U+2066-U+2069), and the implicit marks (U+200E, U+200F, U+061C) that move neutral
characters as an override does. The one sanitiser writes each of them out visibly,
in plain text and in JSON-shaped data (values and keys), and the real CLI's messages carry
none raw. Joiners (U+200C, U+200D), which emoji and several scripts need, are kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tidegate.text.sanitize import escape_controls, escape_value, sanitize, sanitize_value

BIDI = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # LRE RLE PDF LRO RLO
    "\u2066", "\u2067", "\u2068", "\u2069",  # LRI RLI FSI PDI
    "\u200e", "\u200f", "\u061c",  # LRM RLM ALM
]  # fmt: skip
TROJAN = 'if access_level != "user\u202e \u2066// Check if admin\u2069 \u2066" {'


def visible(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


@pytest.mark.parametrize("ch", BIDI, ids=[f"U+{ord(c):04X}" for c in BIDI])
def test_each_bidi_control_is_written_out(ch: str) -> None:
    text = f"invoice{ch}fdp.exe"
    for clean in (escape_controls(text), sanitize(text)):
        assert ch not in clean
        assert clean == f"invoice{visible(ch)}fdp.exe"
    value = {f"name{ch}": [f"a{ch}b", {f"k{ch}": f"c{ch}"}]}
    for cleaned in (escape_value(value), sanitize_value(value)):
        assert ch not in "".join(strings(cleaned))  # keys and values: nothing raw
        assert visible(ch) in "".join(strings(cleaned))


def strings(value: object) -> list[str]:
    """Every string of JSON-shaped ``value``, keys included (``repr`` would hide them:
    it escapes what is not printable)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def test_a_trojan_source_line_is_shown_as_its_bytes() -> None:
    clean = sanitize(TROJAN)
    assert clean.isprintable()
    assert clean == TROJAN.replace("\u202e", "\\u202e").replace("\u2066", "\\u2066").replace(
        "\u2069", "\\u2069"
    )


@pytest.mark.parametrize("ch", ["\u200c", "\u200d"])
def test_joiners_are_kept(ch: str) -> None:
    family = f"\U0001f468{ch}\U0001f469"
    assert escape_controls(family) == family and sanitize(family) == family


def test_the_cli_prints_none_of_them_raw(committed_repo: Repo, tmp_path: Path) -> None:
    """An error that quotes what the user (or a script) passed: a run id full of them."""
    run_id = "run" + "".join(BIDI) + "id"
    res = subprocess.run(
        [sys.executable, "-m", "tidegate", "read", run_id],
        cwd=committed_repo.root,
        env=os.environ.copy(),
        capture_output=True,
        check=False,
    )
    assert res.returncode == 2
    err = res.stderr.decode("utf-8")
    assert err.startswith("tidegate: error: ")
    for ch in BIDI:
        assert ch not in err, f"U+{ord(ch):04X}"
        assert visible(ch) in err
