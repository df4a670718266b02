"""The exactness harness, shipped with the package: the cells where a rule or a scalar form
is measured, and their verdicts.

``harness`` measures one cell of a rule (its cases and verdict), ``run`` the ``"python"``
and inductor columns of the rules, ``forms`` the scalar forms' inductor cells.  ``python -m
tests.ops_matrix`` (in the repository) runs them to write the shipped
``dynscalar/ops/admitted.json`` and the op-coverage page.  The library proper never imports
this package (``tests/test_layout.py``).
"""
