"""The run report for a person: the one renderer, used by ``run``, ``read`` and ``ledger run``.

It takes the report in its JSON form (what the store keeps, what
``FlowReport.model_dump(mode="json")`` gives), so ``tidegate read`` prints it without
importing the report model, and writes plain lines: to a file or a pipe no codes at all;
on a terminal the status word bold and coloured and the table's header bold (``NO_COLOR``:
bold only; a dumb terminal: none). Every piece of text passes the one sanitiser (secrets
redacted, control characters made visible) before a style is put around it, so a file
name, a command's output or a model's words can neither leak a key onto the screen nor
drive the terminal. Text is printed as it is: a ``[tag]`` or an ``:emoji:`` in a name is
that name, and long lines are left for the terminal to wrap.
"""

from __future__ import annotations

import os
import sys

from tidegate.text.paths import quote_path, visible
from tidegate.text.sanitize import sanitize

TYPE_CHECKING = False  # ``tidegate read`` does not import typing
if TYPE_CHECKING:
    from typing import Any

Styles = dict[str, str]
"""Style names to the SGR codes a terminal gets; None: no terminal, no codes."""

_COLOURS = {"succeeded": 32, "failed": 31, "conflict": 33}
_CYAN = 36
_HEADERS = ("change", "path", "before sha256", "after sha256")
DIFF_LINES = 2000
"""Lines of the change's diff a report shows; ``tidegate diff RUN`` shows all of it."""
FEEDBACK_LINES = 15
"""Lines of each attempt's feedback shown; the rest are in the ``--json`` report."""


def terminal_styles() -> Styles | None:
    """The styles for standard output: None unless it is a terminal (``TTY_COMPATIBLE``
    and ``FORCE_COLOR`` decide first, as they do for rich), bold only under ``NO_COLOR``."""
    environ = os.environ
    forced = environ.get("TTY_COMPATIBLE", "")
    if forced in ("0", "1"):
        terminal = forced == "1"
    elif environ.get("FORCE_COLOR") is not None:
        terminal = environ.get("FORCE_COLOR") != ""
    else:
        terminal = sys.stdout.isatty()
    if not terminal or environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    plain = environ.get("NO_COLOR", "") != ""
    styles = {"bold": "1"}
    for colour in (*_COLOURS.values(), _CYAN):
        styles[f"bold {colour}"] = "1" if plain else f"1;{colour}"
        styles[str(colour)] = "" if plain else str(colour)
    return styles


def report_text(report: dict[str, Any], styles: Styles | None = None) -> str:
    """The report as lines for a person."""
    status = report["status"]
    colour = _COLOURS.get(status, _CYAN)
    head = (
        f" {report['mode']} run {report['run_id']} after {report['attempts']} attempt(s): "
        f"{visible(report['message'])}"
    )
    out = [_styled(_text(status), f"bold {colour}", styles) + line(head)]
    if status == "paused":
        out.append(line(f"  continue it with: tidegate resume {report['run_id']}"))
    elif report["failure_phase"]:
        out.append(line(f"  failed in {report['failure_phase']} ({report['error_class']})"))
    if report["changed_files"]:
        out.append(_table(report["changed_files"], styles))
    if report["diff_sha256"]:
        out.append(line(f"  diff sha256 {report['diff_sha256']}  (T0 {report['t0_ref']})"))
    for finding in report["findings"]:
        where = f"{finding['path']}:{finding['line'] or ''} " if finding["path"] else ""
        out.append(line(f"  [{finding['severity']}] {visible(where + finding['message'])}"))
    if report["rejects"]:
        out.append(line(f"  rejects written to {visible(report['rejects_dir'] or '')}:"))
        out.extend(line(f"    {quote_path(rej)}") for rej in report["rejects"])
    for number, text in enumerate(report["feedback"], start=1):
        out.append(line(f"  feedback from attempt {number}:"))
        lines = text.splitlines()
        out.extend(line(f"    {visible(shown)}") for shown in lines[:FEEDBACK_LINES])
        if len(lines) > FEEDBACK_LINES:
            more = len(lines) - FEEDBACK_LINES
            out.append(line(f"    ... ({more} more lines in the --json report)"))
    out.extend(line(f"  note: {visible(note)}") for note in report["notes"])
    if report["diff"] and status != "paused":
        out.append(diff_text(report["diff"], styles, limit=DIFF_LINES, run_id=report["run_id"]))
    return "".join(out).expandtabs(8)


