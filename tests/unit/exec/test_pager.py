"""Which pager the text report and ``tidegate diff`` go through on a terminal."""

from __future__ import annotations

import pytest

from tidegate.exec.pager import pager_command


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "less"),
        ({"PAGER": "more"}, "more"),
        ({"PAGER": "more", "GIT_PAGER": "delta"}, "delta"),
        ({"GIT_PAGER": "delta", "TIDEGATE_PAGER": "bat -p"}, "bat -p"),
        ({"TIDEGATE_PAGER": "", "PAGER": "more"}, None),
        ({"GIT_PAGER": "cat"}, None),
        ({"PAGER": "  "}, None),
    ],
)
def test_the_pager_is_named_as_git_names_it(environ: dict[str, str], expected: str | None) -> None:
    assert pager_command(environ) == expected


def test_git_core_pager_comes_between_git_pager_and_pager() -> None:
    assert pager_command({"PAGER": "more"}, "delta") == "delta"
    assert pager_command({"GIT_PAGER": "bat"}, "delta") == "bat"
    assert pager_command({}, "cat") is None
