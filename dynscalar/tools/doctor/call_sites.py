"""The statement of user code that called a compiled function, and where each argument's
value lies in it (read from the caller's frame and the file's syntax tree)."""

from __future__ import annotations

import ast
import linecache
import types

from .records import CallSite

__all__ = ["read_call"]


_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),  # Python 3.11
    *((ast.Match,) if hasattr(ast, "Match") else ()),
)


def read_call(
    caller: types.FrameType | None, code: types.CodeType, names: list[str]
) -> CallSite | None:
    """The statement of the call site, with the span of each argument in ``names``."""
    if caller is None or not hasattr(caller.f_code, "co_positions"):  # Python < 3.11
        return None
    try:
        positions = list(caller.f_code.co_positions())
        lineno, end_lineno, col, end_col = positions[caller.f_lasti // 2]
        filename = caller.f_code.co_filename
        source = "".join(linecache.getlines(filename))
        if not source or None in (lineno, end_lineno, col, end_col):
            return None
        tree = ast.parse(source)
    except (SyntaxError, ValueError, IndexError):
        return None
    call = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)
            == (lineno, end_lineno, col, end_col)
        ),
        None,
    )
    statement = None if call is None else _innermost_simple_statement(tree, call)
    if call is None or statement is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    positional = list(code.co_varnames[: code.co_argcount])
    if positional and positional[0] == "self":
        positional = positional[1:]  # model(x, t) calls forward(self, x, t)
    values: dict[str, ast.expr] = {}
    for name in names:
        value = next((k.value for k in call.keywords if k.arg == name), None)
        if value is None and name in positional:
            index = positional.index(name)
            value = call.args[index] if index < len(call.args) else None
        if value is None:  # not passed here (a default, **kwargs)
            return None
        values[name] = value

    lines = source.splitlines(keepends=True)

    def offset(line: int, column: int) -> int:  # ast columns count UTF-8 bytes
        before = sum(len(text) for text in lines[: line - 1])
        return before + len(lines[line - 1].encode()[:column].decode(errors="replace"))

    line_start = offset(statement.lineno, 0)
    indent = offset(statement.lineno, statement.col_offset) - line_start
    end = offset(statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
    text = source[line_start:end]
    if any(line[:indent].strip() for line in text.splitlines()):
        return None  # a continuation line indented less than the statement: leave it
    spans = {}
    for name, value in values.items():
        start = offset(value.lineno, value.col_offset) - line_start
        stop = offset(value.end_lineno or value.lineno, value.end_col_offset or 0) - line_start
        spans[name] = (_dedent_position(text, start, indent), _dedent_position(text, stop, indent))
    return CallSite(
        filename=filename,
        lineno=statement.lineno,
        statement="".join(line[indent:] for line in text.splitlines(keepends=True)),
        callee=ast.get_source_segment(source, call.func) or "",
        arguments=spans,
    )


def _dedent_position(text: str, position: int, indent: int) -> int:
    """Where ``position`` of ``text`` lands once every line loses ``indent`` characters."""
    return position - indent * (text.count("\n", 0, position) + 1)


def _innermost_simple_statement(tree: ast.AST, target: ast.expr) -> ast.stmt | None:
    def contains(node: ast.stmt) -> bool:
        begins = (node.lineno, node.col_offset) <= (target.lineno, target.col_offset)
        ends = (node.end_lineno or 0, node.end_col_offset or 0) >= (
            target.end_lineno or 0,
            target.end_col_offset or 0,
        )
        return begins and ends

    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and contains(node)
        ),
        None,  # simple statements do not nest: the first one found is the one
    )
