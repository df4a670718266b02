"""Every private torch name the bridge relies on or patches, in one declarative table.

Why it exists: a torch release moves private names, and the bridge must notice before it
patches anything.  Each :class:`Private` entry says where the name lives, the parameters
(or dataclass fields) it must have, the hook the bridge wraps it with (if any), and when
that happens.  The checks, the installer and its undo (``_install``), the doctor's
recompile watcher (``_recompiles``) and the benchmarks all read this table, so adding or
retiring a patch is one entry here plus its hook function.  Below the entries' type is
the mechanism every entry goes through: check, wrap (a ``wrapt.FunctionWrapper`` whose
hook passes straight through while ``BYPASS`` is set), unwrap and wrap again.

When an entry is checked and applied (``phase``):

* ``"dynamo"``: when ``torch._dynamo`` is imported (the bridge's post-import hook);
* ``"floats"``: at the first marked float Dynamo meets (these modules import
  ``torch._inductor``, which is still initializing when ``torch._dynamo`` is imported);
* ``"export"``: at ``import dynscalar`` (``torch.export.export`` is public; wrapping it
  early lets the user's first export be seen);
* ``"doctor"``: while ``python -m dynscalar doctor`` watches recompiles (its wrappers are
  bound methods of the watcher, so ``hook`` is empty there);
* ``"logs"``: read once at ``import dynscalar`` to register the ``dynscalar`` log name.

Importing this module imports nothing from torch: names are resolved when checked.

Examples:
    >>> from dynscalar._bridge._table import PRIVATES
    >>> [p.name for p in PRIVATES if p.target.endswith(":VariableBuilder._wrap")]
    ['VariableBuilder._wrap']
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "APPLIED",
    "BYPASS",
    "PHASES",
    "PRIVATES",
    "Patch",
    "Phase",
    "Private",
    "apply",
    "apply_phase",
    "by_phase",
    "check",
    "find",
    "hook_function",
    "hook_of",
    "named",
    "rewrap",
    "unwrap",
    "wrap",
]

Phase = Literal["dynamo", "floats", "export", "doctor", "logs"]


@dataclass(frozen=True)
class Private:
    """One private torch name: where it is, its shape, and the bridge's hook on it."""

    #: ``"module:qualified.name"``: the module to import, then attributes to follow.
    target: str
    #: Expected parameter names (a dataclass: its field names); None checks existence only.
    params: tuple[str, ...] | None = None
    #: Hook functions in ``dynscalar._bridge`` (``"_module:function"``), outermost first;
    #: several make one chained wrapper.  Empty: read, never patched.
    hooks: tuple[str, ...] = ()
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
    #: The hook kept in place of ``hooks`` inside ``disabled()`` (where the bridge is
    #: installed, so the entry was checked): write-back's recording and codegen, which act
    #: only in a compile that read a proxy, so that the objects it stores stay what eager
    #: stores; a compile that reads none is stock torch's.
    disabled_hook: str | None = None
    #: Why the bridge needs it, in a few words.
    why: str = ""
    #: The short name ``_torch`` gives its root object, where the first part of the
    #: qualified name would be ambiguous (two modules' ``config``).
    alias: str | None = None

    @property
    def name(self) -> str:
        """The short name used in messages: ``Class.attribute`` or ``module.function``."""
        module, _, qualname = self.target.partition(":")
        return qualname if "." in qualname else f"{module.rpartition('.')[2]}.{qualname}"

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
        if isinstance(owner, types.ModuleType) and not hasattr(owner, attribute):
            _attribute(owner, attribute)  # a submodule not imported yet
        if not hasattr(owner, attribute):
            raise AttributeError(f"{self.target.replace(':', '.')} does not exist")
        return owner, attribute

    def found_params(self) -> tuple[str, ...]:
        """The parameter names (or dataclass fields) the installed torch has."""
        owner, attribute = self.resolve()
        value = getattr(owner, attribute)
        fields = getattr(value, "__dataclass_fields__", None) if isinstance(value, type) else None
        if fields is not None:
            return tuple(fields)
        return tuple(inspect.signature(inspect.unwrap(value)).parameters)


