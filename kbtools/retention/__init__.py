"""Identifier-retention gate: a rewrite may not silently drop the identifiers that anchor a note."""
