"""Derived filter: the knowledge base never learns from its own output."""
