"""Conformance suites, one package per SPEC area; every test carries its requirement marker."""
