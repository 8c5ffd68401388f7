"""SPEC §5 custom calls (CC-1..6): XLA calling conventions, fuzzed, with red zones."""
