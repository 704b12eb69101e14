"""The text of ``tidegate runs`` and of ``tidegate read`` (before its report): the lines,
built from plain rows and views, and written through the one sanitiser.

Shared by the full commands (``tidegate.cli.records``) and the fast path
(``tidegate.cli.quickread``), so both print the same bytes.
"""

from __future__ import annotations

from tidegate.text.sanitize import sanitize

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    from typing import Any

_RICH_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
"""The control characters rich's console drops from printed text; ``line`` drops the
same, so these lines read the same as before they stopped going through rich."""


def line(text: str) -> str:
    """One line for a person: secrets redacted, control characters made visible."""
    return sanitize(text.translate(_RICH_STRIPPED)) + "\n"


def runs_text(rows: list[dict[str, Any]]) -> str:
    """The listing of ``tidegate runs``: one line per run, newest first, in fixed columns
    (id, kind, mode, status, files changed, duration, when it started), then the
    objective's first line, the failure's class, and the repository when there are
    several. The status is what became of the change when something did (``applied``,
    ``discarded``, ``undone``), else the run's own (``held``, ``interrupted``...); a
    change that landed carries its place in the work tree's landing order (``#3``)."""
    if not rows:
        return line("no recorded runs")
    several = len({r["repo"] for r in rows}) > 1
    out = []
    for r in rows:
        status = r.get("landing") or r["status"]
        if r.get("landed_seq"):
            status = f"{status} #{r['landed_seq']}"
        files = r.get("files_changed")
        count = "-" if files is None else str(files)
        tail = f"  {r['objective']}" if r.get("objective") else ""
        tail += f"  [{r['error_class']}]" if r["error_class"] else ""
        tail += f" ({r['problem']})" if r.get("problem") else ""
        tail += f"  {r['repo']}" if several else ""
        out.append(
            line(
                f"{r['run_id']}  {r.get('kind', 'engine'):<7}{r['mode']:<6} {status:<14} "
                f"{count:>3} file(s) {_duration(r['duration_s']):>7}  "
                f"{_when(r.get('started_ms', 0))}{tail}"
            )
        )
    return "".join(out)


def _duration(seconds: float) -> str:
    if seconds < 1:  # a run cut short early still shows that it ran: "0.04s", not "0.0s"
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _when(started_ms: int) -> str:
    """The local time a run started, to the minute (``-`` when unknown)."""
    if not started_ms:
        return "-".ljust(16)
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started_ms / 1000))


def view_text(view: dict[str, Any]) -> str:
    """``tidegate read`` for a person, up to the report: run, phases, attempts, effects,
    evidence and how to resume."""
    out = []
    run = view["run"]
    failure = f" {run['error_class']} in {run['failure_phase']}" if run["error_class"] else ""
    out.append(
        line(f"run {run['run_id']}  {run['mode']}  {run['status']}{failure}  task {run['task_id']}")
    )
    out.append(line("phases:"))
    for p in view["phases"]:
        out.append(
            line(
                f"  attempt {p['attempt']} {p['phase']:<15} {p['status']:<6} "
                f"{p['duration_ms']:>9.1f} ms  {p['detail']}"
            )
        )
    out.append(line("attempts:"))
    for a in view["attempts"]:
        why = f" {a['error_class']} in {a['failure_phase']}" if a.get("error_class") else ""
        tree = f"  candidate {a['candidate_tree'][:12]}" if a.get("candidate_tree") else ""
        out.append(line(f"  {a['attempt']}: {a['status']}{why}{tree}"))
    effects = view["effects"]
    out.append(line("effects:"))
    for f in effects["applied_files"]:
        out.append(
            line(
                f"  {f['action']:<9} {f['path']}  {(f['before_sha256'] or '-')[:12]} -> "
                f"{(f['after_sha256'] or '-')[:12]}"
            )
        )
    for c in effects["tool_calls"]:
        out.append(line(f"  tool {c['canonical_tool']} {c['tool_call_id']}: {c['status']}"))
    evidence = view["evidence"]
    out.append(line("evidence:"))
    out.append(
        line(
            f"  trace: {evidence['trace_events']} event(s); checkpoints: "
            f"{evidence['checkpoints']} ({evidence['checkpoint_chain']})"
        )
    )
    if evidence["replay_hash"]:
        out.append(line(f"  replay hash {evidence['replay_hash']}"))
    for landing in view.get("landings", []):
        by = landing["detail"].get("by_run")
        how = f" (a subset, verified and landed by run {by})" if by else ""
        out.append(line(f"  change {landing['action']} {_when(landing['at_ms'])}{how}"))
    if view["resume"]:
        r = view["resume"]
        after = f"after {r['after']}" if r["after"] else "at the start"
        out.append(line(f"  resumable {after} of attempt {r['attempt']}: {r['command']}"))
    return "".join(out)


