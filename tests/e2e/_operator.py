"""Running operator commands through the real CLI entry point, in process (the same
``tidegate.cli.app.main`` the console script calls), with their stdout and exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tidegate.cli.app import main

EDIT = (
    "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\nverify-contains: return a + b\n"
)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        value = json.loads(self.out)
        assert isinstance(value, dict)
        return value


def op(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)
