"""Reviewing the ingest ledgers: list, read, search and cluster candidates.

Plain functions over ledger rows (the dicts of ``candidates.jsonl``); printing
lives in :mod:`kbtools.cli.candidates` and :mod:`kbtools.cli.search`, the
agent-facing server in :mod:`kbtools.mcp`.
"""
