"""kbtools: git-native pre-commit and lint toolkit for agent-written knowledge bases."""

from __future__ import annotations

__version__ = "0.1.0"
