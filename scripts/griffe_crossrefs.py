"""A griffe extension for the API reference (``extensions:`` in mkdocs.yml).

Docstrings are read in two places: ``help()`` and IDEs show them as plain text, and the API
reference renders them with mkdocstrings.  They name dynscalar's public API the plain way,
as ``DynamicInt`` or ``dynscalar.DynamicInt`` in double backticks, which reads cleanly in
``help()``; this extension turns each such name into a cross-reference for the site
(``[`DynamicInt`][dynscalar.DynamicInt]``), so the docstrings themselves carry no mkdocs
markup.  ``tests/test_docs.py`` checks both halves: no cross-reference markup in a
docstring, and the links in the built API page.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: A public name of the package in double backticks, with or without ``dynscalar.`` before it.
NAME = re.compile(r"``(?:dynscalar\.)?([A-Za-z_]\w*)``")


def crossrefs(text: str, public: set[str]) -> str:
    """``text`` with each ``Name`` of ``public`` in double backticks made a cross-reference.

    Examples:
        >>> crossrefs("See ``DynamicInt`` and ``int``.", {"DynamicInt"})
        'See [`DynamicInt`][dynscalar.DynamicInt] and ``int``.'
    """
    return NAME.sub(lambda m: f"[`{m[1]}`][dynscalar.{m[1]}]" if m[1] in public else m[0], text)


def _objects(obj: Any) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class CrossRefs(griffe.Extension):
    """Rewrites the docstrings of the ``dynscalar`` package once it is loaded."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        if pkg.name != "dynscalar":
            return
        public = {name for name in pkg.members if not name.startswith("_")}
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = crossrefs(obj.docstring.value, public)
