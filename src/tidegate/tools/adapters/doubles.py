"""Deterministic doubles for the tools whose real backends tidegate does not have yet:
research.search, research.fetch, preview.manage and perception.analyze.

They are scripted implementations of tidegate's own tool ports, for tests and for trying
the tool layer without a network. Each one is labelled: the label appears in the tool's
description, in ``tidegate tools list`` and as ``provider`` in every output, so nobody
mistakes a double's answer for the internet's. They touch no network and no workspace.
They are only registered when asked for (``ToolExecutor(..., doubles=True)``); without them
these tools are absent from the registry.
"""

from __future__ import annotations

import itertools

import msgspec

from tidegate.tools.adapters.artifact import store_of
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.effects import Effects, ResearchEffect, ResearchSource
from tidegate.tools.schemas import external as ext
from tidegate.workspace.states import sha256_bytes

RESEARCH_LABEL = "double:research-corpus (deterministic, no network)"
PREVIEW_LABEL = "double:preview (deterministic, nothing is served)"
PERCEPTION_LABEL = "double:perception (deterministic, byte statistics only)"

CORPUS: dict[str, tuple[str, str]] = {
    "https://docs.python.org/3/library/json.html": (
        "json - JSON encoder and decoder",
        "json.dumps serializes an object to a JSON formatted str; sort_keys=True sorts the "
        "keys; separators=(',', ':') gives the most compact form. json.loads parses a str.",
    ),
    "https://docs.pytest.org/en/stable/how-to/assert.html": (
        "How to write and report assertions in tests",
        "pytest rewrites plain assert statements to show the values involved. Use "
        "pytest.raises as a context manager to assert that code raises an exception.",
    ),
    "https://git-scm.com/docs/git-diff": (
        "git-diff - Show changes between commits, commit and working tree, etc",
        "git diff shows changes between the working tree and the index; git diff HEAD "
        "compares with the last commit; --stat prints a summary instead of the patch.",
    ),
}


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if w}


class ResearchSearchDouble(msgspec.Struct):
    tool_id: str = "research.search"
    label: str | None = RESEARCH_LABEL

    def run(self, args: ext.ResearchSearchInput, call: Dispatch) -> AdapterResult:
        wanted = _words(args.query)
        scored = sorted(
            (
                (-len(wanted & _words(title + " " + text)), url)
                for url, (title, text) in CORPUS.items()
            ),
        )
        hits = [
            ext.ResearchHit(url=url, title=CORPUS[url][0], snippet=CORPUS[url][1][:160])
            for score, url in scored
            if score < 0
        ][: args.max_results]
        sources = tuple(ResearchSource(url=h.url, title=h.title) for h in hits)
        claims = Effects(research=ResearchEffect(provider=RESEARCH_LABEL, sources=sources))
        output = ext.ResearchSearchOutput(provider=RESEARCH_LABEL, results=hits)
        return AdapterResult(self.tool_id, output, claims if sources else Effects())


class ResearchFetchDouble(msgspec.Struct):
    tool_id: str = "research.fetch"
    label: str | None = RESEARCH_LABEL

    def run(self, args: ext.ResearchFetchInput, call: Dispatch) -> AdapterResult:
        found = CORPUS.get(args.url)
        if found is None:
            raise ToolFailure("not_found", f"{args.url} is not in the double's corpus")
        title, text = found
        data = text.encode("utf-8")
        shown = data[: args.max_bytes].decode("utf-8", "ignore")
        truncated = len(data) > args.max_bytes
        digest = sha256_bytes(shown.encode("utf-8"))
        source = ResearchSource(url=args.url, sha256=digest, title=title, truncated=truncated)
        output = ext.ResearchFetchOutput(
            provider=RESEARCH_LABEL,
            url=args.url,
            title=title,
            content=shown,
            sha256=digest,
            truncated=truncated,
        )
        claims = Effects(research=ResearchEffect(provider=RESEARCH_LABEL, sources=(source,)))
        return AdapterResult(self.tool_id, output, claims)


class PreviewDouble(msgspec.Struct):
    tool_id: str = "preview.manage"
    label: str | None = PREVIEW_LABEL
    _previews: dict[str, str] = msgspec.field(default_factory=dict)
    _ids: itertools.count[int] = msgspec.field(default_factory=lambda: itertools.count(1))

    def run(self, args: ext.PreviewInput, call: Dispatch) -> AdapterResult:
        if args.action == "start":
            preview_id = f"preview-{next(self._ids)}"
            self._previews[preview_id] = "running"
        else:
            if args.preview_id is None or args.preview_id not in self._previews:
                raise ToolFailure("unknown_preview", f"no preview {args.preview_id!r}")
            preview_id = args.preview_id
            if args.action == "stop":
                self._previews[preview_id] = "stopped"
        output = ext.PreviewOutput(
            provider=PREVIEW_LABEL,
            preview_id=preview_id,
            status=self._previews[preview_id],  # type: ignore[arg-type]
            url=None,
        )
        return AdapterResult(self.tool_id, output, state_changed=args.action != "status")


class PerceptionDouble(msgspec.Struct):
    tool_id: str = "perception.analyze"
    label: str | None = PERCEPTION_LABEL

    def run(self, args: ext.PerceptionInput, call: Dispatch) -> AdapterResult:
        info, content = store_of(call).get(args.artifact_id)
        lines = content.splitlines()
        observations = [
            f"{PERCEPTION_LABEL}: no model looked at this artifact",
            f"media type {info.media_type}, {info.size} bytes, {len(lines)} lines",
        ]
        if lines:
            observations.append(f"first line: {lines[0][:200]}")
        output = ext.PerceptionOutput(
            provider=PERCEPTION_LABEL, artifact_id=info.artifact_id, observations=observations
        )
        return AdapterResult(self.tool_id, output)