def _attribute(owner: Any, name: str) -> Any:
    """``owner.name``, importing it first where ``owner`` is a package and ``name`` one of
    its submodules (``torch._dynamo:source``)."""
    try:
        return getattr(owner, name)
    except AttributeError:
        if not isinstance(owner, types.ModuleType):
            raise
        return importlib.import_module(f"{owner.__name__}.{name}")


def named(short: str) -> Private | None:
    """The first entry whose :attr:`Private.short` is ``short`` (None: not in the table)."""
    return next((p for p in PRIVATES if p.short == short), None)


def find(target_suffix: str) -> Private:
    """The one entry whose target ends with ``target_suffix`` (``":VariableBuilder._wrap"``)."""
    found = [p for p in PRIVATES if p.target.endswith(target_suffix)]
    if len(found) != 1:
        raise KeyError(f"{target_suffix!r} matches {len(found)} entries of the table")
    return found[0]


def by_phase(phase: Phase) -> tuple[Private, ...]:
    """The entries checked (and applied) at ``phase``, in table order."""
    return tuple(p for p in PRIVATES if p.phase == phase)


# ----------------------------------------------------------------------------- mechanism
Hook = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


@dataclass
class Patch:
    """One applied wrapper: where it sits, torch's original and the wrapper itself."""

    entry: Private
    owner: Any
    attribute: str
    original: Any
    wrapper: Any


#: Every full-bridge patch applied in this process, in order (in place unless disabled).
APPLIED: list[Patch] = []
#: phase -> True (checked and applied) or the BridgeError saying why not.
PHASES: dict[str, Any] = {}
#: While > 0 (``disabled()``), a wrapper that could not be taken out passes straight through.
BYPASS = [0]


def check(phase: Phase, who: str = "dynscalar", what: str = "the bridge") -> list[Private]:
    """Raise ``BridgeError`` unless every entry of ``phase`` has the expected shape
    (messages start with ``who`` and say that ``what`` was written for another shape).

    Returns the entries to patch: those with hooks, minus optional ones whose signature
    differs here, and alternatives (``instead_of``) whose optional entry is used.
    """
    from .._compat import MIN_TORCH, TORCH_SUPPORTED, TORCH_VERSION
    from .._diagnostics import BridgeError

    if phase == "dynamo" and not TORCH_SUPPORTED:
        raise BridgeError(
            f"dynscalar needs torch>={MIN_TORCH}; torch {TORCH_VERSION} is installed."
        )
    skipped: set[str] = set()
    for entry in by_phase(phase):
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
        for entry in by_phase(phase)
        if entry.hooks
        and entry.target not in skipped
        and (entry.instead_of is None or entry.instead_of in skipped)
    ]


def hook_function(path: str) -> Hook:
    """The hook ``"_module:function"`` of ``dynscalar._bridge`` (imports that module)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)  # type: ignore[no-any-return]


def _lazy(path: str) -> Hook:
    def hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return hook_function(path)(wrapped, instance, args, kwargs)

    return hook


def _chained(outer: Hook, inner: Hook) -> Hook:
    """One wrapper doing ``outer`` around ``inner``: a function is wrapped once."""

    def chained(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        def call_inner(*a: Any, **k: Any) -> Any:
            return inner(wrapped, instance, a, k)

        return outer(call_inner, instance, args, kwargs)

    return chained


def _gated(hook: Hook) -> Hook:
    """``hook``, passing straight through while ``BYPASS`` is set (a wrapper that could not
    be taken out because another library wrapped the function again since)."""

    def gate(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if BYPASS[0]:
            return wrapped(*args, **kwargs)
        return hook(wrapped, instance, args, kwargs)

    return gate


def _safe(entry: Private, hook: Hook) -> Hook:
    """``hook`` inside the safety net (``_safety``): a failure of dynscalar's compiles the
    frame as stock torch does."""

    def safe(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        from . import _safety

        return _safety.call(entry, hook, wrapped, instance, args, kwargs)

    return safe


def hook_of(entry: Private, lazy: bool = False) -> Hook:
    """The wrapper function for ``entry``: its hooks chained, inside the safety net, gated by
    ``BYPASS``.  Each hook is looked up by name at every call (``lazy`` also imports its
    module then, instead of now), so the function a module holds now is the one that runs."""
    if not lazy:
        for path in entry.hooks:
            hook_function(path)  # import the modules now: a missing hook fails here
    hooks = [_lazy(path) for path in entry.hooks]
    hook = hooks[-1]
    for outer in reversed(hooks[:-1]):
        hook = _chained(outer, hook)
    return _gated(_safe(entry, hook))


def wrap(entry: Private, hook: Hook) -> Patch:
    """Replace ``entry``'s function with a ``wrapt.FunctionWrapper`` calling ``hook``."""
    import wrapt

    owner, attribute = entry.resolve()
    original = vars(owner)[attribute]
    wrapper = wrapt.FunctionWrapper(original, hook)
    setattr(owner, attribute, wrapper)
    return Patch(entry, owner, attribute, original, wrapper)


