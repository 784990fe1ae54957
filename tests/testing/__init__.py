"""Helpers for tests: temporary git repos, in-process CLI runs, generated secrets."""
