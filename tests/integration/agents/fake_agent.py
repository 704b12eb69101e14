"""A scripted terminal program built to reach each agent-submit outcome (a labelled test
double of an agent CLI's visible flow, not of tidegate). Usage: fake_agent.py MODE."""

import os
import sys
import time

mode = sys.argv[1]
out = sys.stdout


def say(text: str) -> None:
    out.write(text + "\r\n")
    out.flush()


def hang() -> None:
    time.sleep(60)


if mode == "crash-at-once":
    sys.stderr.write("fakeagent: cannot read /etc/fakeagent.toml: Permission denied\r\n")
    sys.exit(3)
if mode == "error-then-banner":  # its error first, then a banner line, then it exits
    sys.stderr.write("Error: Cannot find module @fakeagent/linux-x64\r\n")
    say("FakeAgent v0.0.0 (banner)")
    sys.exit(1)
if mode == "silent":
    hang()
if mode == "no-banner":
    say("Loading something unrelated...")
    hang()
if mode == "drift":
    say("Type a task>")
    hang()
if mode == "composer-first":  # the composer, then the banner: the rest of the flow is fine
    say("Type a task>")
    time.sleep(0.3)
    say("FakeAgent v1.0")
    line = sys.stdin.readline()
    say(f"Working on: {line.strip()}")
    say("Finished in 1s")
    say("Type a task>")
    sys.stdin.readline()
    sys.exit(0)
if mode == "wrapper-error":
    say("fakeagent: error: the wrapper could not start the agent")
    hang()
if mode == "noise":
    say("FakeAgent v1.0")
    say("[workflow] syncing project context...")
    hang()
say("FakeAgent v1.0")
if mode == "crash":
    sys.stderr.write("fatal: model 'x' is not available for this account\r\n")
    sys.exit(3)
if mode == "exit-early":
    sys.exit(0)
if mode == "trust":
    say("Do you trust the files in this folder? [y/N]")
    hang()
if mode == "no-guidance":
    hang()
if mode == "hotkey":
    say("press ctrl+s to run your task")
say("Type a task>")
line = sys.stdin.readline()
if mode == "rewrite":
    with open("README.md", "w") as handle:
        handle.write("rewritten by the agent\n")
    os.remove("calc.py")
if mode == "stall":
    hang()
say(f"Working on: {line.strip()}")
say("Finished in 1s")
say("Type a task>")
sys.stdin.readline()
