"""mkdocs hooks for the dynscalar site (``hooks:`` in mkdocs.yml).

* The header shows the version next to the site name: ``dynscalar 0.1.0``, read from
  ``dynscalar/__init__.py`` (or the installed package's metadata).
* A page whose rendered text still contains a Sphinx role (``:class:`X```, ``:func:``...)
  is an error under ``mkdocs build --strict``: docstrings feed the API reference, and
  mkdocstrings writes cross-references as ``[X][dynscalar.X]``, not as Sphinx roles.
* Code in table cells and the entries of a page's table of contents may break a line only
  between the parts of a name: a ``<wbr>`` goes after each ``.``, ``_``, ``/`` (before a
  letter or digit; in a number only after the point of a long fraction) and after ``(``,
  ``[``, ``,`` and ``=``, and
  ``docs/stylesheets/extra.css`` stops the theme from breaking code anywhere else
  (``dynscalar.DynamicIn`` / ``t(0)``).  ``scripts/screenshot_docs.py`` checks the result at
  1280 px.
"""

from __future__ import annotations

import html
import importlib.metadata
import logging
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("mkdocs.plugins.dynscalar")

# A role left in the text, e.g. ":class:" before <code>X</code>. Code blocks are removed and
# inline code becomes a placeholder first, so a role quoted inside code is not reported.
SPHINX_ROLE = re.compile(
    r"(?<![\w:]):(?:py:)?(class|func|meth|attr|mod|exc|data|obj|ref|doc):(?=[`<~\w])"
)
PRE = re.compile(r"<pre\b.*?</pre>", re.S)
CODE = re.compile(r"<code\b.*?</code>", re.S)
TAG = re.compile(r"<[^>]+>")


def version() -> str:
    text = (ROOT / "dynscalar" / "__init__.py").read_text()
    found = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if found:
        return found.group(1)
    try:
        return importlib.metadata.version("dynscalar")
    except importlib.metadata.PackageNotFoundError:
        return ""


def on_config(config: Any) -> Any:
    v = version()
    if v and not config["site_name"].endswith(v):
        config["site_name"] = f"{config['site_name']} {v}"
    return config


def literal_roles(page_html: str) -> list[str]:
    """Sphinx roles in the visible text of a rendered page (code blocks and spans excluded)."""
    text = html.unescape(TAG.sub("", CODE.sub("`code`", PRE.sub(" ", page_html))))
    return [text[max(0, m.start() - 40) : m.end() + 40].strip() for m in SPHINX_ROLE.finditer(text)]


def on_post_page(output: str, page: Any, config: Any) -> str:
    for found in literal_roles(output):
        where = page.file.src_uri
        log.warning("literal Sphinx role in %s: ...%s...", where, " ".join(found.split()))
    return output


#: Where a name may break: after `.`, `_` or `/` before a letter or digit (a `.` only before a
#: letter or `_`, or in a number before 8 or more digits: `0.` / `42857142857142855`), and
#: after an opening bracket, a comma or `=`.
BREAK_AFTER = re.compile(
    r"(?<=[_/])(?=[A-Za-z0-9])|(?<=\.)(?=[A-Za-z_]|\d{8})|(?<=[(\[,=])(?=[^\s)\]])"
)
#: Markup and character references, left alone: breaks go into the text between them.
MARKUP = re.compile(r"(<[^>]*>|&#?\w+;)")
CELL = re.compile(r"<(td|th)\b[^>]*>.*?</\1>", re.S)
CODE_SPAN = re.compile(r"(<code\b[^>]*>)(.*?)(</code>)", re.S)


def breakable(fragment: str) -> str:
    """``fragment`` (HTML) with a ``<wbr>`` at each place a name may break.

    Examples:
        >>> breakable("dynscalar.mark_dynamic_attr(model, &quot;p&quot;)")
        'dynscalar.<wbr>mark_<wbr>dynamic_<wbr>attr(<wbr>model, &quot;p&quot;)'
        >>> breakable("DynamicFloat(1.75); DynamicFloat(0.42857142857142855)")
        'DynamicFloat(<wbr>1.75); DynamicFloat(<wbr>0.<wbr>42857142857142855)'
    """
    parts = MARKUP.split(fragment)
    return "".join(
        part if i % 2 else BREAK_AFTER.sub("<wbr>", part) for i, part in enumerate(parts)
    )


def breakable_table_code(page_html: str) -> str:
    """Every inline code span inside a table cell made :func:`breakable`."""

    def cell(match: re.Match[str]) -> str:
        return CODE_SPAN.sub(lambda m: m[1] + breakable(m[2]) + m[3], match[0])

    return CELL.sub(cell, page_html)


#: In the narrow table of contents a long class name may also break between its words
#: (`DynamicFloat` / `SpecializedError`), where a reader sees the parts of the name.
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def _breakable_toc(items: Any) -> None:
    for item in items:
        parts = MARKUP.split(breakable(item.title))
        item.title = "".join(
            part if i % 2 else CAMEL.sub("<wbr>", part) for i, part in enumerate(parts)
        )
        _breakable_toc(item.children)


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> str:
    _breakable_toc(page.toc)
    return breakable_table_code(html_text)