def unwrap(patch: Patch) -> bool:
    """Put torch's original back; False (left alone) if someone replaced the wrapper since."""
    if vars(patch.owner).get(patch.attribute) is not patch.wrapper:
        return False
    setattr(patch.owner, patch.attribute, patch.original)
    return True


def rewrap(patch: Patch) -> None:
    """Put the wrapper back where :func:`unwrap` took it out."""
    if vars(patch.owner).get(patch.attribute) is patch.original:
        setattr(patch.owner, patch.attribute, patch.wrapper)


def apply(entries: list[Private], lazy: bool = False) -> list[Patch]:
    """Wrap every entry, or none: a failure half-way undoes the ones already wrapped."""
    done: list[Patch] = []
    try:
        for entry in entries:
            done.append(wrap(entry, hook_of(entry, lazy)))
    except BaseException:
        for patch in reversed(done):
            unwrap(patch)
        raise
    return done


def apply_phase(phase: Phase, lazy: bool = False) -> bool:
    """Check and apply ``phase`` once; False (``PHASES[phase]`` says why) when it moved."""
    from .._diagnostics import BridgeError

    if phase not in PHASES:
        try:
            APPLIED.extend(apply(check(phase), lazy))
        except BridgeError as exc:
            PHASES[phase] = exc
        else:
            PHASES[phase] = True
    return PHASES[phase] is True


_B = "torch._dynamo.variables.builder"
_T = "torch._dynamo.variables.tensor"
_F = "torch._dynamo.variables.functions"
_G = "torch._dynamo.guards"
_S = "torch.fx.experimental.symbolic_shapes"
_C = "torch._dynamo.codegen"
_BT = "torch._dynamo.bytecode_transformation"
_AC = "torch._functorch._aot_autograd.autograd_cache"
_SN = "torch.fx.experimental.sym_node"

