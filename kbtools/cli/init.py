"""`kb init [DIR]`: scaffold a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


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
            str | None, typer.Option("--hooks-repo", help="URL of the kbtools hooks repository for pre-commit.")
        ] = None,
        hooks_rev: Annotated[str | None, typer.Option("--hooks-rev", help="Tag or commit of that repository.")] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Create only the missing pieces; existing files are kept.")
        ] = False,
        root_option: Annotated[
            Path | None, typer.Option("--root", help="Same as DIR (every kb command takes --root).", file_okay=False)
        ] = None,
    ) -> None:
        """Scaffold a KB: layout, KB.md, empty raw manifest, index, log, .pre-commit-config.yaml, .gitignore."""
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
        if local_hooks and (hooks_repo or hooks_rev):
            raise KbError("--local-hooks takes no --hooks-repo/--hooks-rev", "kb init")
        config = load_config(root) if root.is_dir() else Config(root=root)
        result = sc.scaffold(
            config,
            locale=locale,
            today=dt.datetime.now(dt.UTC).date(),
            force=force,
            local_hooks=local_hooks,
            hooks_repo=hooks_repo or sc.HOOKS_REPO_PLACEHOLDER,
            hooks_rev=hooks_rev or sc.HOOKS_REV_PLACEHOLDER,
        )
        for rel in result.created:
            print(f"created {rel}")
        for rel in result.kept:
            print(f"kept    {rel} (exists)")
        if result.gitignore_updated:
            print(f"updated {sc.GITIGNORE} (+{sc.GITIGNORE_ENTRY})")
        print(f"knowledge base ready in {root}")
        if not local_hooks and not hooks_repo and sc.PRECOMMIT_CONFIG in result.created:
            print(
                f"next: set repo/rev in {sc.PRECOMMIT_CONFIG} (or rerun with --local-hooks), then `pre-commit install`"
            )
        top = repo_root(root)
        if top is None:
            print("next: git init && git add -A && git commit -m 'Create knowledge base'")
        elif top.resolve() != root:
            print(
                f"note: {root} is below the top of its git repository ({top}); kb looks for a KB at the "
                f"top, so run kb commands (and hook entries) with --root {root.relative_to(top.resolve())}"
            )