def landing_text(outcome: dict[str, Any]) -> str:
    """What ``tidegate apply``, ``discard`` or ``undo`` did to one run, for a person."""
    out = [line(outcome["message"])]
    for path in outcome["written"]:
        how = "merged " if path in outcome["merged"] else "written"
        how = "deleted" if path in outcome.get("deleted", ()) else how
        out.append(line(f"  {how} {path}"))
    if outcome["rejects"]:
        out.append(line(f"  rejects written to {outcome['rejects_dir']}:"))
        out.extend(line(f"    {rej}") for rej in outcome["rejects"])
    return "".join(out)


def gc_lines(summary: Any) -> list[str]:
    """What ``tidegate gc`` did (or, with --dry-run, would do), one line per kind."""
    would = "would be " if summary.dry_run else ""
    out = [
        f"{summary.runs_kept} run(s) kept in refs/tidegate/keep; "
        f"{len(summary.runs_pruned)} {would}pruned, {len(summary.runs_folded)} {would}folded "
        f"in, {summary.refs_deleted} per-run ref(s) {would}deleted; "
        f"{summary.refs_left} ref(s) left under refs/tidegate/"
    ]
    removed = [
        ("shadow(s)", summary.removed_shadows),
        ("scratch dir(s)", summary.removed_scratch),
        ("sandbox dir(s)", summary.removed_sandboxes),
        ("sub-agent copies", summary.removed_copies),
    ]
    parts = [f"{len(paths)} {what}" for what, paths in removed]
    pool = f"{len(summary.removed_pool)} idle warm pool shadow(s)"
    groups = len(summary.killed_groups)
    killed = f"; {groups} process group(s) left running" if groups else ""
    verb = "would remove" if summary.dry_run else "removed"
    out.append(f"{verb} what dead runs left: {', '.join(parts)}; {pool}{killed}")
    if summary.dry_run:
        out += [f"  {path}" for _, paths in removed for path in paths]
        out += [f"  {path}" for path in summary.removed_pool]
        out.append("undo bytes: pruned only by gc itself (not measured by --dry-run)")
    else:
        out.append(f"undo bytes freed: {summary.undo_bytes_freed}")
    if summary.runs_pruned:
        out.append("`git gc` reclaims the pruned runs' objects")
    out += [f"error: {e}" for e in summary.errors]
    return out


def recover_lines(summary: Any, rollback: bool) -> list[str]:
    """What ``tidegate recover`` did, one line each, for a person."""
    lines: list[str] = []
    if not (
        summary.journals
        or summary.removed_shadows
        or summary.removed_scratch
        or summary.removed_copies
        or summary.removed_sandboxes
        or summary.killed_groups
        or summary.errors
    ):
        lines.append("nothing to recover")
    for j in summary.journals:
        run_id, _, kind = j.run_id.partition(".")
        what = {"apply": "apply", "undo": "undo"}.get(kind, "apply-back")
        lines.append(f"run {run_id}: {what} {j.action}; {len(j.finished)} path(s) written")
        if kind and j.action == "completed":
            lines.append(
                f"  run `tidegate {what} {run_id}` again to record it (nothing is written twice)",
            )
        elif j.action == "completed":
            lines.append(
                f"  its record says 'interrupted' until `tidegate resume {j.run_id}` "
                "records the report (nothing is written twice)",
            )
        for path in j.diverged:
            lines.append(f"  left alone (changed since the crash): {path}")
        for kept in j.kept:
            beside = (
                f"the {'old' if rollback else 'new'} version is in {kept.side_copy}"
                if kept.side_copy
                else f"the {'old' if rollback else 'new'} version has no file there"
            )
            lines.append(
                f"  kept your edit of {kept.path} (changed after the crash); {beside}",
            )
    for path in summary.removed_shadows:
        lines.append(f"removed stale shadow {path}")
    for path in summary.removed_scratch:
        lines.append(f"removed stale scratch directory {path}")
    for path in summary.removed_copies:
        lines.append(f"removed a dead sub-agent's copy {path}")
    for path in summary.removed_sandboxes:
        lines.append(f"removed a dead command's sandbox directory {path}")
    for group in summary.killed_groups:
        lines.append(f"killed process group {group}, left running by a dead tidegate process")
    return lines
