"""NNAPI golden corpora: the test_generator DSL, CTS's criteria and VTS's test kinds."""
