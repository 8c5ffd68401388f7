"""SPEC §4 requests (REQ-1..2)."""
