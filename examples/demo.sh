#!/usr/bin/env bash
# tidegate demo: a scripted two-attempt fix of examples/calc in a throwaway git repo that
# holds a staged and an unstaged edit of the user's own. Run through `make demo`.
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
echo "== tidegate run (scripted planner: attempt 1 is wrong on purpose)"
set +e
"$bin/tidegate" run \
  --planner "scripted:$here/calc-fix.json" \
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
echo "demo repository kept at $repo"
exit $status
