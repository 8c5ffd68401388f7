"""SPEC §7: the harness's own guarantees, proved on every run with canary drivers."""
