"""`kb ingest`: agent session transcripts → redacted candidate ledgers."""
