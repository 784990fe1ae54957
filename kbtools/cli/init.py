"""`kb init [DIR]`: scaffold a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from kbtools.kb.scaffold import HooksSource


def register(app: typer.Typer) -> None:
    @app.command("init", short_help="Scaffold a knowledge base in DIR (default: here).")
    def init(
        directory: Annotated[
            Path | None, typer.Argument(help="Folder of the new KB (created if missing; default: the current folder).")
        ] = None,
        locale: Annotated[str, typer.Option("--locale", help="Canonical locale of the index and log.")] = "en",
        local_hooks: Annotated[
            bool,
            typer.Option("--local-hooks", help="Write `repo: local` pre-commit hooks that run the installed `kb`."),
        ] = False,
        hooks_repo: Annotated[
            str | None,
            typer.Option("--hooks-repo", help="URL of the kbtools hooks repository for pre-commit (with --hooks-rev)."),
        ] = None,
        hooks_rev: Annotated[
            str | None, typer.Option("--hooks-rev", help="Commit sha (or an existing tag) of that repository.")
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Create only the missing pieces; existing files are kept.")
        ] = False,
        root_option: Annotated[
            Path | None, typer.Option("--root", help="Same as DIR (every kb command takes --root).", file_okay=False)
        ] = None,
    ) -> None:
        """Scaffold a KB: layout, KB.md, empty raw manifest, index, log, .pre-commit-config.yaml, .gitignore.

        The hook config takes kbtools' hooks from the git repository and commit this kb was
        installed from (`pip install git+URL@COMMIT`), else runs the installed kb as local hooks.
        """
        import datetime as dt

        from kbtools.config import Config, load_config
        from kbtools.errors import KbError
        from kbtools.gitio import repo_root
        from kbtools.kb import scaffold as sc

        if directory is not None and root_option is not None and directory.resolve() != root_option.resolve():
            raise KbError("give the folder as DIR or --root, not two different ones", "kb init")
        directory = directory or root_option
        root = (directory or Path.cwd()).resolve()
        if root.exists() and not root.is_dir():
            raise KbError("not a folder", str(directory))
        hooks = _hooks_source(local_hooks, hooks_repo, hooks_rev)
        config = load_config(root) if root.is_dir() else Config(root=root)
        result = sc.scaffold(
            config,
            locale=locale,
            today=dt.datetime.now(dt.UTC).date(),
            force=force,
            hooks=hooks,
        )
        for rel in result.created:
            print(f"created {rel}")
        for rel in result.kept:
            print(f"kept    {rel} (exists)")
        if result.gitignore_updated:
            print(f"updated {sc.GITIGNORE} (+{sc.GITIGNORE_ENTRY})")
        print(f"knowledge base ready in {root}")
        if sc.PRECOMMIT_CONFIG in result.created:
            where = "the installed kb (repo: local)" if hooks.local else f"{hooks.repo} at {hooks.rev}"
            print(f"hooks in {sc.PRECOMMIT_CONFIG} run {where}; enable them with `pre-commit install`")
        top = repo_root(root)
        if top is None:
            print("next: git init && git add -A && git commit -m 'Create knowledge base'")
        elif top.resolve() != root:
            print(
                f"note: {root} is below the top of its git repository ({top}); kb finds it from any folder "
                f"inside it, and needs --root {root.relative_to(top.resolve())} from elsewhere in the "
                "repository and in hook entries (pre-commit runs them at the top)"
            )


def _hooks_source(local_hooks: bool, repo: str | None, rev: str | None) -> HooksSource:
    """--local-hooks, else --hooks-repo with --hooks-rev, else what this kb was installed from."""
    from kbtools.errors import KbError
    from kbtools.kb import scaffold as sc

    if local_hooks and (repo or rev):
        raise KbError("--local-hooks takes no --hooks-repo/--hooks-rev", "kb init")
    if local_hooks:
        return sc.LOCAL_HOOKS
    if bool(repo) != bool(rev):
        raise KbError("give --hooks-repo and --hooks-rev together (rev: a commit sha of that repository)", "kb init")
    if repo and rev:
        return sc.HooksSource(repo, rev)
    return sc.installed_hooks_source(sc.read_direct_url())