PRIVATES: tuple[Private, ...] = (
    # ---- tracing: which values become symbolic graph inputs (_wrap, _ints)
    Private(
        f"{_B}:VariableBuilder._wrap",
        ("self", "value"),
        hooks=("_wrap:wrap_hook",),
        degraded_hook="_wrap:wrap_degraded",
        off_hook="_wrap:wrap_off",
        why="marked values become symbolic graph inputs",
    ),
    Private(f"{_B}:VariableBuilder.wrap_symint", ("self", "value", "dynamism", "context")),
    Private("torch._dynamo.output_graph:OutputGraph.resolve_source_value", ("self", "source")),
    Private(
        "torch._dynamo.output_graph:OutputGraph.call_user_compiler",
        ("self", "gm", "example_inputs"),
        hooks=("_safety:backend_compile_hook", "_floats:compile_hook"),
        why="a backend that fails on a graph with marked values: traced again as stock; "
        "a marked float the restarted trace specialized is warned",
    ),
    Private(f"{_S}:ShapeEnv.constrain_symbol_range", ("self", "s", "compiler_min", "compiler_max")),
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
    Private("torch._dynamo.source:DictGetItemSource", ("base", "index")),
    Private("torch._dynamo.source:ImportSource", ("module_name",)),
    Private(
        f"{_B}:VariableBuilder.__call__",
        ("self", "value"),
        hooks=("_properties:builder_call_hook",),
        why="a marked getter reading a value already made a constant says so",
    ),
    Private(
        "torch.utils._python_dispatch:is_in_torch_dispatch_mode",
        ("include_infra_modes",),
        why="no trace restart from inside a fake-tensor op",
    ),
    Private("torch._dynamo.exc:TensorifyScalarRestartAnalysis", why="restarts of a trace"),
    Private("torch._guards:CompileContext", why="one compile's restarts"),
    # ---- guards (_guards, _restarts)
    Private(f"{_G}:install_guard", ("guards", "skip")),
    Private(f"{_G}:GuardBuilder.TYPE_MATCH", ("self", "guard")),
    Private(f"{_G}:GuardBuilder.CONSTANT_MATCH", ("self", "guard")),
    Private("torch._dynamo.variables.constant:ConstantVariable.create", ("value", "kwargs")),
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
        hooks=("_ints:data_dependent_hook",),
        why="a branch on an unbacked mark names the attribute",
    ),
    Private(
        f"{_S}:ShapeEnv.evaluate_sym_node",
        ("self", "sym_node", "size_oblivious", "fallback_value"),
        hooks=("_reports:evaluate_sym_node_hook",),
        why="specialization warnings at the user's line",
    ),
    Private(
        f"{_T}:SymNodeVariable.evaluate_expr",
        ("self", "output_graph"),
        hooks=("_ints:unbacked_branch_hook",),
        why="dynscalar's explanation first in an unbacked-branch error",
    ),
    # ---- op rules: torch ops whose float parameter torch would force (_ops, dynscalar.ops)
    Private(
        "torch._dynamo.variables.torch:TorchInGraphFunctionVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hooks=("_ops:in_graph_call_hook",),
        why="torch functions taking a marked float follow their op rule",
    ),
    Private(
        f"{_T}:TensorVariable.call_method",
        ("self", "tx", "name", "args", "kwargs"),
        hooks=("_ops:tensor_method_hook",),
        why="tensor methods taking a marked float follow their op rule",
    ),
    Private(
        "torch._dynamo.symbolic_convert:InstructionTranslatorBase.inline_user_function_return",
        ("self", "fn", "args", "kwargs", "allow_nested_graph_breaks"),
    ),
    Private(f"{_F}:UserFunctionVariable.__init__", ("self", "fn", "is_constant", "kwargs")),
    Private(
        "torch._dynamo.variables.builtin:BuiltinVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hooks=(
            "_writeback:builtin_call_hook",
            "_ops:builtin_call_hook",
            "_builtins:conversion_hook",
        ),
        disabled_hook="_writeback:record_call_hook",
        why="write-back records builtin calls; max/min of a marked value (bool, NaN, deep); "
        "int()/round() of a NaN or infinite float raise Python's error in a marked compile",
    ),
    Private(
        "torch._dynamo.variables.builtin:BuiltinVariable.call_range",
        ("self", "tx", "args"),
        hooks=("_builtins:range_hook",),
        optional=True,
        why="torch 2.13 builds range(SymFloat) where Python raises; 2.14 raises itself",
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
        hooks=("_properties:property_get_hook",),
        why="a marked property's getter reads its numbers as marked",
    ),
    # ---- write-back: values leaving compiled code keep eager's class (_writeback)
    Private(
        "torch._dynamo.side_effects:SideEffects.codegen_update_mutated",
        ("self", "cg", "log_side_effects"),
        hooks=("_writeback:codegen_update_mutated_hook",),
        disabled_hook="_writeback:codegen_update_mutated_hook",
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
        hooks=("_writeback:codegen_suffix_hook",),
        disabled_hook="_writeback:codegen_suffix_hook",
        why="values handed on at a graph break and return values",
    ),
    Private(
        f"{_T}:SymNodeVariable.call_method",
        ("self", "tx", "name", "args", "kwargs"),
        hooks=("_writeback:symnode_method_hook",),
        disabled_hook="_writeback:symnode_record_hook",
        why="write-back records methods called on symbolic values",
    ),
    Private(
        f"{_F}:PolyfilledFunctionVariable.call_function",
        ("self", "tx", "args", "kwargs"),
        hooks=("_writeback:record_call_hook",),
        disabled_hook="_writeback:record_call_hook",
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
    # ---- the float path (_floats, _forced), at the first marked float
    Private(f"{_B}:VariableBuilder.wrap_symfloat", ("self", "value"), phase="floats"),
    Private(f"{_B}:VariableBuilder.install_guards", ("self", "guards"), phase="floats"),
    Private(
        "torch._functorch._aot_autograd.graph_compile:tensorify_python_scalars",
        ("gm", "shape_env", "fake_mode"),
        hooks=("_floats:tensorify_hook",),
        phase="floats",
        why="the pass that keeps marked floats symbolic; a float it forces is reported",
    ),
    Private(
        f"{_AC}:autograd_cache_key",
        ("mod", "example_inputs", "config", "compiler_config_extra"),
        hooks=("_floats:cache_key_hook",),
        phase="floats",
        optional=True,
        why="graphs with a marked float get an AOTAutograd cache key of their own",
    ),
    Private(
        f"{_AC}:check_cacheable",
        ("gm",),
        hooks=("_floats:check_cacheable_hook",),
        phase="floats",
        instead_of=f"{_AC}:autograd_cache_key",
        why="where the key function moved, graphs with a marked float bypass the cache",
    ),
    Private(f"{_AC}:BypassAOTAutogradCache", phase="floats"),
    Private(
        f"{_AC}:AOTAutogradCache.save",
        ("key", "entry", "remote"),
        hooks=("_floats:cache_save_hook",),
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
        hooks=("_ieee:add_hook",),
        phase="floats",
        why="float arithmetic of marked values in Python's order, not sympy's (guards)",
    ),
    Private(f"{_SN}:SymNode._sub", ("self", "other"), hooks=("_ieee:sub_hook",), phase="floats"),
    Private(f"{_SN}:SymNode._mul", ("self", "other"), hooks=("_ieee:mul_hook",), phase="floats"),
    Private(f"{_SN}:SymNode._neg", ("self",), hooks=("_ieee:neg_hook",), phase="floats"),
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
        hooks=("_export:export_hook",),
        phase="export",
        optional=True,
        why="marks read by an export are specialized with a warning",
    ),
    # ---- the doctor's recompile watcher (_recompiles); its wrappers are the watcher's
    Private(
        "torch._dynamo.convert_frame:get_and_maybe_log_recompilation_reasons",
        ("cache_entries", "frame", "backend", "skip_logging"),
        phase="doctor",
        why="called once per recompile with the cached versions and the frame",
    ),
    Private(
        "torch._dynamo.convert_frame:exceeds_recompile_limit",
        ("cache_size", "compile_id"),
        phase="doctor",
        why="tells when recompile_limit stopped compiling",
    ),
    Private(
        f"{_G}:get_verbose_code_parts",
        ("code_parts", "guard", "recompile_hint"),
        phase="doctor",
        why="keeps the user frame of each scalar guard",
    ),
    Private(
        "torch._dynamo.convert_frame:ConvertFrame.__call__",
        ("self", "frame", "cache_entry", "hooks", "frame_state", "skip"),
        phase="doctor",
        why="the limit's run-cached-only strategy, kept for one call so later calls are seen",
    ),
    Private(
        "torch._dynamo.types:ConvertFrameReturn",
        ("frame_exec_strategy", "apply_to_code", "guarded_code", "skip_reason"),
        phase="doctor",
    ),
    Private(f"{_G}:GuardManagerWrapper", phase="doctor"),
    Private("torch._C._dynamo.guards:DictGuardManager.get_key_value_managers", phase="doctor"),
    Private("torch._C._dynamo.guards:EQUALS_MATCH", phase="doctor"),
    # ---- TORCH_LOGS=dynscalar (_logs)
    Private("torch._logging._internal:register_log", ("setting_name", "log_name"), phase="logs"),
    Private("torch._logging._internal:log_registry", phase="logs"),
    # ---- tools (branch tools): read by dynscalar/tools, never by the bridge
    Private(
        "torch._dynamo.backends.registry:lookup_backend",
        ("compiler_fn",),
        optional=True,
        why="the demo counts the graphs of the backend it is given by name",
    ),
)
