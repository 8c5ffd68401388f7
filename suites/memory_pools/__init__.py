"""SPEC §2 memory pools (POOL-1..5)."""
