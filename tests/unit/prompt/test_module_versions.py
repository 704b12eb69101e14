"""Module versions mean something: each module's words are pinned to its version.

Changing a module's text (or how it renders from the configuration) without bumping its
version, and bumping a module without bumping PROMPT_VERSION, both fail here. After a
deliberate change: bump the versions, then update the pins below.
"""

from __future__ import annotations

import hashlib

from tests.unit.prompt.helpers import DESCRIPTIONS, WINDOWS_COMMAND, config
from tidegate.prompt import PROMPT_VERSION
from tidegate.prompt.modules import MODULES, ModuleContext, ToolLine

# name: (version, digest of its renderings over _contexts(), which use the shared helpers)
PINNED_MODULES = {
    "identity": ("1.0.0", "8073a30a9e6e3615"),
    "approach": ("1.0.0", "ce8fa4d939c96781"),
    "untrusted-data": ("1.0.0", "a17d1f08d0a8eea5"),
    "approval": ("1.0.0", "437556051c5be3e8"),
    "host-environment": ("1.0.0", "e0b937f7b7a33bd0"),
    "tool-use": ("1.0.0", "138b6ff07dd7ba27"),
    "editing": ("1.0.0", "0ed63ad525fc4e14"),
    "verification": ("1.0.0", "4e9ee40c5d68cd6c"),
    "research-policy": ("1.0.0", "cb26c988dfca672e"),
    "trusted-instructions": ("1.0.0", "d02ef80439e3c7bd"),
    "workspace-state": ("1.0.0", "cb2a6c7f61641fe5"),
}

# PROMPT_VERSION: the module versions it stands for, in order
PINNED_PROMPT = {
    "tidegate-agent/1.0.0": [
        ("identity", "1.0.0"),
        ("approach", "1.0.0"),
        ("untrusted-data", "1.0.0"),
        ("approval", "1.0.0"),
        ("host-environment", "1.0.0"),
        ("tool-use", "1.0.0"),
        ("editing", "1.0.0"),
        ("verification", "1.0.0"),
        ("research-policy", "1.0.0"),
        ("trusted-instructions", "1.0.0"),
        ("workspace-state", "1.0.0"),
    ],
}


def _contexts() -> list[ModuleContext]:
    every = tuple(
        ToolLine(name, name, description) for name, description in sorted(DESCRIPTIONS.items())
    )
    windows = {"operatingSystem": "windows", "architecture": "arm64", "command": WINDOWS_COMMAND}
    return [
        ModuleContext(config(), every),
        ModuleContext(
            config(
                approvalProfile="strict",
                complexity="complex",
                networkAccess="denied",
                writeAccess="denied",
                hostEnvironment=windows,
            ),
            every[:3],
        ),
        ModuleContext(
            config(
                approvalProfile="trusted-workspace",
                complexity="simple",
                networkAccess="allowed",
                writeAccess="policy_gated",
                hostEnvironment=None,
                dirtyStateSummary=None,
                trustedWorkspaceInstructions=None,
            ),
            (),
        ),
    ]


def _digest(index: int) -> str:
    module = MODULES[index]
    rendered = [module.render(ctx) or "<none>" for ctx in _contexts()]
    return hashlib.sha256("\n\x00\n".join(rendered).encode()).hexdigest()[:16]


def test_each_module_text_is_pinned_to_its_version() -> None:
    actual = {m.name: (m.version, _digest(i)) for i, m in enumerate(MODULES)}
    for name, (version, digest) in actual.items():
        assert name in PINNED_MODULES, f"new module {name}: pin it"
        pinned_version, pinned_digest = PINNED_MODULES[name]
        if digest != pinned_digest:
            assert version != pinned_version, (
                f"module {name} changed its text but kept version {version}: bump it"
            )
            raise AssertionError(f"module {name} is now {version} {digest}: update the pin")
        assert version == pinned_version, f"module {name} bumped without a text change"
    assert set(PINNED_MODULES) == set(actual)


def test_prompt_version_is_pinned_to_the_module_versions() -> None:
    modules = [(m.name, m.version) for m in MODULES]
    assert PROMPT_VERSION in PINNED_PROMPT, f"new prompt version {PROMPT_VERSION}: pin it"
    assert PINNED_PROMPT[PROMPT_VERSION] == modules, (
        "module set or versions changed: bump PROMPT_VERSION"
    )
