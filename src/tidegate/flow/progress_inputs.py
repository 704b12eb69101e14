"""What a resume must find unchanged: a run's inputs, their digests, and the git blobs
that keep the inputs which can hold repository content (the request, proposals) under
``refs/tidegate/runs/<run-id>/`` in the user's own object store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from tidegate.config.records import TidegateConfig
from tidegate.errors import UsageError
from tidegate.planners import Planner
from tidegate.planners.objective import parse_objective
from tidegate.records.request import RunRequest
from tidegate.workspace.loose import write_blob
from tidegate.workspace.repo import Repository
from tidegate.workspace.snapshot import T0Snapshot

MODEL_HASHES = (
    "prompt",
    "system_prompt",
    "task_contract",
    "registry",
    "effect_policy",
    "model_identity",
    "model_capability",
)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# -- blobs in the user's object store -------------------------------------------------------


class RunBlobs:
    """Run inputs kept as git blobs under ``refs/tidegate/runs/<run-id>/``."""

    def __init__(self, repo: Repository, run_id: str) -> None:
        self.repo = repo
        self.prefix = f"refs/tidegate/runs/{run_id}"
        self._known: dict[tuple[str, str], str] = {}

    def keep(self, name: str, data: bytes) -> dict[str, str]:
        """Store ``data`` under ``<prefix>/<name>``; return its blob id and SHA-256."""
        digest = sha256_hex(data)
        oid = self._known.get((name, digest))
        if oid is None:
            oid = write_blob(self.repo, data)
            self.repo.git.update_ref(f"{self.prefix}/{name}", oid)
            self._known[(name, digest)] = oid
        return {"blob": oid, "sha256": digest}

    def pin(self, name: str, oid: str) -> None:
        """Keep an existing object (a candidate tree) reachable until the run is gone."""
        if self._known.get((name, oid)) != oid:
            self.repo.git.update_ref(f"{self.prefix}/{name}", oid)
            self._known[(name, oid)] = oid

    def read(self, ref: Mapping[str, Any], what: str) -> bytes:
        """The blob ``ref`` names, checked against its recorded SHA-256."""
        res = self.repo.git.run("cat-file", "blob", str(ref["blob"]), check=False)
        if res.returncode != 0:
            raise UsageError(f"cannot resume: the recorded {what} is missing from the repository")
        if sha256_hex(res.stdout) != ref["sha256"]:
            raise UsageError(f"cannot resume: the recorded {what} does not match its checkpoint")
        return res.stdout


# -- inputs ---------------------------------------------------------------------------------


def request_bytes(request: RunRequest) -> bytes:
    return canonical_json(request.model_dump(mode="json"))


def planner_inputs_sha256(request: RunRequest) -> str:
    """SHA-256 over what the planner reads besides the objective: a scripted planner's
    script, and the files ``patch-file:`` blocks name (absent files count as absent)."""
    digest = hashlib.sha256(request.planner.encode() + b"\0")
    files: list[Path] = []
    if request.planner.startswith("scripted:"):
        path = Path(request.planner.removeprefix("scripted:")).expanduser()
        files.append(path if path.is_absolute() else request.objective_base / path)
    elif request.objective.strip():
        try:
            objective = parse_objective(request.objective, request.objective_source)
        except UsageError:
            objective = None
        for block in objective.blocks if objective else ():
            if block.kind == "patch-file":
                files.append((request.objective_base / block.path).expanduser())
    for file in files:
        try:
            content = file.read_bytes()
        except OSError:
            content = b"<absent>"
        digest.update(str(file).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(sha256_hex(content).encode() + b"\n")
    return digest.hexdigest()


def config_sha256(config: TidegateConfig) -> str:
    return sha256_hex(canonical_json(config.model_dump(mode="json", by_alias=True)))


class RunInputs(msgspec.Struct, frozen=True):
    """What a resume must find unchanged, captured when the run started."""

    fingerprint: Mapping[str, str | None]
    """``value`` plus the ``head``, ``tree`` and ``index`` digests it was computed from."""
    request: Mapping[str, str]
    planner_sha256: str
    config_sha256: str
    model_hashes: Mapping[str, str | None] = msgspec.field(
        default_factory=lambda: dict.fromkeys(MODEL_HASHES)
    )

    def to_json(self) -> dict[str, object]:
        return {
            "workspace_fingerprint": dict(self.fingerprint),
            "request": dict(self.request),
            "planner_sha256": self.planner_sha256,
            "config_sha256": self.config_sha256,
            "hashes": dict(self.model_hashes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInputs:
        return cls(
            fingerprint=dict(data["workspace_fingerprint"]),
            request=dict(data["request"]),
            planner_sha256=str(data["planner_sha256"]),
            config_sha256=str(data["config_sha256"]),
            model_hashes=dict(data["hashes"]),
        )


def planner_hashes(planner: Planner) -> dict[str, str | None]:
    """The prompt/registry/effect-policy/model hashes a model-driven planner runs under
    (all None for planners without a model)."""
    hashes: dict[str, str | None] = dict.fromkeys(MODEL_HASHES)
    own = getattr(planner, "input_hashes", None)
    if callable(own):
        hashes.update(own())
    return hashes


def workspace_identity(root: Path, snapshot: T0Snapshot | None = None) -> dict[str, str | None]:
    """The workspace fingerprint and the digests it is made of (HEAD, tree, staged).

    With the run's T0 ``snapshot`` it is computed from the trees T0 already built (the
    same value, without hashing the work tree again)."""
    from tidegate.workspace.fingerprint_git import git_fingerprint

    if snapshot is not None and snapshot.tree is not None and snapshot.index_tree is not None:
        details = git_fingerprint(snapshot.head, snapshot.tree, "tree:" + snapshot.index_tree)
    else:
        from tidegate.workspace.fingerprint import fingerprint_details  # a scan of its own

        details = fingerprint_details(root)
    return {
        "value": details.value,
        "method": details.method,
        "head": details.head,
        "tree": details.tree,
        "index": details.index,
    }
