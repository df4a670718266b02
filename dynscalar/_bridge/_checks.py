"""Which Dynamo internals the bridge relies on, and the checks that they have not moved."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from .._compat import MIN_TORCH, TORCH_SUPPORTED, TORCH_VERSION
from .._diagnostics import BridgeError

__all__ = ["BridgeError", "check_float_internals", "check_internals"]


# name -> expected parameter names of the private callables the bridge relies on.
_EXPECTED_SIGNATURES: dict[str, tuple[str, ...]] = {
    # tracing: which values become symbolic graph inputs (_wrap, _ints)
    "VariableBuilder._wrap": ("self", "value"),
    "VariableBuilder.wrap_symint": ("self", "value", "dynamism", "context"),
    "OutputGraph.resolve_source_value": ("self", "source"),
    "ShapeEnv.constrain_symbol_range": ("self", "s", "compiler_min", "compiler_max"),
    # guards (_guards)
    "guards.install_guard": ("guards", "skip"),
    "GuardBuilder.TYPE_MATCH": ("self", "guard"),
    "GuardBuilder.CONSTANT_MATCH": ("self", "guard"),  # _restarts: a constant after a restart
    "ConstantVariable.create": ("value", "kwargs"),
    "GuardBuilder.ID_MATCH": ("self", "guard", "recompile_hint"),
    "GuardBuilder.EQUALS_MATCH": ("self", "guard", "recompile_hint"),
    "GuardBuilder.DICT_NOT_CONTAINS": ("self", "guard", "key"),
    "GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT": ("self", "guard", "attr"),
    # reports (_reports, _ints)
    "ShapeEnv._make_data_dependent_error": ("self", "expr", "unhinted_expr", "expr_sym_node_id"),
    "ShapeEnv.evaluate_sym_node": ("self", "sym_node", "size_oblivious", "fallback_value"),
    "SymNodeVariable.evaluate_expr": ("self", "output_graph"),
    # decompositions (_decompositions)
    "TorchInGraphFunctionVariable.call_function": ("self", "tx", "args", "kwargs"),
    "InstructionTranslatorBase.inline_user_function_return": (
        "self",
        "fn",
        "args",
        "kwargs",
        "allow_nested_graph_breaks",
    ),
    "UserFunctionVariable.__init__": ("self", "fn", "is_constant", "kwargs"),
    "TensorVariable.call_method": ("self", "tx", "name", "args", "kwargs"),
    # _properties: a marked property's getter, inlined
    "PropertyVariable.tp_descr_get_impl": ("self", "tx", "obj", "owner"),
    "BuiltinVariable.call_function": ("self", "tx", "args", "kwargs"),
    # write-back (_writeback)
    "SideEffects.codegen_update_mutated": ("self", "cg", "log_side_effects"),
    "SymNodeVariable.call_method": ("self", "tx", "name", "args", "kwargs"),
    "SideEffects._get_modified_vars": ("self",),
    "OutputGraph.codegen_suffix": ("self", "tx", "stack_values", "cg", "log_side_effects"),
    "PolyfilledFunctionVariable.call_function": ("self", "tx", "args", "kwargs"),
    "PyCodegen.load_import_from": ("self", "module_name", "object_name"),
    "PyCodegen.create_load_const": ("self", "value"),
    "PyCodegen.add_push_null": ("self", "gen_fn", "call_function_ex"),
    "bytecode_transformation.create_call_function": ("nargs", "push_null"),
    "PyCodegen.create_load_const_unchecked": ("self", "value"),
    "PyCodegen.create_store_attr": ("self", "name"),
    "bytecode_transformation.create_dup_top": (),
    "bytecode_transformation.create_rot_n": ("n",),
    "bytecode_transformation.create_swap": ("n",),
    "bytecode_transformation.create_instruction": ("name", "arg", "argval", "target"),
    "eval_frame.skip_code": ("code",),
    # automatic dynamic sees a proxy's value (_sources.record_for_automatic_dynamic)
    "pgo.process_automatic_dynamic": ("tx", "name", "entry", "is_unspecialized_nn_module"),
    "FrameStateSizeEntry.make_scalar": ("x",),
}

# Other private names the int path reads (checked for existence only).
_NAMES = (
    # _wrap._resumed: a resume function's original code, where argument marks live
    "torch._dynamo.resume_execution.ContinueExecutionCache.generated_code_metadata",
)

# Sources the bridge builds, with the dataclass fields it passes.
_EXPECTED_SOURCES: dict[str, tuple[str, ...]] = {
    "AttrSource": ("base", "member"),
    "DictGetItemSource": ("base", "index"),
    "ImportSource": ("module_name",),
}

# The float path needs more, in modules that import torch._inductor; importing those from
# the torch._dynamo post-import hook can hit a partially initialized module (torch.compile
# imports torch._inductor.standalone_compile, which imports torch._dynamo), so they are
# checked and patched at the first dynamic float Dynamo meets.
_FLOAT_SIGNATURES: dict[str, tuple[str, ...]] = {
    "VariableBuilder.wrap_symfloat": ("self", "value"),
    "VariableBuilder.install_guards": ("self", "guards"),
    "graph_compile.tensorify_python_scalars": ("gm", "shape_env", "fake_mode"),
    "autograd_cache.check_cacheable": ("gm",),
}

# Other private names the float path relies on (checked for existence only).
_FLOAT_NAMES = (
    "torch._functorch._aot_autograd.autograd_cache.BypassAOTAutogradCache",
    "torch._dynamo.exc.TensorifyScalarRestartAnalysis",
    "torch._dynamo.symbolic_convert.TensorifyState",
    "torch._guards.CompileContext",  # _forced: the names one compile's restarts keep
    "torch.fx.passes._tensorify_python_scalars.SUPPORTED_OPS",
    "torch.fx.passes._tensorify_python_scalars.SUPPORTED_METHOD_OPS",
    "torch._dynamo.config.specialize_float",
    "torch._dynamo.config.assume_static_by_default",
)


def _core_internals() -> dict[str, Any]:
    from torch._dynamo import (
        bytecode_transformation,
        codegen,
        eval_frame,
        guards,
        output_graph,
        pgo,
        side_effects,
        symbolic_convert,
    )
    from torch._dynamo.variables import builder, builtin, constant, functions, tensor
    from torch._dynamo.variables import torch as torch_variables
    from torch.fx.experimental import symbolic_shapes

    shape_env = symbolic_shapes.ShapeEnv
    guard_builder = guards.GuardBuilder
    tracer = symbolic_convert.InstructionTranslatorBase
    return {
        "VariableBuilder._wrap": builder.VariableBuilder._wrap,
        "VariableBuilder.wrap_symint": builder.VariableBuilder.wrap_symint,
        "OutputGraph.resolve_source_value": output_graph.OutputGraph.resolve_source_value,
        "ShapeEnv.constrain_symbol_range": shape_env.constrain_symbol_range,
        "guards.install_guard": guards.install_guard,
        "GuardBuilder.TYPE_MATCH": guard_builder.TYPE_MATCH,
        "GuardBuilder.CONSTANT_MATCH": guard_builder.CONSTANT_MATCH,
        "ConstantVariable.create": constant.ConstantVariable.create,
        "GuardBuilder.ID_MATCH": guard_builder.ID_MATCH,
        "GuardBuilder.EQUALS_MATCH": guard_builder.EQUALS_MATCH,
        "GuardBuilder.DICT_NOT_CONTAINS": guard_builder.DICT_NOT_CONTAINS,
        "GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT": guard_builder.NOT_PRESENT_IN_GENERIC_DICT,
        "ShapeEnv._make_data_dependent_error": shape_env._make_data_dependent_error,
        "ShapeEnv.evaluate_sym_node": shape_env.evaluate_sym_node,
        "SymNodeVariable.evaluate_expr": tensor.SymNodeVariable.evaluate_expr,
        "TorchInGraphFunctionVariable.call_function": (
            torch_variables.TorchInGraphFunctionVariable.call_function
        ),
        "InstructionTranslatorBase.inline_user_function_return": (
            tracer.inline_user_function_return
        ),
        "UserFunctionVariable.__init__": functions.UserFunctionVariable.__init__,
        "TensorVariable.call_method": tensor.TensorVariable.call_method,
        "PropertyVariable.tp_descr_get_impl": functions.PropertyVariable.tp_descr_get_impl,
        "BuiltinVariable.call_function": builtin.BuiltinVariable.call_function,
        "SideEffects.codegen_update_mutated": side_effects.SideEffects.codegen_update_mutated,
        "SymNodeVariable.call_method": tensor.SymNodeVariable.call_method,
        "SideEffects._get_modified_vars": side_effects.SideEffects._get_modified_vars,
        "OutputGraph.codegen_suffix": output_graph.OutputGraph.codegen_suffix,
        "PolyfilledFunctionVariable.call_function": (
            functions.PolyfilledFunctionVariable.call_function
        ),
        "PyCodegen.load_import_from": codegen.PyCodegen.load_import_from,
        "PyCodegen.create_load_const": codegen.PyCodegen.create_load_const,
        "PyCodegen.add_push_null": codegen.PyCodegen.add_push_null,
        "bytecode_transformation.create_call_function": (
            bytecode_transformation.create_call_function
        ),
        "PyCodegen.create_load_const_unchecked": codegen.PyCodegen.create_load_const_unchecked,
        "PyCodegen.create_store_attr": codegen.PyCodegen.create_store_attr,
        "bytecode_transformation.create_dup_top": bytecode_transformation.create_dup_top,
        "bytecode_transformation.create_rot_n": bytecode_transformation.create_rot_n,
        "bytecode_transformation.create_swap": bytecode_transformation.create_swap,
        "bytecode_transformation.create_instruction": bytecode_transformation.create_instruction,
        "eval_frame.skip_code": eval_frame.skip_code,
        "pgo.process_automatic_dynamic": pgo.process_automatic_dynamic,
        "FrameStateSizeEntry.make_scalar": pgo.FrameStateSizeEntry.make_scalar,
    }


def _float_internals() -> dict[str, Any]:
    from torch._dynamo.variables import builder
    from torch._functorch._aot_autograd import autograd_cache, graph_compile

    return {
        "VariableBuilder.wrap_symfloat": builder.VariableBuilder.wrap_symfloat,
        "VariableBuilder.install_guards": builder.VariableBuilder.install_guards,
        "graph_compile.tensorify_python_scalars": graph_compile.tensorify_python_scalars,  # type: ignore[attr-defined]
        "autograd_cache.check_cacheable": autograd_cache.check_cacheable,
    }


def _check_signatures(found: dict[str, Any], expected: dict[str, tuple[str, ...]]) -> None:
    for name, params_expected in expected.items():
        params = tuple(inspect.signature(inspect.unwrap(found[name])).parameters)
        if params != params_expected:
            raise BridgeError(
                f"dynscalar: torch {TORCH_VERSION} changed {name}{params}; the bridge was "
                f"written for {name}{params_expected}. Please report this with your torch version."
            )


def check_internals() -> None:
    """Raise :class:`BridgeError` unless the int path's internals have the expected shape."""
    if not TORCH_SUPPORTED:
        raise BridgeError(
            f"dynscalar needs torch>={MIN_TORCH}; torch {TORCH_VERSION} is installed."
        )
    try:
        found = _core_internals()
    except (ImportError, AttributeError) as exc:
        raise BridgeError(f"dynscalar: a torch._dynamo internal moved: {exc}") from exc
    _check_signatures(found, _EXPECTED_SIGNATURES)
    _check_names(_NAMES)
    from torch._dynamo import source

    for name, expected in _EXPECTED_SOURCES.items():
        fields = tuple(getattr(getattr(source, name, None), "__dataclass_fields__", {}))
        if fields != expected:
            raise BridgeError(
                f"dynscalar: torch {TORCH_VERSION} changed torch._dynamo.source.{name} fields to "
                f"{fields}; the bridge was written for {expected}. Please report this with "
                "your torch version."
            )


def check_float_internals() -> None:
    """Raise :class:`BridgeError` unless the float path's internals have the expected shape."""
    try:
        found = _float_internals()
    except (ImportError, AttributeError) as exc:
        raise BridgeError(f"dynscalar: a torch internal for dynamic floats moved: {exc}") from exc
    _check_signatures(found, _FLOAT_SIGNATURES)
    _check_names(_FLOAT_NAMES)


def _check_names(dotted_names: tuple[str, ...]) -> None:
    """Each dotted name exists: a module, then attributes (``module.Class.attribute``)."""
    for dotted in dotted_names:
        parts = dotted.split(".")
        for split in range(len(parts) - 1, 0, -1):  # the longest importable module prefix
            try:
                owner: Any = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            break
        else:
            raise BridgeError(f"dynscalar: torch {TORCH_VERSION} has no {dotted}")
        for attr in parts[split:]:
            if not hasattr(owner, attr):
                raise BridgeError(f"dynscalar: torch {TORCH_VERSION} has no {dotted}")
            owner = getattr(owner, attr)
