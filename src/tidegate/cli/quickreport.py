"""A stored run report for ``tidegate read``, without pydantic and without rich.

``checked`` accepts a report (parsed from the store) only when it is exactly what the
report model (``tidegate.records.report``) writes: every field present in declaration order,
every value of its declared type, every string valid UTF-8. Such a report reads back
unchanged through the model, so the fast path may use it as it is; anything else raises
``Unsupported`` and the full command (which validates it with the model) answers.
tests/unit/test_quickreport.py checks ``MODELS`` against the model.

``report_lines`` is ``tidegate.cli.render.print_report`` as rich prints it to a file or a
pipe (no terminal: no colours, no styles), for the reports it can reproduce exactly;
anything it cannot (a terminal, a table wider than the console, emoji codes, tabs, markup
it does not know) raises ``Unsupported`` and rich renders it.
"""

from __future__ import annotations

import os
import re
import sys

from tidegate.cli.quickread import Unsupported
from tidegate.text.numbers import whole_number
from tidegate.text.paths import quote_path, visible
from tidegate.text.sanitize import sanitize

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    from typing import Any


# A type: "str", "int", "float", "bool", "json" (any JSON value), a model's name,
# ("?", T) for T or null, ("L", values) for a Literal, ("[]", T) for a list of T.
_OPT_STR = ("?", "str")
MODELS: dict[str, tuple[tuple[str, Any], ...]] = {
    "FlowReport": (
        ("status", ("L", ("succeeded", "failed", "conflict", "paused"))),
        ("mode", "str"),
        ("run_id", "str"),
        ("repo", "str"),
        ("attempts", "int"),
        ("max_attempts", "int"),
        ("failure_phase", _OPT_STR),
        ("error_class", _OPT_STR),
        ("message", "str"),
        ("strategy", ("L", ("worktree",))),
        ("fs_mode", ("L", ("read-only", "read-write"))),
        ("planner", "str"),
        ("t0_ref", _OPT_STR),
        ("t0_commit", _OPT_STR),
        ("head", _OPT_STR),
        ("diff", "str"),
        ("diff_sha256", _OPT_STR),
        ("changed_files", ("[]", "ChangedFile")),
        ("applied_files", ("[]", "AppliedFile")),
        ("rejects", ("[]", "str")),
        ("rejects_dir", _OPT_STR),
        ("findings", ("[]", "FindingOut")),
        ("feedback", ("[]", "str")),
        ("verify", ("?", "VerifyOut")),
        ("containment", ("?", "ContainmentOut")),
        ("effective_policy", ("?", "EffectivePolicyOut")),
        ("attempt_events", ("[]", "AttemptEvent")),
        ("phases", ("[]", "PhaseEvent")),
        ("notes", ("[]", "str")),
        ("duration_s", "float"),
        ("replay_hash", _OPT_STR),
    ),
    "ChangedFile": (
        ("path", "str"),
        ("action", ("L", ("create", "modify", "delete"))),
        ("before_sha256", _OPT_STR),
        ("after_sha256", _OPT_STR),
        ("before_mode", _OPT_STR),
        ("after_mode", _OPT_STR),
        ("path_bytes", _OPT_STR),
    ),
    "AppliedFile": (
        ("path", "str"),
        ("action", ("L", ("write", "delete", "unchanged"))),
        ("merged", "bool"),
        ("before_sha256", _OPT_STR),
        ("after_sha256", _OPT_STR),
        ("path_bytes", _OPT_STR),
    ),
    "FindingOut": (
        ("message", "str"),
        ("path", _OPT_STR),
        ("line", ("?", "int")),
        ("severity", "str"),
        ("source", "str"),
    ),
    "VerifyOut": (
        ("command", "str"),
        ("exit_code", ("?", "int")),
        ("timed_out", "bool"),
        ("duration_s", "float"),
        ("output_file", _OPT_STR),
    ),
    "ContainmentOut": (
        ("backend", ("L", ("bubblewrap", "none"))),
        ("verified", "bool"),
        ("network", "bool"),
        ("writable", ("[]", "str")),
        ("readonly", ("[]", "str")),
        ("private_dirs", ("[]", "str")),
        ("shared", ("[]", "SharedDir")),
        ("reason", "str"),
    ),
    "SharedDir": (
        ("path", "str"),
        ("source", "str"),
        ("how", ("L", ("ro-bind", "symlink"))),
    ),
    "EffectivePolicyOut": (
        ("sources", ("[]", "PolicySource")),
        ("validate_policy", "json"),
        ("always_refused", ("[]", "str")),
        ("containment", "json"),
        ("sha256", "str"),
    ),
    "PolicySource": (("path", "str"), ("sha256", "str")),
    "AttemptEvent": (
        ("attempt", "int"),
        ("status", ("L", ("succeeded", "failed"))),
        ("failure_phase", _OPT_STR),
        ("error_class", _OPT_STR),
        ("retryable", ("?", "bool")),
        ("proposal_sha256", _OPT_STR),
        ("candidate_tree", _OPT_STR),
        ("diagnostics", "int"),
        ("feedback_chars", "int"),
        ("duration_ms", "float"),
    ),
    "PhaseEvent": (
        ("attempt", "int"),
        ("phase", "str"),
        ("effect", "str"),
        ("status", ("L", ("ok", "failed"))),
        ("duration_ms", "float"),
        ("detail", "str"),
        ("error_class", _OPT_STR),
    ),
}
"""The report model's fields, in declaration order, as this module checks them."""


