"""torch.nn's float hyperparameters under dynscalar: a correctness sweep, row by row.

* :mod:`tests.nn_coverage.catalogue`: one row per (module, float attribute, mode), the
  values it takes and the graphs a perfectly dynamic value needs;
* :mod:`tests.nn_coverage.runner`: a row marked, compiled and run with its 4 values beside
  an eager twin on one backend (or unmarked on stock torch), and the whole table;
* ``python -m tests.nn_coverage`` measures the catalogue into ``published/nn-coverage.json``;
  :mod:`tests.nn_coverage.render_docs` writes ``docs/nn-coverage.md`` from it (also run by
  ``python -m benchmarks.render``). ``tests/test_nn_coverage.py`` runs every row on ``eager``
  and ``aot_eager``.
"""
