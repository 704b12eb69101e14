"""Project detection for ``project.detect``: what kind of project is this, and how is it
checked?

The scan goes through the workspace port (confined, ``.git`` and ignored paths skipped,
dependency directories such as ``node_modules`` not entered) and is bounded by depth and
entry count. The report never turns missing evidence into a claim of absence:

* a manifest is a regular *file* with a known name; a directory called ``package.json``
  is not one, and neither is a symlink (its target is reported where it lives, if inside);
* a manifest that does not parse is reported ``malformed`` with the parser's message, one
  that cannot be read (not UTF-8, too large) ``unreadable`` -- both still count as
  evidence that the project uses that ecosystem;
* a scan cut short by a limit says so (``complete: false`` and why), and names the
  directories it did not look into.

Suggested validation commands are data for the caller, derived only from what the
manifests configure (a ``[tool.pytest.ini_options]`` table, a ``test`` script, a ``go.mod``
...). ``runs_repository_script`` marks commands whose behaviour the repository itself
defines (npm scripts, make targets): those are executable repository code and need
approval or containment before they run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from tidegate.workspace.fingerprint import DEFAULT_DERIVED
from tidegate.workspace.port import ListEntry, WorkspaceLimits, WorkspacePort
from tidegate.workspace.project.manifests import manifest_kind, read_manifest
from tidegate.workspace.project.records import ProjectReport, SuggestedCommand
from tidegate.workspace.project.suggest import dedupe, suggest

DEFAULT_MAX_DEPTH = 6
DEFAULT_MAX_ENTRIES = 20_000
_PAGE = 1000
_SHOWN = 50

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".c": "c",
    ".h": "c",
    ".cc": "c++",
    ".cpp": "c++",
    ".hpp": "c++",
    ".cs": "c#",
    ".swift": "swift",
}


# -- detection -------------------------------------------------------------------------------


def detect_project(
    port_or_root: WorkspacePort | Path,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    include_ignored: bool = False,
) -> ProjectReport:
    """Scan the workspace and report manifests, languages and validation suggestions."""
    if isinstance(port_or_root, WorkspacePort):
        return _detect(port_or_root, max_depth, max_entries, include_ignored)
    with WorkspacePort(port_or_root, WorkspaceLimits(max_depth=max_depth)) as port:
        return _detect(port, max_depth, max_entries, include_ignored)


def _detect(
    port: WorkspacePort, max_depth: int, max_entries: int, include_ignored: bool
) -> ProjectReport:
    depth = min(max_depth, port.limits.max_depth)
    reasons: list[str] = []
    if depth < max_depth:
        reasons.append(f"depth capped at {depth} by the workspace limits")
    entries, excluded, excluded_total, cut = _scan(port, depth, max_entries, include_ignored)
    if cut:
        reasons.append(f"stopped after {max_entries} entries; later entries were not examined")
    files = {e.path for e in entries if e.kind == "file"}
    not_examined = sorted(
        e.path for e in entries if e.kind == "dir" and len(e.path.split("/")) >= depth
    )
    if not_examined:
        reasons.append(f"{len(not_examined)} directories at depth {depth} were not looked into")
    manifests = [
        read_manifest(port, entry.path)
        for entry in entries
        if entry.kind == "file" and manifest_kind(entry.path) is not None
    ]
    languages: dict[str, int] = {}
    for entry in entries:
        if entry.kind == "file":
            language = EXTENSIONS.get(PurePosixPath(entry.path).suffix.lower())
            if language is not None:
                languages[language] = languages.get(language, 0) + 1
    suggestions: list[SuggestedCommand] = []
    for manifest in manifests:
        if manifest.status == "ok":
            suggestions += suggest(manifest, files)
    return ProjectReport(
        root=str(port.root),
        complete=not reasons,
        incomplete_reasons=reasons,
        entries_examined=len(entries),
        manifests=manifests,
        languages=dict(sorted(languages.items())),
        suggested_commands=dedupe(suggestions),
        excluded=excluded,
        excluded_total=excluded_total,
        not_examined=not_examined[:_SHOWN],
        scope={
            "max_depth": depth,
            "max_entries": max_entries,
            "include_ignored": include_ignored,
            "not_entered": list(DEFAULT_DERIVED),
        },
    )


def _scan(
    port: WorkspacePort, depth: int, max_entries: int, include_ignored: bool
) -> tuple[list[ListEntry], list[str], int, bool]:
    """Page through a listing of the whole root; True when ``max_entries`` cut it short."""
    entries: list[ListEntry] = []
    excluded: list[str] = []
    excluded_total = 0
    cursor: str | None = None
    while True:
        page = port.list(
            ".",
            depth=depth,
            cursor=cursor,
            limit=min(_PAGE, max_entries - len(entries) + 1),
            include_ignored=include_ignored,
            exclude_names=DEFAULT_DERIVED,
        )
        entries += page.entries
        excluded_total += page.excluded_total
        excluded += [x for x in page.excluded if x not in excluded][: _SHOWN - len(excluded)]
        if len(entries) > max_entries:
            return entries[:max_entries], excluded, excluded_total, True
        if not page.truncated:
            return entries, excluded, excluded_total, False
        cursor = page.next_cursor
