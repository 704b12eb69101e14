"""Review artifacts: the findings of an engine review run (the same review mode as
``tidegate review``: checks in a shadow, nothing written) and the improvement proposals
derived from them, each with an id that depends only on what it proposes.

Artifacts live in ``<state-root>/review_artifacts/<reviewed_at_unix_ms>-<run_id>.json``;
the latest is the one with the highest ``reviewed_at_unix_ms``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tidegate.operator.errors import RecordError
from tidegate.operator.records import (
    REVIEWS_DIR,
    load_document,
    make_record_dir,
    now_ms,
    schema_name,
    write_json,
)


def proposal_id(finding: dict[str, Any]) -> str:
    key = "\x00".join(
        str(finding.get(k) or "") for k in ("source", "path", "line", "message")
    ).encode()
    return "prop-" + hashlib.sha256(key).hexdigest()[:12]


def proposals_for(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for finding in findings:
        pid = proposal_id(finding)
        where = finding.get("path") or "the repository"
        if finding.get("line"):
            where = f"{where}:{finding['line']}"
        seen.setdefault(
            pid,
            {
                "id": pid,
                "title": f"Address {finding['message']} ({where})",
                "path": finding.get("path"),
                "line": finding.get("line"),
                "severity": finding.get("severity", "error"),
            },
        )
    return list(seen.values())


def write_artifact(root: Path, body: dict[str, Any]) -> Path:
    directory = root / REVIEWS_DIR
    make_record_dir(root, REVIEWS_DIR)
    reviewed = now_ms()
    artifact = {"schema": schema_name("review"), "reviewed_at_unix_ms": reviewed, **body}
    artifact["proposals"] = proposals_for(body["findings"])
    path = directory / f"{reviewed}-{body['run_id']}.json"
    write_json(path, artifact, within=root)
    return path


def latest_artifact(root: Path) -> tuple[Path, dict[str, Any]]:
    directory = root / REVIEWS_DIR
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise RecordError(f"{directory}: not a directory")
    candidates = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if not candidates:
        raise RecordError(f"{root}: no review artifact (run `tidegate review run` first)")
    best: tuple[int, str, Path, dict[str, Any]] | None = None
    for path in candidates:
        artifact = _checked(path)
        key = (artifact["reviewed_at_unix_ms"], path.name)
        if best is None or key > best[:2]:
            best = (*key, path, artifact)
    assert best is not None
    return best[2], best[3]


def _checked(path: Path) -> dict[str, Any]:
    artifact = load_document(path, "review")
    if not isinstance(artifact.get("reviewed_at_unix_ms"), int):
        raise RecordError(f"{path}: malformed review artifact (reviewed_at_unix_ms)")
    for key in ("findings", "proposals"):
        items = artifact.get(key)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise RecordError(f"{path}: malformed review artifact ({key})")
    for proposal in artifact["proposals"]:
        if not isinstance(proposal.get("id"), str) or not isinstance(proposal.get("title"), str):
            raise RecordError(f"{path}: malformed proposal in review artifact")
    if not isinstance(artifact.get("run_id"), str):
        raise RecordError(f"{path}: malformed review artifact (run_id)")
    return artifact
