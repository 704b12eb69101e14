"""The artifact store and its three tools: notes and reports kept outside the workspace.

Artifacts live in ``ToolContext.artifact_dir`` (under the state root, never in the
workspace), one ``<id>.json`` record per artifact, written atomically. Name and content
are redacted (``tidegate.text.sanitize``) before anything is hashed or written: the store, the
id and the hash only ever know the redacted text. The id is derived from the name and
content, so creating the same artifact twice returns the same id.
Creating one advances host state (``state_version``); it is never a workspace write.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from tidegate.text.sanitize import redact
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.effects import sha256_json
from tidegate.tools.schemas import artifact as art
from tidegate.workspace.states import sha256_bytes


class ArtifactStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def create(self, name: str, content: str, media_type: str) -> art.ArtifactInfo:
        name, content = redact(name), redact(content)
        data = content.encode("utf-8")
        artifact_id = "art_" + sha256_json([name, media_type, content])[7:23]
        info = art.ArtifactInfo(
            artifact_id=artifact_id,
            name=name,
            media_type=media_type,
            sha256=sha256_bytes(data),
            size=len(data),
        )
        record = {"info": info.model_dump(mode="json"), "content": content}
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _atomic_write(self.directory / f"{artifact_id}.json", json.dumps(record).encode())
        return info

    def get(self, artifact_id: str) -> tuple[art.ArtifactInfo, str]:
        path = self.directory / f"{artifact_id}.json"
        try:
            record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ToolFailure("not_found", f"no artifact {artifact_id}") from None
        info = art.ArtifactInfo.model_validate(record["info"])
        content = str(record["content"])
        if sha256_bytes(content.encode("utf-8")) != info.sha256:
            raise ToolFailure(
                "artifact_corrupt",
                f"artifact {artifact_id} does not match its hash",
                retryable=False,
            )
        return info, content

    def list(self) -> list[art.ArtifactInfo]:
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob("art_*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            found.append(art.ArtifactInfo.model_validate(record["info"]))
        return sorted(found, key=lambda i: (i.name, i.artifact_id))


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def store_of(call: Dispatch) -> ArtifactStore:
    directory = call.context.artifact_dir
    if directory is None:
        raise ToolFailure("unavailable", "no artifact store is configured", retryable=False)
    return ArtifactStore(directory)


class ArtifactCreate(msgspec.Struct):
    tool_id: str = "artifact.create"
    label: str | None = None

    def run(self, args: art.CreateInput, call: Dispatch) -> AdapterResult:
        info = store_of(call).create(args.name, args.content, args.media_type)
        return AdapterResult(self.tool_id, art.CreateOutput(artifact=info), state_changed=True)


class ArtifactList(msgspec.Struct):
    tool_id: str = "artifact.list"
    label: str | None = None

    def run(self, args: art.ListInput, call: Dispatch) -> AdapterResult:
        found = store_of(call).list()
        output = art.ListOutput(artifacts=found[: args.limit], truncated=len(found) > args.limit)
        return AdapterResult(self.tool_id, output)


class ArtifactRead(msgspec.Struct):
    tool_id: str = "artifact.read"
    label: str | None = None

    def run(self, args: art.ReadInput, call: Dispatch) -> AdapterResult:
        info, content = store_of(call).get(args.artifact_id)
        data = content.encode("utf-8")
        cut = data[: args.max_bytes].decode("utf-8", "ignore")
        output = art.ReadOutput(artifact=info, content=cut, truncated=len(data) > args.max_bytes)
        return AdapterResult(self.tool_id, output)
