"""The bridge's hooks, one module per stage of a compile, one hook per torch function.

Dynamo compiles a frame in stages, and each torch function the bridge wraps belongs to
one of them: :mod:`.build` (a frame starts; a value becomes a variable, a symbol, its
guards and sources; ``torch._dynamo.reset()``), :mod:`.trace` (the builtin, torch-function,
tensor-method, constant-method and property calls the trace meets), :mod:`.symbolic`
(the ``ShapeEnv``'s and ``SymNode``'s arithmetic, comparisons, value ranges and guards),
:mod:`.aot` (the backend's compile: the float phase, AOTAutograd's cache, restarts),
:mod:`.codegen` (the bytecode after the graph: write-back) and :mod:`.export`.

The table (``_table``) names only these modules, one hook per target.  Where several
concerns meet at one call, the stage's hook calls them in an order it shows; the
concerns themselves (``_ops``, ``_python``, ``_writeback``, ``_properties``, ``_guards``, ...)
are the bridge's rules and never import the table or the patch mechanism.

Examples:
    >>> from dynscalar._bridge._table import PRIVATES
    >>> sorted({p.hook.partition(":")[0] for p in PRIVATES if p.hook})[:2]
    ['stages.aot', 'stages.build']
"""
