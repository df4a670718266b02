"""A seeded differential fuzzer: compiled dynscalar code against eager, program by program.

* :mod:`tests.fuzz.generator` writes random small programs as Python source text (an
  ``nn.Module`` with scalar attributes, or a function with a scalar argument, marked in
  different ways, called with values of changing types);
* :mod:`tests.fuzz.runner` runs each program compiled (``torch.compile`` with a counting
  backend) and eagerly, compares every call, classifies each disagreement and shrinks
  dynscalar-caused ones to minimal programs;
* :mod:`tests.fuzz.contract` is the table of dynscalar errors compiled code may raise where
  eager succeeds (the documented contract);
* :mod:`tests.fuzz.stock` runs the unmarked program in a process that never imports
  dynscalar, to tell torch's own disagreements apart;
* ``python -m tests.fuzz`` runs a profile; :mod:`tests.fuzz.render_docs` writes
  ``docs/fuzzing.md`` from its JSON.

Nothing here imports dynscalar at import time: the stock worker must stay free of it.
"""