def diff_text(
    diff: str, styles: Styles | None = None, *, limit: int | None = None, run_id: str = ""
) -> str:
    """A unified diff (``git diff --binary`` as the report keeps it) for a person, as git
    colours it on a terminal: file headers bold, hunk headers cyan, removed lines red,
    added lines green. A binary patch is one line, not its base85 data. Every line passes
    the sanitiser; after ``limit`` lines the rest is counted, not shown."""
    out: list[str] = []
    shown = 0
    binary = False
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, text in enumerate(lines):
        if binary:
            if text.startswith("diff --git "):
                binary = False
            else:
                continue
        if text == "GIT binary patch":
            binary = True
            out.append(_styled(_text("(binary change, not shown)"), "bold", styles) + "\n")
            shown += 1
            continue
        if limit is not None and shown >= limit:
            more = len(lines) - number
            hint = f": tidegate diff {run_id}" if run_id else ""
            out.append(line(f"... ({more} more diff lines{hint})"))
            break
        out.append(_styled(_text(text), _diff_style(text), styles) + "\n")
        shown += 1
    return "".join(out)


def _diff_style(text: str) -> str | None:
    if text.startswith(("diff --git ", "index ", "--- ", "+++ ", "new file", "deleted file")):
        return "bold"
    if text.startswith(("old mode", "new mode", "similarity", "rename ", "Binary files")):
        return "bold"
    if text.startswith("@@"):
        return str(_CYAN)
    if text.startswith("+"):
        return str(_COLOURS["succeeded"])
    if text.startswith("-"):
        return str(_COLOURS["failed"])
    return None


def diff_stat(diff: str) -> str:
    """``git diff --stat``'s summary of a unified diff, counted from the diff itself: one
    line per file with its added and removed lines, then the totals."""
    files: list[tuple[str, int, int, bool]] = []
    binary = False
    for text in diff.split("\n"):
        if text.startswith("diff --git "):
            name = text[len("diff --git ") :]
            half = name[2:].split(" b/", 1)[0] if name.startswith("a/") else name
            files.append((half, 0, 0, False))
            binary = False
        elif not files:
            continue
        elif text == "GIT binary patch" or text.startswith("Binary files"):
            name, added, removed, _ = files[-1]
            files[-1] = (name, added, removed, True)
            binary = True
        elif binary or text.startswith(("+++ ", "--- ")):
            continue
        elif text.startswith("+"):
            name, added, removed, flag = files[-1]
            files[-1] = (name, added + 1, removed, flag)
        elif text.startswith("-"):
            name, added, removed, flag = files[-1]
            files[-1] = (name, added, removed + 1, flag)
    if not files:
        return line("no change")
    width = max(len(f[0]) for f in files)
    out = []
    for name, added, removed, is_binary in files:
        what = "Bin" if is_binary else f"{added + removed:>4} " + "+" * min(added, 40)
        what += "" if is_binary else "-" * min(removed, 40)
        out.append(line(f" {name.ljust(width)} | {what}"))
    total_added = sum(f[1] for f in files)
    total_removed = sum(f[2] for f in files)
    out.append(
        line(
            f" {len(files)} file(s) changed, {total_added} insertion(s)(+), "
            f"{total_removed} deletion(s)(-)"
        )
    )
    return "".join(out)


def diff_files(diff: str) -> list[tuple[str, str]]:
    """A unified diff cut into its files: (path, the file's part of the diff), in order. The
    path is read from the ``diff --git a/P b/P`` header (no renames: both sides are the same
    path), unquoted when git quoted it."""
    parts: list[tuple[str, str]] = []
    for part in ("\n" + diff).split("\ndiff --git ")[1:]:
        header = part.split("\n", 1)[0]
        quoted = header.startswith('"')
        half = (len(header) - (8 if quoted else 5)) // 2  # 'a/P b/P' or '"a/P" "b/P"'
        path = header[3 : 3 + half] if quoted else header[2 : 2 + half]
        if quoted:
            import codecs

            raw = codecs.escape_decode(path.encode("utf-8", "surrogateescape"))[0]
            path = raw.decode("utf-8", "surrogateescape")
        text = "diff --git " + part
        parts.append((path, text if text.endswith("\n") else text + "\n"))
    return parts


def _table(files: list[dict[str, Any]], styles: Styles | None) -> str:
    """The changed files in aligned columns, two spaces apart; the header bold."""
    rows = [_HEADERS]
    for f in files:
        path = _text(_shown(f["path"], f["path_bytes"]))
        before, after = (f["before_sha256"] or "-")[:16], (f["after_sha256"] or "-")[:16]
        rows.append((_text(f["action"]), path, _text(before), _text(after)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS))]
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


def line(text: str) -> str:
    """One line through the sanitiser."""
    return sanitize(text) + "\n"


def _text(text: str) -> str:
    """One piece of a line through the sanitiser."""
    return sanitize(text)


def _styled(text: str, style: str | None, styles: Styles | None) -> str:
    if style is None or styles is None or not text or not styles.get(style):
        return text
    return f"\x1b[{styles[style]}m{text}\x1b[0m"


def _shown(path: str, raw_b64: str | None) -> str:
    """A reported path quoted for the terminal, from its exact bytes when it has them."""
    if raw_b64 is None:
        return quote_path(path)
    import binascii

    return quote_path(os.fsdecode(binascii.a2b_base64(raw_b64.encode("ascii"))))
