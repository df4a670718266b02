"""The command-line tools around the library: ``python -m dynscalar demo``, ``doctor`` and
``specializations`` (``cli`` parses the command line; ``demo``, ``doctor/``,
``specializations``), and the table ``str(dynscalar.explain(obj))`` prints (``explain``).

``import dynscalar`` never imports this package, and neither does compiling a marked model:
``python -m dynscalar`` (``dynscalar/__main__.py`` calls ``cli.main``) and
``Explanation.__str__`` import what they use when they run.
"""
