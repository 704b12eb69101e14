#!/usr/bin/env bash
# tidegate demo: a two-attempt, model-driven fix of examples/calc in a throwaway git repo
# that holds a staged and an unstaged edit of the user's own. The model is the shipped
# scripted contract double (examples/calc-model.json), so the demo needs no API key: it
# explores with read-only tools, proposes a wrong fix, gets the failing tests back as
# feedback, and fixes it. With a key, `--model openai:MODEL` runs the same loop for real.
# Run through `make demo`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bin="$root/.venv/bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/tidegate-demo-XXXXXX")
repo="$work/calc"
cp -R "$here/calc" "$repo"
cd "$repo"
g() { git -c user.name=demo -c user.email=demo@example.com -c init.defaultBranch=main "$@"; }
g init -q
g add -A
g commit -q -m "calc with a bug"

# The user's own work in progress: one staged edit, one unstaged edit.
printf '"""A tiny calculator (staged by the user)."""\n' > header.tmp
tail -n +2 calc.py >> header.tmp && mv header.tmp calc.py
g add calc.py
printf '\nWork in progress: more operations soon.\n' >> README.md

echo "== before: the user's repository ($repo)"
git status --short
echo
echo "== tidegate run (scripted model: attempt 1 is wrong on purpose)"
set +e
"$bin/tidegate" run \
  --model "scripted:$here/calc-model.json" \
  --objective "Fix add() so that the tests pass" \
  --verify "$bin/python -m pytest -q -p no:cacheprovider"
status=$?
set -e
echo
echo "== after: git status (staged edit still staged, the fix is unstaged)"
git status --short
echo
echo "== staged (unchanged by tidegate):"
git diff --cached --stat
echo
echo "== unstaged (the user's README edit and tidegate's fix):"
git diff
echo
echo "== the run's record (tidegate read latest): the model's tool calls, host-attested"
"$bin/tidegate" read latest --json --detail | "$bin/python" -c '
import json, sys
d = json.load(sys.stdin)
for call in d["effects"]["tool_calls"]:
    print("  %-12s %-16s %s" % (call["tool_call_id"], call["canonical_tool"], call["status"]))
ev = d["evidence"]
print("  %d trace events, %d checkpoints, chain %s"
      % (ev["trace_events"], ev["checkpoints"], ev["checkpoint_chain"]))
'
echo
echo "demo repository kept at $repo"
exit $status
