"""Redaction: secrets, identities, private hosts and paths out before anything reaches disk."""
