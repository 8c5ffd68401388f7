"""SPEC §3 memory domains (DOM-*)."""
