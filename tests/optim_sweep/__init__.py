"""The optimizer x scheduler sweep: every torch.optim optimizer, compiled ``opt.step``.

``python -m tests.optim_sweep`` runs it and writes ``published/optim-sweep.json`` and
``docs/optimizers.md``; ``tests/test_optim_sweep.py`` runs a subset (an inductor subset in
the default suite, the whole aot_eager column behind the ``broad`` marker).
"""
