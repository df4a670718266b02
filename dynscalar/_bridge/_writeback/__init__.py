"""Write-back: a value a compiled frame stores, hands on or returns holds what eager would.

``self.step += 1`` on a ``DynamicInt`` in compiled code leaves a ``DynamicInt`` with the
same spec, as eager Python does; Dynamo alone would store the plain int its graph computed.
The modules, in the order a value goes through them (README.md in this folder has the
whole story):

* ``record``: while tracing, the Python-level call that made each symbolic value;
* ``shadows``: the recorded calls run again on stand-in proxies: what eager holds;
* ``codegen``: the code Dynamo generates after the graph rebuilds those values;
* ``rebox``: the one helper that generated code calls at run time;
* ``calls``: the recorded call and the traced values, as every module reads them;
* ``arith``: Python operators on proxies, the part of ``_python``'s rules that needs the
  shadows.

The table (``_table``) names the hooks by module: ``"_writeback.record:builtin_call_hook"``.
"""
