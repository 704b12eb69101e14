"""Tolerant application of unified diffs that git apply refuses."""

from __future__ import annotations

import pytest

from tidegate.validate.hunks import HunkError, apply_tolerantly

FILE = "".join(f"line {i}\n" for i in range(1, 21))


def _apply(diff: str, files: dict[str, str]):  # type: ignore[no-untyped-def]
    return apply_tolerantly(
        diff, lambda p: files[p].encode() if p in files else None, lambda p: False
    )


def test_shifted_hunk_applies_and_says_so() -> None:
    diff = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n line 9\n-line 10\n+line ten\n line 11\n"
    result = _apply(diff, {"f.txt": FILE})
    assert result.contents["f.txt"] == FILE.replace("line 10\n", "line ten\n").encode()
    assert "found 7 line(s) below where expected" in result.notes[0]


def test_whitespace_mangled_context_keeps_the_files_own_lines() -> None:
    source = "def f():\n    x = 1   \n    return x\n"
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n def f():\n     x = 1\n-    return x\n+    return x + 1\n"
    result = _apply(diff, {"m.py": source})
    assert result.contents["m.py"] == b"def f():\n    x = 1   \n    return x + 1\n"
    assert "trailing whitespace ignored" in result.notes[0]


def test_create_delete_and_rename() -> None:
    diff = (
        "diff --git a/new.sh b/new.sh\nnew file mode 100755\n--- /dev/null\n+++ b/new.sh\n"
        "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
        "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-bye\n"
        "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/b.txt\n"
        "@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
    )
    result = _apply(diff, {"old.txt": "bye\n", "a.txt": "one\ntwo\n"})
    assert result.contents == {
        "new.sh": b"#!/bin/sh\necho hi\n",
        "old.txt": None,
        "a.txt": None,
        "b.txt": b"one\nTWO\n",
    }
    assert result.executable["new.sh"] is True


def test_no_newline_at_end_of_file() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    result = _apply(diff, {"f": "a\nb"})
    assert result.contents["f"] == b"a\nc"


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        ("not a diff at all\n", "names no file"),
        ("--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-nope\n+yes\n", "expected these lines"),
        ("--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n", "there is no such file"),
        ("--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+x\n", "already exists"),
        ("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n", "malformed"),
    ],
)
def test_refusals_explain_themselves(diff: str, message: str) -> None:
    with pytest.raises(HunkError, match=message):
        _apply(diff, {"f.txt": FILE})


def test_a_hunk_matching_two_places_equally_is_refused() -> None:
    source = "x\ny\nx\ny\n"
    diff = "--- a/f\n+++ b/f\n@@ -9,1 +9,1 @@\n-y\n+z\n"
    with pytest.raises(HunkError, match="matches 2 places"):
        _apply(diff, {"f": source})


def test_a_clear_nearest_match_wins() -> None:
    source = "x\ny\n" + "pad\n" * 10 + "x\ny\n"
    diff = "--- a/f\n+++ b/f\n@@ -13,2 +13,2 @@\n x\n-y\n+z\n"
    result = _apply(diff, {"f": source})
    assert result.contents["f"] == ("x\ny\n" + "pad\n" * 10 + "x\nz\n").encode()