def checked(report: object) -> dict[str, Any]:
    """``report`` when it is exactly a dumped ``FlowReport``; else ``Unsupported``."""
    _check(report, "FlowReport")
    assert isinstance(report, dict)
    return report


def _check(value: object, kind: Any) -> None:
    if isinstance(kind, tuple):
        tag, arg = kind
        if tag == "?":
            if value is not None:
                _check(value, arg)
        elif tag == "L":
            if not isinstance(value, str) or value not in arg:
                raise Unsupported(f"not one of {arg}")
        else:
            if not isinstance(value, list):
                raise Unsupported("not a list")
            for item in value:
                _check(item, arg)
    elif kind in _SCALARS:
        if type(value) is not _SCALARS[kind]:
            raise Unsupported(f"not a {kind}")
        if kind == "str":
            _utf8(value)  # type: ignore[arg-type]
        elif kind == "float" and not (-1e308 < value < 1e308):  # type: ignore[operator]
            raise Unsupported("not a finite float")
    elif kind == "json":
        _plain_json(value)
    else:
        fields = MODELS[kind]
        if not isinstance(value, dict) or list(value) != [name for name, _ in fields]:
            raise Unsupported(f"not a {kind}")
        for name, field in fields:
            _check(value[name], field)


_SCALARS = {"str": str, "int": int, "float": float, "bool": bool}


def _utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Unsupported("not UTF-8") from None


def _plain_json(value: object) -> None:
    if isinstance(value, str):
        _utf8(value)
    elif isinstance(value, float):
        if not -1e308 < value < 1e308:
            raise Unsupported("not a finite float")
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(key)
            _plain_json(item)
    elif isinstance(value, list):
        for item in value:
            _plain_json(item)
    elif value is not None and not isinstance(value, int):
        raise Unsupported("not JSON")


# -- rendering as rich does, without a terminal --------------------------------------------

_RICH_TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
"""rich's markup tag (``rich.markup.RE_TAGS``)."""
_EMOJI_CODE = re.compile(r":\S*?:")
"""What rich could read as an emoji code (``:smile:``): such text is left to rich."""
_ESCAPABLE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
"""What ``rich.markup.escape`` escapes."""
_COLOURS = {"red": 31, "green": 32, "yellow": 33, "cyan": 36}
_OUR_TAGS = frozenset({"bold"} | {f"bold {c}" for c in _COLOURS})
_HASH = re.compile(r"[0-9a-f]*|-")


_SGR = {"bold": "1", **{f"bold {c}": f"1;{n}" for c, n in _COLOURS.items()}}
"""The SGR codes rich writes for our styles (standard colours: the same in every colour
system rich picks for a terminal)."""

