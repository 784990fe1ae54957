"""Which lint mode a pre-commit framework hook runs in, read from what pre-commit gives it.

The framework runs the same hook in three situations and tells them apart only by
its arguments and environment (pre-commit's ``commands/run.py`` and
``commands/hook_impl.py``):

- ``git commit`` (or ``pre-commit run``): the staged files are passed; the hook
  checks the staged state (``--staged``).
- ``pre-commit run --all-files`` (what pre-commit.ci runs) or ``--files``: files are
  passed that are not staged, or nothing is staged at all; the hook checks the whole
  KB's content, secrets in every raw and note file included, and every commit of
  the history, so a raw edit committed with a re-blessed manifest line is caught.
- ``git push`` (stage pre-push): ``PRE_COMMIT_FROM_REF`` and ``PRE_COMMIT_TO_REF``
  name the pushed range; the hook checks every commit of it. A push that brings the
  branch's root commit has no from-ref (pre-commit runs it as ``--all-files`` and
  sets ``PRE_COMMIT_LOCAL_BRANCH``): the whole history of that branch is checked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kbtools.lint.history import LintMode


def framework_mode(environ: Mapping[str, str], files: Sequence[str], staged: Collection[str]) -> LintMode:
    """The lint mode for a hook given ``files`` (paths from the repository top) while ``staged``
    (the staged paths, same form) are staged."""
    from_ref, to_ref = environ.get("PRE_COMMIT_FROM_REF"), environ.get("PRE_COMMIT_TO_REF")
    if from_ref and to_ref:
        return LintMode(since=from_ref, until=to_ref)
    local_branch = environ.get("PRE_COMMIT_LOCAL_BRANCH")
    if local_branch and files:
        return LintMode(whole=True, until=local_branch)
    if files and (not staged or not set(files) <= set(staged)):
        return LintMode(whole=True)
    return LintMode(staged=True)
