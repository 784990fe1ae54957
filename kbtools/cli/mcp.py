"""`kb mcp`: serve the review, lint, retention and promote functions to coding agents over MCP (stdio)."""

from __future__ import annotations

import typer

from kbtools.cli.common import LedgerDirOption, RootOption


def register(app: typer.Typer) -> None:
    @app.command("mcp", short_help="Serve review, lint and promote to agents (MCP).")
    def mcp(output_dir: LedgerDirOption = None, root: RootOption = None) -> None:
        """Run a Model Context Protocol server on stdin/stdout (configure it as a stdio server in the
        agent, e.g. command `kb`, args `mcp --root /path/to/kb`). Needs the `mcp` extra."""
        from kbtools.cli.common import ledger_dir, open_kb
        from kbtools.errors import KbError
        from kbtools.review.service import Review

        config, layout = open_kb(root)
        try:
            from kbtools.mcp.server import serve
        except ImportError as exc:
            if "mcp" not in str(exc):
                raise
            raise KbError("kb mcp needs the MCP SDK, an optional extra: pip install 'kbtools[mcp]'", "kb mcp") from None
        serve(config, Review(layout, ledger_dir(layout, output_dir)))
