"""The command-line tools around the library: ``python -m dynscalar demo``, ``doctor`` and
``specializations`` (``demo``, ``doctor/``, ``specializations``), and the table
``str(dynscalar.explain(obj))`` prints (``explain``).

``import dynscalar`` never imports this package, and neither does compiling a marked model:
the command line (``dynscalar/__main__.py``) and ``Explanation.__str__`` import what they
use when they run.
"""
