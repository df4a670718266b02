"""Every private torch name the bridge relies on or patches, in one declarative table.

Why it exists: a torch release moves private names, and the bridge must notice before it
patches anything.  Each :class:`Private` entry says where the name lives, the parameters
(or dataclass fields) it must have, the hook the bridge wraps it with (if any), and when
that happens.  The checks, the installer and its undo (``_install``), the doctor's
recompile watcher (``tools.doctor.watcher``, with entries of its own) and the benchmarks
all read this table, so adding or retiring a patch is one entry here plus its hook
function (in a stage module, ``stages``); the bridge's other modules
read the entries without hooks through ``_torch``, the only module spelling a private
name.  Below the entries' type is :func:`check`, which compares every entry of a phase
with the installed torch; the patch mechanism that wraps the entries with their hooks is
``_patch``.  The table is data: it names hooks by module and function and imports none.

When an entry is checked and applied (``phase``):

* ``"dynamo"``: when ``torch._dynamo`` is imported (the bridge's post-import hook);
* ``"floats"``: when the first frame compiles (these modules import ``torch._inductor``,
  which is still initializing when ``torch._dynamo`` is imported); its hooks on
  ``SymNode`` and ``run_node`` pass a ``gate`` first and run only in a compile that
  holds a mark;
* ``"export"``: at ``import dynscalar`` (``torch.export.export`` is public; wrapping it
  early lets the user's first export be seen);
* ``"doctor"``: checked (:func:`check_entries`, with the doctor's own entries, kept with it
  in ``tools.doctor.watcher.PRIVATES``) while ``python -m dynscalar doctor`` watches
  recompiles; the watcher's wrappers are its methods, so ``hook`` is None there.  The one
  entry here is read by the bridge too (``_guards``);
* ``"logs"``: read once at ``import dynscalar`` to register the ``dynscalar`` log name;
* ``"tools"``: the exactness harness's own entries, kept with it
  (``tools.matrix.privates``), read when it runs, never checked by the bridge (importing
  ``torch._dynamo.testing`` changes Dynamo's state).

Importing this module imports nothing from torch: names are resolved when checked.

Examples:
    >>> from dynscalar._bridge._table import PRIVATES
    >>> [p.name for p in PRIVATES if p.target.endswith(":VariableBuilder._wrap")]
    ['VariableBuilder._wrap']
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "PRIVATES",
    "Phase",
    "Private",
    "by_phase",
    "check",
    "check_entries",
    "named",
]

Phase = Literal["dynamo", "floats", "export", "doctor", "logs", "tools"]


@dataclass(frozen=True)
class Private:
    """One private torch name: where it is, its shape, and the bridge's hook on it."""

    #: ``"module:qualified.name"``: the module to import, then attributes to follow.
    target: str
    #: Expected parameter names (a dataclass: its field names), ``*args`` and ``**kwargs``
    #: written with their stars; None checks existence only.
    params: tuple[str, ...] | None = None
    #: The hook, a function of a stage module of ``dynscalar._bridge.stages``
    #: (``"stages.trace:builtin_call_hook"``): one per target.  None: read, never patched.
    hook: str | None = None
    phase: Phase = "dynamo"
    #: A patch for one torch version's code (or one of two alternatives): applied only
    #: where ``params`` match, skipped without an error elsewhere.
    optional: bool = False
    #: Applied only where the optional entry with this target was skipped.
    instead_of: str | None = None
    #: The hook used when the bridge cannot be installed (and inside ``disabled()``):
    #: proxies are turned into their plain values, since stock Dynamo cannot trace them.
    degraded_hook: str | None = None
    #: The hook used in a frame the safety net compiles as stock torch does (``_safety``);
    #: None: the degraded hook, else torch's function itself.
    off_hook: str | None = None
    #: The hook kept in place of ``hook`` inside ``disabled()`` (where the bridge is
    #: installed, so the entry was checked): write-back's recording and codegen, which act
    #: only in a compile that read a proxy, so that the objects it stores stay what eager
    #: stores; a compile that reads none is stock torch's.
    disabled_hook: str | None = None
    #: A predicate (``"_module:function"``, called with the call's ``instance``, ``args``
    #: and ``kwargs`` as passed) deciding whether the hooks run at all: False, torch's
    #: function alone, before any binding (hooks that matter only in a compile that holds
    #: a mark cost a dynamic-shape compile without one a single check).
    gate: str | None = None
    #: Why the bridge needs it, in a few words.
    why: str = ""
    #: A fix of torch's behaviour on some releases: which ones need it and the upstream
    #: issue or change (``tests/test_version_fixes.py`` fails once the installed torch no
    #: longer needs a fix the bridge still applies).
    fixes: str = ""
    #: The short name ``_torch`` gives its root object, where the first part of the
    #: qualified name would be ambiguous (two modules' ``config``).
    alias: str | None = None

    @property
    def name(self) -> str:
        """The short name used in messages: ``Class.attribute`` or ``module.function``."""
        module, _, qualname = self.target.partition(":")
        return qualname if "." in qualname else f"{module.rpartition('.')[2]}.{qualname}"

    @property
    def inside_disabled(self) -> str | None:
        """The hook a call runs inside ``disabled()``: the entry's hook for that case, else
        its degraded hook (None: torch's function alone, as if never wrapped)."""
        return self.disabled_hook or self.degraded_hook

    @property
    def short(self) -> str:
        """The name ``_torch`` reads it by: ``alias``, else the qualified name's first part."""
        return self.alias or self.target.partition(":")[2].split(".")[0]

    def root(self) -> Any:
        """The object ``_torch.<short>`` stands for: the qualified name's first part."""
        module_name, _, qualname = self.target.partition(":")
        return _attribute(importlib.import_module(module_name), qualname.split(".")[0])

    def resolve(self) -> tuple[Any, str]:
        """(owner, attribute): the object holding the name, and the name on it.

        Raises ImportError or AttributeError when the name moved.
        """
        module_name, _, qualname = self.target.partition(":")
        owner: Any = importlib.import_module(module_name)
        *path, attribute = qualname.split(".")
        for part in path:
            owner = _attribute(owner, part)
        if hasattr(owner, "__path__") and not hasattr(owner, attribute):
            with contextlib.suppress(ImportError):
                _attribute(owner, attribute)  # a submodule not imported yet
        if not hasattr(owner, attribute):
            raise AttributeError(f"{self.target.replace(':', '.')} does not exist")
        return owner, attribute

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments by this entry's parameter names (``self`` aside: wrapt passes
        the instance apart); a parameter the call left to its default is absent.

            >>> entry = Private("m:f", ("self", "tx", "args", "kwargs"))
            >>> entry.bind(("TX",), {"kwargs": {}})
            {'tx': 'TX', 'kwargs': {}}
        """
        names = self.params or ()
        if names[:1] == ("self",):
            names = names[1:]
        if len(args) > len(names):
            raise TypeError(f"{self.name} takes {len(names)} arguments, {len(args)} given")
        return {**dict(zip(names, args, strict=False)), **kwargs}

    def found_params(self) -> tuple[str, ...]:
        """The parameter names (or dataclass fields) the installed torch has."""
        owner, attribute = self.resolve()
        value = getattr(owner, attribute)
        fields = getattr(value, "__dataclass_fields__", None) if isinstance(value, type) else None
        if fields is not None:
            return tuple(fields)
        parameters = inspect.signature(inspect.unwrap(value)).parameters.values()
        return tuple(_STARS.get(p.kind, "") + p.name for p in parameters)


def _attribute(owner: Any, name: str) -> Any:
    """``owner.name``, importing it first where ``owner`` is a package and ``name`` one of
    its submodules (``torch._dynamo:source``)."""
    try:
        return getattr(owner, name)
    except AttributeError:
        if not hasattr(owner, "__path__"):  # not a package
            raise
        return importlib.import_module(f"{owner.__name__}.{name}")


def named(short: str) -> Private | None:
    """The first entry whose :attr:`Private.short` is ``short`` (None: not in the table)."""
    if _by_short[0] is not PRIVATES:  # built once per table (tests swap entries)
        index: dict[str, Private] = {}
        for entry in PRIVATES:
            index.setdefault(entry.short, entry)
        _by_short[:] = [PRIVATES, index]
    return _by_short[1].get(short)  # type: ignore[no-any-return]


_by_short: list[Any] = [None, {}]


_STARS: dict[Any, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*",
    inspect.Parameter.VAR_KEYWORD: "**",
}


def by_phase(phase: Phase) -> tuple[Private, ...]:
    """The entries checked (and applied) at ``phase``, in table order."""
    return tuple(p for p in PRIVATES if p.phase == phase)


# ----------------------------------------------------------------------------- check
def check(phase: Phase, who: str = "dynscalar", what: str = "the bridge") -> list[Private]:
    """Raise ``BridgeError`` unless every entry of ``phase`` has the expected shape
    (messages start with ``who`` and say that ``what`` was written for another shape).

    Returns the entries to patch: those with a hook, minus optional ones whose signature
    differs here, and alternatives (``instead_of``) whose optional entry is used.
    """
    from .._compat import MIN_TORCH, TORCH_SUPPORTED, TORCH_VERSION
    from .._diagnostics import BridgeError

    if phase == "dynamo" and not TORCH_SUPPORTED:
        raise BridgeError(
            f"dynscalar needs torch>={MIN_TORCH}; torch {TORCH_VERSION} is installed."
        )
    return check_entries(by_phase(phase), who, what)


def check_entries(
    entries: tuple[Private, ...], who: str = "dynscalar", what: str = "the bridge"
) -> list[Private]:
    """:func:`check` for ``entries`` (the doctor's and the harness's own, kept with them)."""
    from .._compat import TORCH_VERSION
    from .._diagnostics import BridgeError

    skipped: set[str] = set()
    for entry in entries:
        try:
            found = entry.found_params() if entry.params is not None else entry.resolve()
        except (ImportError, AttributeError) as exc:
            if entry.optional:
                skipped.add(entry.target)
                continue
            raise BridgeError(
                f"{who}: torch {TORCH_VERSION} has no {entry.target.replace(':', '.')} ({exc}). "
                "Please report this with your torch version."
            ) from exc
        if entry.params is None or found == entry.params:
            continue
        if entry.optional:
            skipped.add(entry.target)
            continue
        raise BridgeError(
            f"{who}: torch {TORCH_VERSION} changed {entry.name}{found}; {what} was written "
            f"for {entry.name}{entry.params}. Please report this with your torch version."
        )
    return [
        entry
        for entry in entries
        if entry.hook
        and entry.target not in skipped
        and (entry.instead_of is None or entry.instead_of in skipped)
    ]


_B = "torch._dynamo.variables.builder"
_T = "torch._dynamo.variables.tensor"
_F = "torch._dynamo.variables.functions"
_G = "torch._dynamo.guards"
_S = "torch.fx.experimental.symbolic_shapes"
_C = "torch._dynamo.codegen"
_BT = "torch._dynamo.bytecode_transformation"
_AC = "torch._functorch._aot_autograd.autograd_cache"
_SN = "torch.fx.experimental.sym_node"
#: a SymNode hook runs only with a float operand (``stages.symbolic.float_gate``)
_SNG = "stages.symbolic:float_gate"

PRIVATES: tuple[Private, ...] = (
    # ---- tracing: which values become symbolic graph inputs (stages.build)
    Private(
        f"{_B}:VariableBuilder._wrap",
        ("self", "value"),
        hook="stages.build:wrap_hook",
        degraded_hook="stages.build:wrap_degraded",
        off_hook="stages.build:wrap_off",
        why="marked values become symbolic graph inputs",
    ),
    Private(f"{_B}:VariableBuilder.wrap_symint", ("self", "value", "dynamism", "context")),
    Private("torch._dynamo.output_graph:OutputGraph.resolve_source_value", ("self", "source")),
    Private(
        "torch._dynamo.output_graph:OutputGraph.call_user_compiler",
        ("self", "gm", "example_inputs"),
        hook="stages.aot:backend_compile_hook",
        off_hook="stages.aot:backend_compile_off",
        why="a backend that fails on a graph with marked values: traced again as stock; "
        "a marked float the restarted trace specialized is warned; a failure of dynscalar's "
        "is reported once the stock attempt compiled (else the error was the program's)",
    ),
    Private(
        "torch._dynamo.convert_frame:ConvertFrameAssert.__call__",
        ("self", "frame", "cache_entry", "hooks", "frame_state", "skip"),
        hook="stages.build:compile_start_hook",
        gate="stages.build:floats_pending",
        why="the float path's patches go in before the first frame compiles, never from "
        "inside a trace",
    ),
    Private(f"{_S}:ShapeEnv.constrain_symbol_range", ("self", "s", "compiler_min", "compiler_max")),
    Private(
        f"{_S}:ShapeEnv._constrain_range_for_size",
        ("self", "a", "min", "max"),
        hook="stages.build:size_constraint_hook",
        gate="stages.build:unsized_gate",
        why="an unbacked marked int is a scalar, not a size: no >= 0 constraint",
    ),
    Private(
        "torch._dynamo.resume_execution:ContinueExecutionCache.generated_code_metadata",
        why="a resume function's original code, where argument marks live",
    ),
    Private(
        "torch._dynamo.utils:orig_code_map",
        why="the code a running compiled frame stands for: marked values passed on (_callers)",
    ),
    Private(
        "torch._dynamo.pgo:process_automatic_dynamic",
        ("tx", "name", "entry", "is_unspecialized_nn_module"),
        why="automatic dynamic sees a proxy's value",
    ),
    Private("torch._dynamo.pgo:FrameStateSizeEntry.make_scalar", ("x",)),
    Private("torch._dynamo.source:AttrSource", ("base", "member")),
    Private(
        "torch._dynamo.source:GenericAttrSource",
        ("base", "member"),
        why="a proxy's spec read past its attribute hooks (_guards.guard_proxy)",
    ),
    # the sources of a module's attributes, where a marked value is found (stages.build)
    Private("torch._dynamo.source:NNModuleSource", ("base",)),
    Private("torch._dynamo.source:UnspecializedNNModuleSource", ("base",)),
    Private("torch._dynamo.source:UnspecializedBuiltinNNModuleSource", ("base",)),
    Private("torch._dynamo.source:DictGetItemSource", ("base", "index")),
    Private("torch._dynamo.source:ImportSource", ("module_name",)),
    Private(
        f"{_B}:VariableBuilder.__call__",
        ("self", "value"),
        hook="stages.build:builder_call_hook",
        why="a marked getter reading a value already made a constant says so",
    ),
    Private(
        "torch.utils._python_dispatch:is_in_torch_dispatch_mode",
        ("include_infra_modes",),
        why="no trace restart from inside a fake-tensor op",
    ),
    Private("torch._dynamo.exc:TensorifyScalarRestartAnalysis", why="restarts of a trace"),
    Private("torch._guards:CompileContext", why="one compile's restarts"),
    # ---- guards (_guards, _floats)
    Private(f"{_G}:install_guard", ("*guards", "skip")),
    Private(f"{_G}:GuardBuilder.TYPE_MATCH", ("self", "guard")),
    Private(f"{_G}:GuardBuilder.CONSTANT_MATCH", ("self", "guard")),
    Private("torch._dynamo.variables.constant:ConstantVariable.create", ("value", "**kwargs")),
    Private(f"{_G}:GuardBuilder.ID_MATCH", ("self", "guard", "recompile_hint")),
    Private(f"{_G}:GuardBuilder.EQUALS_MATCH", ("self", "guard", "recompile_hint")),
    Private(f"{_G}:GuardBuilder.DICT_NOT_CONTAINS", ("self", "guard", "key")),
    Private(f"{_G}:GuardBuilder.get_guard_manager", ("self", "guard")),
    Private("torch._C._dynamo.guards:GuardManager.add_lambda_guard"),
    Private(f"{_G}:GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT", ("self", "guard", "attr")),
    # ---- errors and warnings at the user's line (_reports, _ints)
    Private(
        f"{_S}:ShapeEnv._make_data_dependent_error",
        ("self", "expr", "unhinted_expr", "expr_sym_node_id"),
        hook="stages.symbolic:data_dependent_hook",
        why="a branch on an unbacked mark names the attribute",
    ),
    Private(
        f"{_S}:ShapeEnv.evaluate_sym_node",
        ("self", "sym_node", "size_oblivious", "fallback_value"),
        hook="stages.symbolic:evaluate_sym_node_hook",
        why="specialization warnings at the user's line",
    ),
    Private(
        f"{_T}:SymNodeVariable.evaluate_expr",
        ("self", "output_graph"),
        hook="stages.symbolic:unbacked_branch_hook",
        why="dynscalar's explanation first in an unbacked-branch error",
    ),
    # ---- op rules: torch ops whose float parameter torch would force (_ops, dynscalar.ops)
    Private(
        "torch._dynamo.variables.torch:TorchInGraphFunctionVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hook="stages.trace:in_graph_call_hook",
        why="torch functions taking a marked float follow their op rule",
    ),
    Private(
        "torch._dynamo.variables.torch:TorchInGraphFunctionVariable._get_handlers",
        (),
        why="Dynamo's own handling of a torch call, tried before a scalar form is traced in "
        "its place (torch 2.13 decomposes _foreach_lerp_ with a float weight itself)",
    ),
    Private(
        f"{_T}:TensorVariable.call_method",
        ("self", "tx", "name", "args", "kwargs"),
        hook="stages.trace:tensor_method_hook",
        why="tensor methods taking a marked float follow their op rule",
    ),
    Private(
        "torch._dynamo.variables.misc:NumpyVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hook="stages.trace:numpy_call_hook",
        why="numpy's scalar math on a marked float stays symbolic where it equals numpy's",
    ),
    Private(
        "torch._dynamo.symbolic_convert:InstructionTranslatorBase.inline_user_function_return",
        ("self", "fn", "args", "kwargs", "allow_nested_graph_breaks"),
    ),
    Private(f"{_F}:UserFunctionVariable.__init__", ("self", "fn", "is_constant", "**kwargs")),
    Private(
        "torch._dynamo.variables.builtin:BuiltinVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hook="stages.trace:builtin_call_hook",
        disabled_hook="stages.trace:record_call_hook",
        why="write-back records builtin calls; max/min of a marked value (bool, NaN, deep); "
        "int()/round() of a NaN or infinite float and division by zero raise Python's error "
        "in a marked compile",
    ),
    Private(
        "torch._dynamo.variables.builtin:BuiltinVariable.call_range",
        ("self", "tx", "*args"),
        hook="stages.trace:range_hook",
        optional=True,
        why="torch 2.13 builds range(SymFloat) where Python raises; 2.14 raises itself",
        fixes="torch 2.13; from 2.14 call_range converts its arguments with __index__ "
        "(pytorch/pytorch#187129), raising Python's TypeError itself",
    ),
    Private("torch._dynamo.exc:raise_observed_exception"),
    Private(
        "torch.fx.experimental.sym_node:SymNode.expr",
        why="max/min of a marked value compare once its expression is too deep for sympy",
    ),
    Private("torch.fx.experimental.sym_node:SymNode.hint"),
    # ---- marks on properties (_properties)
    Private(
        f"{_F}:PropertyVariable.tp_descr_get_impl",
        ("self", "tx", "obj", "owner"),
        hook="stages.trace:property_get_hook",
        why="a marked property's getter reads its numbers as marked",
    ),
    # ---- write-back: values leaving compiled code keep eager's class (_writeback)
    Private(
        "torch._dynamo.side_effects:SideEffects.codegen_update_mutated",
        ("self", "cg", "log_side_effects"),
        hook="stages.codegen:codegen_update_mutated_hook",
        disabled_hook="stages.codegen:codegen_update_mutated_hook",
        why="attributes and items assigned in compiled code",
    ),
    Private("torch._dynamo.side_effects:SideEffects._get_modified_vars", ("self",)),
    Private(
        "torch._dynamo.variables.dicts:ConstDictVariable",
        why="a dict rebuilt by write-back (should_reconstruct_all): its keys are guarded",
    ),
    Private(f"{_G}:GuardBuilder.DICT_KEYS_MATCH", ("self", "guard")),
    Private("torch._guards:GuardSource.TEMP_LOCAL", why="a source no guard can read"),
    Private(
        "torch._dynamo.output_graph:OutputGraph.codegen_suffix",
        ("self", "tx", "stack_values", "cg", "log_side_effects"),
        hook="stages.codegen:codegen_suffix_hook",
        disabled_hook="stages.codegen:codegen_suffix_hook",
        why="values handed on at a graph break and return values",
    ),
    Private(
        f"{_T}:SymNodeVariable.call_method",
        ("self", "tx", "name", "args", "kwargs"),
        hook="stages.trace:symnode_method_hook",
        disabled_hook="stages.trace:symnode_record_hook",
        why="write-back records methods called on symbolic values",
    ),
    Private(
        "torch._dynamo.variables.constant:ConstantVariable.call_method",
        ("self", "tx", "name", "args", "kwargs"),
        hook="stages.trace:constant_method_hook",
        disabled_hook="stages.trace:constant_method_hook",
        why="write-back records dunder calls on a proxy compiled as a constant",
    ),
    Private(
        f"{_F}:PolyfilledFunctionVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hook="stages.trace:record_call_hook",
        disabled_hook="stages.trace:record_call_hook",
        why="write-back records polyfilled builtins (sum, max, ...)",
    ),
    Private(f"{_C}:PyCodegen.load_import_from", ("self", "module_name", "object_name")),
    Private(f"{_C}:PyCodegen.create_load_const", ("self", "value")),
    Private(f"{_C}:PyCodegen.add_push_null", ("self", "gen_fn", "call_function_ex")),
    Private(f"{_C}:PyCodegen.create_load_const_unchecked", ("self", "value")),
    Private(f"{_C}:PyCodegen.create_store_attr", ("self", "name")),
    Private(f"{_C}:PyCodegen.create_store", ("self", "name")),
    Private(f"{_C}:PyCodegen.create_load", ("self", "name")),
    Private(
        f"{_C}:PyCodegen.__init__",
        ("self", "tx", "root", "graph_output_var", "tempvars", "overridden_sources"),
        why="tempvars: a value replayed at run time is computed once, into a local",
    ),
    Private("torch._dynamo.output_graph:OutputGraph.new_var", ("self", "name")),
    Private(f"{_BT}:create_call_function", ("nargs", "push_null")),
    Private(f"{_BT}:create_dup_top", ()),
    Private(f"{_BT}:create_rot_n", ("n",)),
    Private(f"{_BT}:create_swap", ("n",)),
    Private(f"{_BT}:create_instruction", ("name", "arg", "argval", "target")),
    Private("torch._dynamo.eval_frame:skip_code", ("code",), why="proxy methods never compile"),
    Private(
        "torch.utils._python_dispatch:_disable_current_modes",
        (),
        why="custom ops ask meta tensors which inputs get a gradient, outside AOT's modes",
    ),
    Private(
        "torch._C:_ForceDispatchKeyGuard",
        why="a custom op's kernel runs eager's ATen call with autograd recording (below "
        "autograd's key): ATen picks kernels by requires_grad, autocast's casts keep it",
    ),
    Private("torch._C:_dispatch_tls_local_include_set", why="the dispatch keys now included"),
    Private("torch._C:_dispatch_tls_local_exclude_set", why="the dispatch keys now excluded"),
    Private("torch._C:DispatchKey", why="autograd's dispatch keys, re-included"),
    Private(
        "torch._C._functorch:peek_interpreter_stack",
        why="a call traced inside a functorch transform: dynscalar's ops have no vmap rule",
    ),
    Private(
        "torch._functorch.compile_utils:rand_ops",
        why="the random ops AOTAutograd's common-subexpression pass never merges (by list, "
        "not by tag): dynscalar's random custom ops are added to it",
    ),
    # ---- the float path (stages.aot, _floats), before the first frame compiles
    Private(f"{_B}:VariableBuilder.wrap_symfloat", ("self", "value"), phase="floats"),
    Private(f"{_B}:VariableBuilder.install_guards", ("self", "*guards"), phase="floats"),
    Private(
        "torch._functorch._aot_autograd.graph_compile:tensorify_python_scalars",
        ("gm", "shape_env", "fake_mode"),
        hook="stages.aot:tensorify_hook",
        phase="floats",
        why="the pass that keeps marked floats symbolic; a float it forces is reported",
    ),
    Private(
        f"{_AC}:autograd_cache_key",
        ("mod", "example_inputs", "config", "compiler_config_extra"),
        hook="stages.aot:cache_key_hook",
        phase="floats",
        optional=True,
        why="graphs with a marked float get an AOTAutograd cache key of their own",
    ),
    Private(
        f"{_AC}:check_cacheable",
        ("gm",),
        hook="stages.aot:check_cacheable_hook",
        phase="floats",
        instead_of=f"{_AC}:autograd_cache_key",
        why="where the key function moved, graphs with a marked float bypass the cache",
    ),
    Private(f"{_AC}:BypassAOTAutogradCache", phase="floats"),
    Private(
        f"{_AC}:AOTAutogradCache.save",
        ("key", "entry", "remote"),
        hook="stages.aot:cache_save_hook",
        phase="floats",
        why="no cache entry where a marked float is guarded by value (its guard would be lost)",
    ),
    Private("torch._guards:TracingContext.try_get", phase="floats"),
    Private(
        "torch._subclasses.fake_tensor:unset_fake_temporarily",
        (),
        phase="floats",
        why="the exactness matrix runs real kernels while the AOT pass holds fake mode",
    ),
    Private("torch._dynamo.symbolic_convert:TensorifyState", phase="floats"),
    Private("torch.fx.passes._tensorify_python_scalars:SUPPORTED_OPS", phase="floats"),
    Private("torch.fx.passes._tensorify_python_scalars:SUPPORTED_METHOD_OPS", phase="floats"),
    Private(
        f"{_SN}:SymNode._add",
        ("self", "other"),
        hook="stages.symbolic:add_hook",
        gate=_SNG,
        phase="floats",
        why="float arithmetic of marked values in Python's order, not sympy's (guards)",
    ),
    Private(
        f"{_SN}:SymNode._sub",
        ("self", "other"),
        hook="stages.symbolic:sub_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._mul",
        ("self", "other"),
        hook="stages.symbolic:mul_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._neg", ("self",), hook="stages.symbolic:neg_hook", gate=_SNG, phase="floats"
    ),
    Private(
        f"{_SN}:SymNode._eq",
        ("self", "other"),
        hook="stages.symbolic:eq_hook",
        gate=_SNG,
        phase="floats",
        why="comparisons of marked float expressions decided as Python does (NaN, inf)",
    ),
    Private(
        f"{_SN}:SymNode._ne",
        ("self", "other"),
        hook="stages.symbolic:ne_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._lt",
        ("self", "other"),
        hook="stages.symbolic:lt_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._le",
        ("self", "other"),
        hook="stages.symbolic:le_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._gt",
        ("self", "other"),
        hook="stages.symbolic:gt_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_SN}:SymNode._ge",
        ("self", "other"),
        hook="stages.symbolic:ge_hook",
        gate=_SNG,
        phase="floats",
    ),
    Private(
        f"{_S}:bound_sympy",
        ("expr", "ranges"),
        hook="stages.symbolic:bound_hook",
        off_hook="stages.symbolic:bound_hook",
        phase="floats",
        why="real-number value ranges never decide a comparison kept as Python's",
    ),
    Private("torch.utils._sympy.value_ranges:ValueRanges"),
    Private(
        "torch._dynamo.utils:run_node",
        ("tracer", "node", "args", "kwargs", "nnmodule"),
        hook="stages.symbolic:run_node_hook",
        gate="stages.symbolic:run_node_gate",
        phase="floats",
        why="the comparisons of the user's program (not torch's own) are kept as Python's",
    ),
    Private(f"{_S}:ShapeEnv._create_fx_call_function", ("self", "op", "args")),
    Private("torch.fx.experimental.proxy_tensor:get_proxy_mode", ()),
    Private(
        f"{_SN}:SymNode.__init__",
        (
            "self",
            "expr",
            "shape_env",
            "pytype",
            "hint",
            "constant",
            "fx_node",
            "optimized_summation",
        ),
        phase="floats",
        why="a result's expression is its _expr (with _expr_cache, _expr_ver)",
    ),
    Private("torch._dynamo.config:specialize_float", phase="floats"),
    Private("torch._dynamo.config:assume_static_by_default", phase="floats"),
    Private(
        "torch._inductor:config",
        alias="inductor_config",
        phase="floats",
        why="cpp_wrapper: inductor's C++ wrapper computes returned ints as int64 (_floats)",
    ),
    # ---- a reset of torch's compile state resets dynscalar's caches too (_state)
    Private(
        "torch._dynamo:reset",
        (),
        hook="stages.build:reset_hook",
        degraded_hook="stages.build:reset_hook",
        why="torch._dynamo.reset() and torch.compiler.reset() forget dynscalar's caches too",
    ),
    # ---- read only, through _torch: what the hooks build, test and raise
    Private("torch:_dynamo", alias="dynamo", why="reset(); importing it installs the bridge"),
    Private("torch._dynamo:config", alias="dynamo_config"),
    Private("torch._dynamo:convert_frame", why="the frame callback's file"),
    Private("torch._dynamo.source:LocalSource"),
    Private("torch._dynamo.source:GetItemSource"),
    Private("torch._dynamo.variables.base:VariableTracker"),
    Private("torch._dynamo.variables.base:ValueMutationNew"),
    Private("torch._dynamo.variables.lazy:LazyVariableTracker"),
    Private("torch._dynamo.variables.misc:NullVariable", why="the NULL of a call on the stack"),
    Private("torch._dynamo.variables.lists:BaseListVariable"),
    Private("torch._dynamo.variables.lists:ListVariable"),
    Private("torch._dynamo.variables.lists:TupleVariable"),
    Private("torch._dynamo.symbolic_convert:InstructionTranslator.current_tx"),
    Private("torch._dynamo.exc:Unsupported"),
    Private("torch._dynamo.exc:RestartAnalysis"),
    Private("torch._dynamo.exc:SkipFrame"),
    Private("torch._dynamo.exc:ObservedException"),
    Private("torch._dynamo.exc:UserError"),
    Private("torch._dynamo.exc:ResetRequired"),
    Private("torch._dynamo.exc:RecompileError"),
    Private("torch._dynamo.backends.registry:lookup_backend", ("compiler_fn",)),
    Private("torch._dynamo.eval_frame:_debug_get_cache_entry_list", ("code",)),
    Private(f"{_S}:DimDynamic.DYNAMIC"),
    Private(f"{_S}:DimDynamic.UNBACKED"),
    Private(f"{_S}:ConstraintViolationError"),
    Private(f"{_S}:GuardOnDataDependentSymNode"),
    Private(f"{_S}:uninteresting_files", ()),
    Private("torch.utils._sympy.symbol:SymT.FLOAT"),
    Private("torch.utils._sympy.symbol:symbol_is_type", ("sym", "prefix")),
    Private("torch.utils._sympy.numbers:int_oo"),
    Private("torch._C:_nn", alias="C_nn", why="functions an op rule names as torch._C._nn.*"),
    # ---- torch.export (_export): public, wrapped at import so the first export is seen
    Private(
        "torch.export:export",
        (
            "mod",
            "args",
            "kwargs",
            "dynamic_shapes",
            "strict",
            "preserve_module_call_signature",
            "prefer_deferred_runtime_asserts_over_guards",
        ),
        hook="stages.export:export_hook",
        phase="export",
        optional=True,
        why="marks read by an export are specialized with a warning",
    ),
    # ---- the doctor's watcher wraps it; _guards reads it for its guards' texts
    Private(
        f"{_G}:get_verbose_code_parts",
        ("code_parts", "guard", "recompile_hint"),
        phase="doctor",
        why="keeps the user frame of each scalar guard",
    ),
    # ---- TORCH_LOGS=dynscalar (_logs)
    Private("torch._logging._internal:register_log", ("setting_name", "log_name"), phase="logs"),
    Private("torch._logging._internal:log_registry", phase="logs"),
)
