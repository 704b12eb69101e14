"""The inspector's escaping: every stored text is sanitised, then HTML-escaped."""

from __future__ import annotations

from tidegate.inspector.markup import block, cut, text
from tidegate.inspector.runs import run_href
from tidegate.inspector.sections import _chunks, _headers


def test_text_is_escaped_after_the_sanitiser() -> None:
    assert text("<a href=\"x\" onclick='y'>&amp;</a>") == (
        "&lt;a href=&quot;x&quot; onclick=&#x27;y&#x27;&gt;&amp;amp;&lt;/a&gt;"
    )
    assert text("\x1b[31mred\u202eevil") == "\\x1b[31mred\\u202eevil"
    assert text("key sk-" + "a1B2" * 8) == "key [REDACTED]"
    assert text("\udcff name") == "\\udcff name"  # an undecodable byte kept as a surrogate
    assert text(None) == ""


def test_long_text_is_cut_with_a_note() -> None:
    assert cut("abcdef", 4) == ("abcd", 2)
    shown = block("x" * 30_000)
    assert shown.count("x") == 20_000 and "10000 more characters not shown" in shown


def test_a_run_link_is_the_id_percent_encoded_whole() -> None:
    assert run_href("/t/", "../../etc/passwd") == "/t/run/..%2F..%2Fetc%2Fpasswd"
    assert run_href("/t/", "javascript:alert(1)") == "/t/run/javascript%3Aalert%281%29"


def test_a_diff_is_split_by_file_and_quoted_names_are_found() -> None:
    name = 'a"b.py'
    diff = 'diff --git a/x.py b/x.py\n+1\ndiff --git "a/a\\"b.py" "b/a\\"b.py"\n-2\n'
    chunks = _chunks(diff)
    assert list(chunks) == ["diff --git a/x.py b/x.py", _headers(name)[1]]
    assert chunks[_headers(name)[1]].endswith("-2\n")
