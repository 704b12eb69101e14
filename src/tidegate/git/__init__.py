"""The one git wrapper: ``command.Git`` is the only code that runs git (with the kept
processes of ``kept``; fixed values in ``settings``).

Every call is an argv list (never a shell string) with a scrubbed environment and a fixed
set of ``-c`` overrides, whatever the repository's configuration says:

- no pager (``--no-pager``, ``core.pager=cat``), no fsmonitor, no split index, no hooks
  (``core.hooksPath=/dev/null``: no hook can exist below a device file), no credential
  helper or askpass, no transport at all (``protocol.allow=never``: tidegate never fetches
  or pushes, so no ssh or remote helper can start), no automatic gc or maintenance, no
  commit signing;
- ``GIT_OPTIONAL_LOCKS=0`` so that even read-only commands never refresh the caller's
  index, and no terminal prompt;
- every inherited ``GIT_*`` variable is dropped (``GIT_DIR``, ``GIT_INDEX_FILE``,
  ``GIT_WORK_TREE``, ``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_PARAMETERS``, ``GIT_TRACE`` ...)
  except the four that choose which user-level configuration applies
  (``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_NOSYSTEM``,
  ``GIT_ATTR_NOSYSTEM``); what redirects git is only ever set on purpose.

A ``Git`` may be *pinned* to a git dir and work tree (``GIT_DIR``/``GIT_WORK_TREE``), so
that a ``.git`` someone creates later below its directory is never discovered; may run
without filters (``filters=False``: every filter driver the configuration defines is
neutralised with ``filter.<name>.clean=``, ``smudge=``, ``process=``,
``required=false``, which git 2.39 treats as no driver), for calls on a tool workspace,
whose ``.git`` a command may have made; and may be ``untrusted``: for calls on behalf of a
model or client, also only the repository's own configuration is read (no system or
global file, no system or global attributes).
External diff and textconv are refused per subcommand (``--no-ext-diff --no-textconv``):
an empty ``diff.external`` makes git fail rather than not use one.

The scrubbed environment and the overrides live in ``tidegate.git.env``, with ``probe``:
the one read-only ``rev-parse`` the fast path of ``runs``/``read`` makes without
``subprocess``, built from the same two pieces.
"""
