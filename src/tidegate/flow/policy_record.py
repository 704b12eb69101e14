"""The effective policy of a run, as recorded in its report and trace.

``load_policy`` reads the user's configuration once at bootstrap; this module turns what it
read, and the options of the request that override it, into one record with a digest. The
record is evidence of what judged the run, not an input: nothing reads policy back from it.
"""

from __future__ import annotations

import hashlib
import json

from tidegate.config.records import CONFIG_PYPROJECT, LoadedConfig
from tidegate.records.report import EffectivePolicyOut, PolicySource
from tidegate.records.request import RunRequest

ALWAYS_REFUSED = (
    ".git/** (any .git component)",
    ".tidegate/**",
    f"{CONFIG_PYPROJECT} [tool.tidegate]",
    "paths through a symlinked directory",
    "symlinks out of the repository or aliasing the root or a protected path",
)


def effective_policy(loaded: LoadedConfig, request: RunRequest) -> EffectivePolicyOut:
    config = loaded.config
    validate = config.validate_.model_dump(mode="json")
    containment: dict[str, object] = {
        "mode": request.containment or config.containment.mode,
        "network": request.network,
        "share": list(config.containment.share),
    }
    body = {
        "validate_policy": validate,
        "always_refused": list(ALWAYS_REFUSED),
        "containment": containment,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return EffectivePolicyOut(
        sources=[PolicySource(path=s.path, sha256=s.sha256) for s in loaded.sources],
        validate_policy=validate,
        always_refused=list(ALWAYS_REFUSED),
        containment=containment,
        sha256=hashlib.sha256(canonical.encode()).hexdigest(),
    )