Styles = dict[str, str]
"""Our style names to the SGR codes a terminal gets; None: no terminal, no codes."""


def console() -> tuple[int, Styles | None]:
    """The width rich's console would use here and the styles it would write
    (``rich.console.Console.is_terminal``, ``size``, ``no_color``); ``Unsupported`` for a
    console it would treat in some other way (a dumb terminal, Windows)."""
    if sys.platform == "win32":
        raise Unsupported("Windows consoles")
    environ = os.environ
    tty_compatible = environ.get("TTY_COMPATIBLE", "")
    force = environ.get("FORCE_COLOR")
    if tty_compatible in ("0", "1"):
        terminal = tty_compatible == "1"
    elif force is not None:
        terminal = force != ""
    else:
        terminal = sys.stdout.isatty()
    styles = None
    if terminal:
        if environ.get("TERM", "").lower() in ("dumb", "unknown"):
            raise Unsupported("a dumb terminal")
        no_colour = environ.get("NO_COLOR", "") != ""
        styles = {name: "1" if no_colour else code for name, code in _SGR.items()}
    return _width(), styles


def _width() -> int:
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = whole_number(columns, 1)
        if width is None:
            raise Unsupported("an unusual COLUMNS")
        return width
    width = 0
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


def _styled(text: str, style: str | None, styles: Styles | None) -> str:
    """``text`` as rich writes a segment of ``style``."""
    if style is None or styles is None or not text:
        return text
    return f"\x1b[{styles[style]}m{text}\x1b[0m"


