"""The exactness matrix of dynscalar's op rules, run whole: ``python -m tests.ops_matrix``."""
