"""``python -m dynscalar doctor SCRIPT [ARGS...]``: which Python scalars cause recompiles.

The doctor runs the user's script exactly as ``python SCRIPT ARGS...`` would (its folder
first on ``sys.path``, ``__name__ == "__main__"``, its own ``sys.argv``, an absolute
``__file__``) while :class:`dynscalar.tools.doctor.watcher.RecompileWatcher` hands over every
recompile, and every call past a recompile limit that missed the cache, with *all* the
scalar guards that failed (Dynamo itself reports only the first failing guard of each
compiled version, and nothing past the limit).  A scalar counts for a recompile when it
alone kept a cached version from serving the call: marking it dynamic would have avoided
the recompile.  Recompiles that also needed something else (a tensor shape: a smaller last
batch) are counted apart, never blamed on a scalar; a scalar that is already dynamic and
took another control-flow path (dropout's ``p == 0``) is a path, not a culprit.

Each scalar is named the way user code reaches it (``model.block``, ``model[1]``,
``opt.param_groups[0]['lr']``, the variable at the call site when there is one) and gets
runnable code: ``mark_dynamic_attr`` for module attributes, ``mark_dynamic_param_groups``
for an optimizer's hyperparameters (with torch's tensor learning rate as the alternative),
``mark_dynamic_args`` on what the call site calls for function arguments (callers keep
passing plain values; :func:`.fixes.argument_fix`), and ``x = dynscalar.mark_dynamic(x)`` for
other values.

The modules, in the order a run goes through them:

* ``run``: runs the script under the recompile watcher, writes the report (:func:`run.run_doctor`);
* ``analysis``: turns each recompile into culprits and paths, named as user code names them;
* ``call_sites``: reads the statement that called a compiled function (argument spans);
* ``fixes``: the code that makes each culprit dynamic, grouped by where it goes;
* ``records``: the report's records (culprits, paths, call sites, fix blocks);
* ``report``: the report as text and as JSON.
"""