def escape(text: str) -> str:
    """``rich.markup.escape``."""

    def escape_backslashes(match: re.Match[str]) -> str:
        backslashes, tag = match.groups()
        return f"{backslashes}{backslashes}\\{tag}"

    text = _ESCAPABLE.sub(escape_backslashes, text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        return text + "\\"
    return text


def _printed(text: str, *, markup: bool = True, styles: Styles | None = None) -> str:
    """What ``SafeConsole.print(text)`` writes (``soft_wrap``, no highlighting): the
    sanitised text with rich's markup rendered (as SGR codes with ``styles``), plus a
    newline."""
    text = sanitize(text)
    if markup and "[" in text:
        pieces = _render_markup(text)
    elif _EMOJI_CODE.search(text):
        raise Unsupported("an emoji code")
    else:
        pieces = [(text, None)]
    return "".join(_styled(_plain(t), style, styles) for t, style in pieces) + "\n"


def _render_markup(markup: str) -> list[tuple[str, str | None]]:
    """The text of rich markup (``rich.markup.render``) in pieces, each with the style it
    is in; for our own tags only, not nested."""
    out: list[tuple[str, str | None]] = []
    style: str | None = None
    position = 0
    for match in _RICH_TAG.finditer(markup):
        full, escapes, tag = match.groups()
        start, end = match.span()
        if start > position:
            out.append((_plain_piece(markup[position:start]), style))
        if escapes:
            backslashes, escaped = divmod(len(escapes), 2)
            if backslashes:
                out.append(("\\" * backslashes, style))
            if escaped:
                out.append((_plain_piece(full[len(escapes) :]), style))
                position = end
                continue
        if style is None and tag in _OUR_TAGS:
            style = tag
        elif style is not None and tag == f"/{style}":
            style = None
        else:
            raise Unsupported(f"markup [{tag}]")
        position = end
    if style is not None:
        raise Unsupported("an unclosed tag")
    if position < len(markup):
        out.append((_plain_piece(markup[position:]), None))
    return out


def _plain_piece(text: str) -> str:
    text = text.replace("\\[", "[")
    if _EMOJI_CODE.search(text):
        raise Unsupported("an emoji code")
    return text


def _plain(text: str) -> str:
    """rich's Text drops these control characters; a tab or a line break it would expand
    or split is left to rich."""
    if "\t" in text or "\n" in text:
        raise Unsupported("a tab or a line break")
    return text.translate(_RICH_STRIPPED)


_RICH_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


def report_lines(report: dict[str, Any], width: int, styles: Styles | None = None) -> str:
    """``print_report(console(), report)`` as rich writes it to a console ``width`` wide
    (a terminal with ``styles``, else a file or a pipe)."""

    def printed(text: str, *, markup: bool = True) -> str:
        return _printed(text, markup=markup, styles=styles)

    out = []
    status = report["status"]
    colour = {"succeeded": "green", "failed": "red", "conflict": "yellow"}.get(status, "cyan")
    out.append(
        printed(
            f"[bold {colour}]{status}[/bold {colour}] {report['mode']} run "
            f"{report['run_id']} after {report['attempts']} attempt(s): "
            f"{escape(visible(report['message']))}"
        )
    )
    if status == "paused":
        out.append(printed(f"  continue it with: tidegate resume {report['run_id']}"))
    elif report["failure_phase"]:
        out.append(printed(f"  failed in {report['failure_phase']} ({report['error_class']})"))
    if report["changed_files"]:
        out.append(_table(report["changed_files"], width, styles))
    if report["diff_sha256"]:
        out.append(printed(f"  diff sha256 {report['diff_sha256']}  (T0 {report['t0_ref']})"))
    for finding in report["findings"]:
        where = f"{finding['path']}:{finding['line'] or ''} " if finding["path"] else ""
        message = visible(where + finding["message"])
        out.append(printed(f"  [{finding['severity']}] {message}", markup=False))
    if report["rejects"]:
        rejects_dir = visible(report["rejects_dir"] or "")
        out.append(printed(f"  rejects written to {rejects_dir}:", markup=False))
        for rej in report["rejects"]:
            out.append(printed(f"    {quote_path(rej)}", markup=False))
    for number, text in enumerate(report["feedback"], start=1):
        out.append(printed(f"  feedback from attempt {number}:", markup=False))
        lines = text.splitlines()
        for line in lines[:15]:
            out.append(printed(f"    {visible(line)}", markup=False))
        if len(lines) > 15:
            out.append(
                printed(
                    f"    ... ({len(lines) - 15} more lines in the --json report)", markup=False
                )
            )
    for note in report["notes"]:
        out.append(printed(f"  note: {visible(note)}", markup=False))
    return "".join(out)


_HEADERS = ("change", "path", "before sha256", "after sha256")


def _table(files: list[dict[str, Any]], width: int, styles: Styles | None) -> str:
    """rich's ``Table(box=None, pad_edge=False, header_style="bold")`` of the changed
    files, when every cell is one line of printable ASCII and the table fits the width
    (rich wraps otherwise). On a terminal each header cell and each of its paddings is a
    bold segment of its own, as rich writes them."""
    rows = [_HEADERS]
    for f in files:
        path = sanitize(_shown(f["path"], f["path_bytes"]))
        before, after = (f["before_sha256"] or "-")[:16], (f["after_sha256"] or "-")[:16]
        if not (path.isascii() and path.isprintable()) or path != path.strip() or "  " in path:
            raise Unsupported("a path rich might measure or wrap differently")
        if not (_HASH.fullmatch(before) and _HASH.fullmatch(after)):
            raise Unsupported("a digest that is not one")
        rows.append((f["action"], _plain(path), before, after))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS))]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        raise Unsupported("a table wider than the console")
    last = len(widths) - 1
    lines = []
    for number, row in enumerate(rows):
        style = "bold" if number == 0 else None
        pad = _styled(" ", style, styles)
        cells = (
            (pad if i else "") + _styled(cell.ljust(widths[i]), style, styles)
            + (pad if i < last else "")
            for i, cell in enumerate(row)
        )  # fmt: skip
        lines.append("".join(cells) + "\n")
    return "".join(lines)


def _shown(path: str, raw_b64: str | None) -> str:
    """``tidegate.cli.render._shown``."""
    if raw_b64 is None:
        return quote_path(path)
    import binascii

    return quote_path(os.fsdecode(binascii.a2b_base64(raw_b64.encode("ascii"))))
