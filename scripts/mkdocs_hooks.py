"""mkdocs hooks for the dynscalar site (``hooks:`` in mkdocs.yml).

* The header shows the version next to the site name: ``dynscalar 0.1.0``, read from
  ``dynscalar/__init__.py`` (or the installed package's metadata).
* A page whose rendered text still contains a Sphinx role (``:class:`X```, ``:func:``...)
  is an error under ``mkdocs build --strict``: docstrings feed the API reference, and
  mkdocstrings writes cross-references as ``[X][dynscalar.X]``, not as Sphinx roles.
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
