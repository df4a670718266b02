"""The documentation site: generated pages match their scripts, no literal markup, no broken pages.

* ``docs/benchmarks.md`` and ``docs/comparison.md`` are written by ``python -m
  benchmarks.render`` from the published benchmark JSON and never edited by hand:
  regenerating them must give the committed files (and the committed plots must exist, at
  the size the script draws).
* ``mkdocs build --strict`` passes, and fails on a literal Sphinx role (``:class:`X```) in a
  rendered page (``scripts/mkdocs_hooks.py``).
* The CLI section of the API reference names every ``demo`` option.
* Every Python block of the README, the home page, the tutorial, the recipes and the FAQ
  pastes, in order, into the plain ``python`` prompt of a fresh interpreter (blocks marked
  ``<!-- fragment -->`` are exempt) and prints exactly the output the page shows under it
  (``tests/_doc_blocks.py``). Those blocks are ruff's formatting without the blank lines
  inside indented bodies, which the prompt cannot take (the pages turn ruff's formatter off
  with ``<!-- fmt: off -->``; this test formats them instead).
* With Chromium installed, ``scripts/screenshot_docs.py`` opens every page at 1280x800 and
  finds no missing image, figure text under 9 px as shown, overflowing table or code block,
  or literal markup (~25 s).
* The Overhead and Benchmarks pages open with a summary in plain words; goals and targets
  are in benchmarks/README.md; the figures are drawn at the column width.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import struct
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from tests._doc_blocks import blocks, prompt_form, run_page
from tests.helpers import run_interpreter

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "benchmarks" / "published" / "full-inductor-200.json"

pytest.importorskip("mkdocs", reason="the docs checks need the 'docs' extra")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return run_interpreter(
        "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site), cwd=config.parent
    )


def test_benchmark_pages_are_what_render_docs_writes(tmp_path: Path) -> None:
    from benchmarks import render_strategies as render

    (data, source), *sections = render.load_runs(list(render.PUBLISHED))
    regenerate = "python -m benchmarks.render"
    assert (ROOT / "docs/benchmarks.md").read_text() == render.render_benchmarks(
        data, source, tuple(sections)
    ), f"docs/benchmarks.md differs from its script's output: run {regenerate}"
    assert (ROOT / "docs/comparison.md").read_text() == render.render_comparison(
        data, source, tuple(sections)
    ), f"docs/comparison.md differs from its script's output: run {regenerate}"
    pytest.importorskip("matplotlib")
    plots = render.write_plots(data, tmp_path)
    for extra, _ in sections:
        plots += render.write_section_plots(extra, tmp_path)
    assert {p.name for p in plots} >= {"total_time.png", "cumulative_time.png", "schedule.png"}
    for png in plots:
        committed = ROOT / "docs" / "img" / png.name
        assert png_size(committed) == png_size(png), f"{committed} is stale: run {regenerate}"


def test_published_runs_are_what_the_pages_cite() -> None:
    from benchmarks import render_strategies as render

    assert [p.name for p in render.PUBLISHED] == [
        PUBLISHED.name,
        "schedule-inductor-200.json",
        "arguments-aot_eager.json",
    ]
    schedule = json.loads(render.PUBLISHED[1].read_text())
    assert list(schedule["workloads"]) == ["schedule"]
    rows = {r["strategy"]: r for r in schedule["results"]}
    assert all(r["equal_to_eager"] and "error" not in r for r in rows.values())
    for name in ("ds_proxy", "ds_registry", "ds_decorator"):
        assert rows[name]["compiles"] == schedule["workloads"]["schedule"]["control_paths"]
    text = (ROOT / "docs/benchmarks.md").read_text()
    assert "## Dropout and label-smoothing schedule (training)" in text
    assert "Marking function arguments" not in text  # the arguments run is the comparison's
    assert "![Dropout and label-smoothing schedule" in text and "(img/schedule.png)" in text


def test_published_arguments_run_is_what_the_comparison_shows() -> None:
    """Function arguments: every dynscalar mark compiles once per control path, exactly
    equal to eager; the page shows the run's counts."""
    from benchmarks import render_strategies as render

    run = json.loads(render.PUBLISHED[2].read_text())
    assert run["kind"] == "arguments" and run["config"]["values"] >= 8
    rows = {(r["case"], r["strategy"]): r for r in run["results"]}
    for case, info in run["cases"].items():
        for strategy in ("ds_value", "ds_args", "ds_decorator"):
            row = rows[(case, strategy)]
            assert row["equal_to_eager"] and row["compiles"] == info["control_paths"], row
        assert rows[(case, "stock")]["compiles"] > info["control_paths"], case
    text = (ROOT / "docs/comparison.md").read_text()
    section = text[text.index("## Marking function arguments") :]
    assert f"`{render.source_name(render.PUBLISHED[2])}`" in section
    assert "| dynscalar: mark_<wbr>dynamic_<wbr>args | 2.13.0 | 1 | 2 | 1 | yes |" in section


#: Pages written by scripts from measured JSON (``python -m benchmarks.render``,
#: ``scripts/render_writeback_table.py``, ``python -m tests.ops_matrix``).
GENERATED_PAGES = [
    "benchmarks.md",
    "comparison.md",
    "overhead.md",
    "nn-coverage.md",
    "op-coverage.md",
    "fuzzing.md",
    "writeback.md",
]
#: A maintainer's machine: a virtual environment, an installed package's folder, a home or
#: work folder, or any absolute path to a Python file.
MACHINE_PATH = re.compile(
    r"site-packages|\.venv\b|(?<![\w.])/(?:home|work|Users|root|tmp)/|(?<![\w.])/[\w.-]+/\S*\.py\b"
)
#: How a run went, rather than what it measured.
MEASUREMENT_LOG = re.compile(r"Re-measured|load average|loadavg|1-minute load", re.I)


@pytest.mark.parametrize("page", GENERATED_PAGES)
def test_generated_pages_hold_no_machine_paths_or_measurement_logs(page: str) -> None:
    """A warning quoted on a page names files relative to their package (``torch/nn/...``,
    ``tests/nn_coverage/...``); how a run went (re-measured rows, load averages) stays in the
    published JSON."""
    text = (ROOT / "docs" / page).read_text()
    assert not MACHINE_PATH.findall(text), (page, MACHINE_PATH.findall(text)[:3])
    assert not MEASUREMENT_LOG.findall(text), (page, MEASUREMENT_LOG.findall(text)[:3])


#: The pages a user reads (the changelog page includes CHANGELOG.md: history lives there).
USER_PAGES = [
    "README.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if p.name != "changelog.md"),
]
#: A commit as a page would quote one: 7 to 40 hex digits with a digit and a letter, not
#: part of a name, a path, a colour or a URL.
COMMIT = re.compile(r"(?<![\w/#.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
#: A before/now comparison: rows labelled "(now)" or "(before)", "measured now", a table
#: with "before" and "now" (or "after") columns.
BEFORE_NOW = re.compile(
    r"\((?:now|before)\)|\bmeasured now\b|^\|.*\|\s*before\s*\|\s*(?:now|after)\s*\|",
    re.I | re.M,
)
#: A dated entry ("2.15.0, 2026-12-04: the doctor's test expected ...") or a date followed,
#: in its paragraph, by a failure or a fix; a date in a table's cell is a result's.
DATED_FAILURE = re.compile(
    r"\b20\d\d-\d\d-\d\d\b(?::|(?:(?!\n\n)[^|]){0,300}?\b(?:fail|fix))", re.I
)


def test_the_page_scan_finds_history() -> None:
    """The scan below can fail: each pattern finds what the pages once held."""
    assert COMMIT.findall("at 439d4b4, in `bash .ci/run`; dynscalar at `ac3e7dd`") == [
        "439d4b4",
        "ac3e7dd",
    ]
    assert not COMMIT.search("#c0392b, bundle.a5f9d56c.min.js, 1234567, pytorch#194976")
    assert BEFORE_NOW.search("| dynamic float, AOTAutograd cache bypassed (before) | 10.08 |")
    assert BEFORE_NOW.search("| | before | now | target |")
    assert BEFORE_NOW.search("On inductor, measured now: 3 compiles")
    assert DATED_FAILURE.search("- 2.15.0, 2026-12-04: the doctor's test expected")
    assert DATED_FAILURE.search("run on 2026-12-02, where the\nsafety net's test failed")
    assert not DATED_FAILURE.search("| 2.13.0 | CPU | 1455 passed | 2026-12-04 |")


@pytest.mark.parametrize("page", USER_PAGES)
def test_pages_hold_no_commits_dated_failures_or_before_now_rows(page: str) -> None:
    """What a page says is true of the code beside it; how it got there (commits, dated
    failures, before and now) is the changelog's."""
    text = (ROOT / page).read_text()
    for pattern in (COMMIT, BEFORE_NOW, DATED_FAILURE):
        found = [m.group(0) for m in pattern.finditer(text)]
        assert not found, (page, found[:3])


def test_nn_coverage_renders_warnings_relative_to_their_package() -> None:
    """The published JSON keeps the paths its warnings were measured with; the page does not."""
    from tests.nn_coverage import render_docs

    data = json.loads(render_docs.JSON_PATH.read_text())
    raw = json.dumps(data)
    assert "site-packages/torch/nn/functional.py" in raw and data["partial_runs"]
    page = render_docs.render(data)
    assert "at torch/nn/functional.py:" in page and "site-packages" not in page
    assert "Re-measured" not in page


def test_benchmark_page_opens_with_a_summary_in_plain_words() -> None:
    text = (ROOT / "docs/benchmarks.md").read_text()
    assert text.index("## Summary") < text.index("| strategy |")
    for internal in ("ds_proxy", "ds_registry", "ds_decorator", "oracle |", "unspec_int |"):
        assert internal not in text, internal


def test_site_builds_strict_without_literal_sphinx_roles(tmp_path: Path) -> None:
    hooks = load(ROOT / "scripts" / "mkdocs_hooks.py")
    site = tmp_path / "site"
    result = mkdocs_build(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, result.stdout + result.stderr
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10
    found = {p.relative_to(site).as_posix(): hooks.literal_roles(p.read_text()) for p in pages}
    assert not {k: v for k, v in found.items() if v}
    api = (site / "api" / "index.html").read_text()
    assert "Bases:" not in api and "BaseObjectProxy" not in api  # wrapt is an implementation detail
    # docstrings name the API in plain backticks; scripts/griffe_crossrefs.py links them
    assert 'href="#dynscalar.DynamicScalar"><code>DynamicScalar</code></a> (a wrapt' in api
    for internal in ("check_int", "for_float", "without_range", "has_range"):
        assert f'id="dynscalar.DynamicSpec.{internal}"' not in api, internal
    import dynscalar

    header = api[api.index('<header class="md-header') : api.index("</header>")]
    assert f"dynscalar {dynscalar.__version__}" in header  # the version, in the header
    assert "https://github.com/dynscalar/dynscalar" in header  # the repository link


def test_docstrings_name_the_api_without_mkdocs_markup() -> None:
    """``help()`` shows docstrings as written: the API's names are ``DynamicInt`` there, and
    the site's griffe extension makes them links (checked in the strict build above)."""
    crossrefs = load(ROOT / "scripts" / "griffe_crossrefs.py").crossrefs
    assert crossrefs("a ``dynscalar.explain`` or ``explain`` call", {"explain"}) == (
        "a [`explain`][dynscalar.explain] or [`explain`][dynscalar.explain] call"
    )
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "dynscalar").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\]\[dynscalar\.|\]\[\]", line)
    ]
    assert not found, found


def test_a_literal_sphinx_role_fails_the_strict_build(tmp_path: Path) -> None:
    hooks = load(ROOT / "scripts" / "mkdocs_hooks.py")
    assert hooks.literal_roles("<p>Raised instead of :class:<code>X</code>.</p>")
    assert not hooks.literal_roles("<p>fine</p><pre><code>:class:`X`</code></pre>")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Page\n\nRaised instead of :class:`Warning`.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\nhooks:\n  - {ROOT / 'scripts' / 'mkdocs_hooks.py'}\n")
    result = mkdocs_build(config, tmp_path / "site")
    assert result.returncode != 0
    assert "literal Sphinx role in index.md" in result.stderr


def test_cli_reference_names_every_demo_option() -> None:
    from dynscalar.tools.demo import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = [o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")]
    assert {"--workload", "--steps", "--backend", "--runs", "--plot"} <= set(options)
    api = (ROOT / "docs" / "api.md").read_text()
    cli = api[api.index("## Command line") :]
    for option in options:
        assert f"`{option}" in cli, f"docs/api.md's CLI section does not describe {option}"


@pytest.mark.skipif(
    not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="needs Chromium (apt-get install -y chromium)",
)
class TestInBrowser:
    def test_every_page_renders_without_problems(self, tmp_path: Path) -> None:
        result = run_interpreter("scripts/screenshot_docs.py", "--out", str(tmp_path))
        assert result.returncode == 0, result.stdout + result.stderr
        assert (tmp_path / "index.png").is_file() and (tmp_path / "api.png").is_file()

    def test_the_checker_finds_broken_pages(self, tmp_path: Path) -> None:
        shots = load(ROOT / "scripts" / "screenshot_docs.py")
        site = tmp_path / "site"
        (site / "broken").mkdir(parents=True)
        wide = "".join(f"<td>{'word' * 8}</td>" for _ in range(12))
        (site / "broken" / "index.html").write_text(
            "<html><body><article class='md-content__inner'><h1 id='t'>T</h1>"
            "<img src='missing.png'>"
            f"<div class='md-typeset__scrollwrap' style='overflow:auto;width:600px'>"
            f"<table><tr>{wide}</tr></table></div>"
            "<p>Raised instead of :class:<code>X</code>.</p>"
            "<p>see **bold** and [a link](page.md)</p>"
            "<img src='small.png' style='width:300px'><img src='unknown.png'>"
            # the theme's `word-break: break-word` on code in a narrow column
            "<table style='width:200px'><tr><td>the value lives</td><td style='width:90px'>"
            "<code style='word-break:break-word'>dynscalar.DynamicInt(0)</code></td></tr>"
            "</table>"
            "</article>"
            "<nav class='md-nav'><a class='md-nav__link' href='#t'>"
            "<span class='md-ellipsis' style='display:block;width:120px;overflow:hidden;"
            "text-overflow:ellipsis'>Why not allow_unspec_int_on_nn_module?</span></a></nav>"
            "</body></html>"
        )
        from PIL import Image, PngImagePlugin

        info = PngImagePlugin.PngInfo()
        info.add_text(shots.TEXT_PX_KEY, "12.0")  # 12 px at 1000 px wide, shown at 300: 3.6
        Image.new("RGB", (1000, 200), "white").save(site / "broken" / "small.png", pnginfo=info)
        Image.new("RGB", (100, 50), "white").save(site / "broken" / "unknown.png")
        report = shots.check_site(site, shots.find_chromium(), None, [])
        kinds = {p["kind"] for p in report["broken/"]}
        assert "missing image" in kinds
        assert "table wider than the page" in kinds
        assert "literal markup: Sphinx role" in kinds
        assert "literal markup: unrendered **bold**" in kinds
        assert "literal markup: unrendered [link](...)" in kinds
        assert "image text too small" in kinds and "image text size unknown" in kinds
        broken = [p["detail"] for p in report["broken/"] if p["kind"].endswith("inside a word")]
        assert broken and all("ynamicInt(0)" in d for d in broken), broken
        assert "navigation entry cut short" in kinds

    def test_the_site_breaks_table_code_only_between_the_parts_of_a_name(self) -> None:
        """The hook that makes the site's table code breakable: a <wbr> after `.`, `_`,
        `/`, brackets and commas, never inside a word or a short number."""
        hooks = load(ROOT / "scripts" / "mkdocs_hooks.py")
        page = (
            "<p><code>a.b_c</code></p><table><tr><td><code>dynscalar.DynamicInt(0)</code> "
            "<code>kwargs[&#39;num_items_in_batch&#39;]</code></td></tr></table>"
        )
        assert hooks.breakable_table_code(page) == (
            "<p><code>a.b_c</code></p><table><tr><td><code>dynscalar.<wbr>DynamicInt(<wbr>0)"
            "</code> <code>kwargs[&#39;num_<wbr>items_<wbr>in_<wbr>batch&#39;]</code>"
            "</td></tr></table>"
        )
        css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text()
        assert (
            "word-break: normal" in css
            and "stylesheets/extra.css" in (ROOT / "mkdocs.yml").read_text()
        )


PASTED_PAGES = [
    pytest.param("README.md", marks=pytest.mark.inductor, id="README"),  # the default backend
    pytest.param("docs/tutorial.md", id="tutorial"),
    pytest.param("docs/recipes.md", marks=pytest.mark.broad, id="recipes"),
    pytest.param("docs/faq.md", id="faq"),
]
#: Pages whose blocks compile on aot_eager (quick on a CPU) and whose counts and comparisons
#: with eager are claims for inductor too: on inductor each block prints what the page shows
#: under it, or what its `<!-- output: inductor -->` block shows.
ON_INDUCTOR = ["docs/tutorial.md", "docs/recipes.md"]


@pytest.mark.parametrize("page", PASTED_PAGES)
def test_python_blocks_run_pasted_in_order_and_print_what_the_page_shows(page: str) -> None:
    path = ROOT / page
    text = path.read_text()
    assert "--8<--" not in text, f"{page}: an include shows as a marker on GitHub"
    runnable, outputs, _ = run_page(path, ROOT, prompt=True)
    for block, out in zip(runnable, outputs, strict=True):
        if block.expected is not None:
            assert out == block.expected, f"{page}:{block.line} prints {out!r}"
        else:
            assert out == "", f"{page}:{block.line} prints {out!r}, which the page does not show"
    if page == "docs/tutorial.md":
        shown = [b for b in runnable if b.expected is not None]
        assert len(shown) == 3  # compiles, equal to eager, stock torch.compile


def test_the_home_page_opens_with_the_readmes_example() -> None:
    """One example for both: the home page's only Python block is the README's first, with
    the same output (the README's run checks it, on inductor)."""
    readme = [b for b in blocks((ROOT / "README.md").read_text()) if b.lang == "python"]
    home = [b for b in blocks((ROOT / "docs/index.md").read_text()) if b.lang == "python"]
    assert len(home) == 1 and home[0].text == readme[0].text
    assert home[0].expected == readme[0].expected is not None
    quick = [b.text for b in blocks((ROOT / "README.md").read_text()) if b.lang == "bash"]
    assert quick[0] in [b.text for b in blocks((ROOT / "docs/index.md").read_text())]


@pytest.mark.broad
@pytest.mark.inductor
@pytest.mark.parametrize("page", ON_INDUCTOR)
def test_pages_print_what_they_show_on_inductor(page: str) -> None:
    """The pages' compile counts and comparisons with eager, measured on inductor: a page
    claims its aot_eager output for inductor unless it shows inductor's own."""
    path = ROOT / page
    runnable, outputs, _ = run_page(path, ROOT, timeout=3000, prompt=True, backend="inductor")
    for block, out in zip(runnable, outputs, strict=True):
        want = block.on_backend.get("inductor", block.expected)
        if want is not None:
            assert out == want, f"{page}:{block.line} prints {out!r} on inductor"


def test_backend_outputs_are_read_from_the_page(tmp_path: Path) -> None:
    """`<!-- output: inductor -->` attaches a text block to the last Python block before it;
    a run with `backend=` replaces the page's "aot_eager"."""
    page = tmp_path / "page.md"
    page.write_text(
        '```python\nb = "aot_eager"\nprint(b)\n```\n\n```text\naot_eager\n```\n\n'
        "On inductor:\n\n<!-- output: inductor -->\n```text\ninductor\n```\n"
    )
    (block, *_) = blocks(page.read_text())
    assert block.expected == "aot_eager\n" and block.on_backend == {"inductor": "inductor\n"}
    _, outputs, _ = run_page(page, tmp_path, backend="inductor")
    assert outputs == ["inductor\n"]


#: Code on the site's pages fits its content column at 1280 px (688 px: 80 characters of
#: code; scripts/screenshot_docs.py measures it in Chromium). The README is read on GitHub
#: and PyPI, and is formatted at the project's line length.
SITE_CODE_WIDTH = 80


@pytest.mark.parametrize("page", [p.values[0] for p in PASTED_PAGES] + ["docs/index.md"])
def test_pasted_blocks_are_ruff_formatted_except_for_the_prompt(page: str) -> None:
    """What ruff's formatter (the docs extra pins it) makes of each block, less the blank
    lines inside indented bodies, is the block: a page keeps one style although its
    formatting is turned off. On the site's pages, at the column's width."""
    pytest.importorskip("ruff")
    text = (ROOT / page).read_text()
    python = [b for b in blocks(text) if b.lang == "python" and not b.fragment]
    if python:
        assert "<!-- fmt: off -->" in text.split("```python")[0], page
    width = ["--line-length", str(SITE_CODE_WIDTH)] if page.startswith("docs/") else []
    for block in python:
        result = run_interpreter(
            "-m", "ruff", "format", *width, "--stdin-filename", "block.py", "-", input=block.text
        )
        assert result.returncode == 0, result.stderr
        assert prompt_form(result.stdout) == block.text, f"{page}:{block.line}"
    if page.startswith("docs/"):
        for block in blocks(text):
            lines = block.text.splitlines()
            wide = [
                i for i, line in enumerate(lines, block.line + 1) if len(line) > SITE_CODE_WIDTH
            ]
            assert not wide, f"{page}: lines {wide} are wider than the site's code column"


def test_pages_without_snippet_includes_keep_their_code_in_step_with_the_examples() -> None:
    """The tutorial's model, loop and marking are examples/training_loop.py's sections (in
    their prompt form: no blank lines inside bodies), and the FAQ's table is what
    examples/stock_vs_marked.py prints (tests/test_examples.py)."""
    example = (ROOT / "examples/training_loop.py").read_text()
    tutorial = [b.text for b in blocks((ROOT / "docs/tutorial.md").read_text())]
    for name in ("model", "loop", "mark"):
        begin = f"# --8<-- [start:{name}]\n"
        section = example[
            example.index(begin) + len(begin) : example.index(f"# --8<-- [end:{name}]")
        ]
        section = prompt_form(textwrap.dedent(section).strip())
        section = section.replace("args.backend", '"aot_eager"')  # the script's default
        assert any(section in block for block in tutorial), name
    faq = (ROOT / "docs/faq.md").read_text()
    recorded = (ROOT / "examples/output/stock_vs_marked.txt").read_text()
    assert any(b.text == recorded for b in blocks(faq) if b.lang == "text")


def test_the_block_runner_skips_fragments_and_names_a_failing_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 2\nprint(x * 3)\n```\n\n```text\n6\n```\n\n"
        "<!-- fragment -->\n```python\nsignature(value, *, spec) -> None\n```\n\n"
        "Prose.\n\n```python\nprint(x + 1)\n```\n"
    )
    runnable, outputs, _ = run_page(page, tmp_path)
    assert [b.line for b in runnable] == [1, 17]  # the opening fences
    assert runnable[0].expected == "6\n" and runnable[1].expected is None
    assert outputs == ["6\n", "3\n"]
    page.write_text("```python\nx = 1\n```\n\n```python\nundefined_name\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:5"):
        run_page(page, tmp_path)


def test_the_prompt_runner_reads_blocks_as_the_python_prompt_does(tmp_path: Path) -> None:
    """A blank line ends a class at the prompt, a statement right after an indented block
    needs one, and a bare expression prints its value; prompt_form drops the blank lines
    the prompt cannot take and keeps the others."""
    page = tmp_path / "page.md"
    good = "class A:\n    def f(self):\n        return 2\n    def g(self):\n        return 3\n"
    page.write_text(f"```python\n{good}\n\nA().f()\nx = A().g()\nprint(x)\n```\n")
    _, outputs, _ = run_page(page, tmp_path, prompt=True)
    assert outputs == ["2\n3\n"]  # the value of `A().f()`, then print's
    spaced = good.replace("\n    def g", "\n\n    def g")
    assert prompt_form(spaced) == good and prompt_form("a = 1\n\n\nb = 2\n") == "a = 1\n\n\nb = 2\n"
    page.write_text(f"```python\n{spaced}```\n")
    with pytest.raises(AssertionError, match=r"page.md:1: does not paste at the python prompt"):
        run_page(page, tmp_path, prompt=True)
    page.write_text("```python\nfor i in range(2):\n    y = i\nprint(y)\n```\n")
    with pytest.raises(AssertionError, match="does not paste at the python prompt: 'print"):
        run_page(page, tmp_path, prompt=True)
    run_page(page, tmp_path)  # as one exec, the same block runs


def test_troubleshooting_quotes_the_messages_a_proxy_meets_in_c_code_and_its_fixes_work() -> None:
    """Each heading is the text the failing call really raises on the installed torch (what a
    user pastes into a search box); the fix the section gives works and keeps the value."""
    import json as json_module

    import torch

    from dynscalar import DynamicFloat, DynamicInt

    step, t = DynamicInt(3), torch.ones(2, 3)
    headings = [
        line[4:].strip("`")
        for line in (ROOT / "docs/troubleshooting.md").read_text().splitlines()
        if line.startswith("### `")
    ]
    failing = {
        "RuntimeError: Could not infer dtype of DynamicInt": lambda: torch.tensor([step, 2]),
        "TypeError: zeros() takes 1 positional argument but 2 were given": lambda: torch.zeros(
            step, 2
        ),
        "RuntimeError: PyList_Check(arg) INTERNAL ASSERT FAILED": lambda: t.sum(dim=step),
        "TypeError: Object of type int is not JSON serializable": lambda: json_module.dumps(step),
    }
    for heading, call in failing.items():
        assert heading in headings, heading
        kind, message = heading.split(": ", 1)
        with pytest.raises(Exception) as raised:  # the type is checked below
            call()
        assert type(raised.value).__name__ == kind and message in str(raised.value), heading
    assert torch.equal(torch.full((), step), torch.tensor(3))
    assert torch.equal(torch.tensor([int(step), 2]), torch.tensor([3, 2]))
    assert torch.zeros((step, 2)).shape == (3, 2) and torch.zeros(2, step).shape == (2, 3)
    assert torch.equal(torch.ones(6).view(step, 2), torch.ones(3, 2))
    assert torch.equal(t.sum(dim=(DynamicInt(1),)), t.sum(dim=1))
    data = {"step": step, "lr": DynamicFloat(0.5)}
    assert json_module.dumps(data, default=lambda o: o.value) == '{"step": 3, "lr": 0.5}'


def test_specialization_table_is_the_probe_on_this_torch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/concepts.md shows what `python -m dynscalar specializations` measures; on the
    release it was recorded with, the probe must agree (run scripts/render_specializations.py
    and update RECORDED after a torch upgrade changes it)."""
    import torch

    from dynscalar.__main__ import main
    from dynscalar._constructs import RAISES, RECORDED, SPECIALIZES, SYMBOLIC
    from dynscalar.tools.specializations import render_table

    assert main(["specializations"]) == 0
    printed = capsys.readouterr().out
    render = load(ROOT / "scripts" / "render_specializations.py")
    page = (ROOT / "docs/concepts.md").read_text()
    recorded = RECORDED["results"]
    assert render.replace_block(page, render.render_block(recorded, RECORDED["torch"])) == page
    if torch.__version__.split("+")[0] == RECORDED["torch"]:
        assert render_table(recorded) in printed, "the probe differs from RECORDED"
    # what the README, the tutorial and Troubleshooting say about this release
    for kind in ("DynamicInt", "DynamicFloat"):
        for key in ("int()", "min/max", "math.sqrt", "math.pow", "as a size"):
            assert recorded[key][kind] == SYMBOLIC, (key, kind)
        for key in ("str()", "math.log"):
            assert recorded[key][kind] == SPECIALIZES, (key, kind)
    for key in ("range()", "list index", "dict key"):
        assert recorded[key]["DynamicInt"] == SPECIALIZES, key
        assert recorded[key]["DynamicFloat"] == RAISES, key
    # the code the advice suggests instead stays symbolic and gives the same numbers
    checked = advice_holds()
    assert all(checked.values()), checked


def advice_holds(values: tuple[int, ...] = (3, 4, 5, 6)) -> dict[str, bool]:
    """For each construct with a suggested replacement: whether that replacement compiles
    once over ``values`` and gives the construct's results (what the advice promises)."""
    import torch

    from dynscalar import DynamicInt
    from dynscalar._constructs import CONSTRUCTS
    from dynscalar.tools.specializations import PROBES, GraphCounter

    assert [c.key for c in CONSTRUCTS] == list(PROBES), "a construct without a probe"
    checked: dict[str, bool] = {}
    for key, probe in PROBES.items():
        if probe.instead is None:
            continue
        counter = GraphCounter()
        torch.compiler.reset()
        compiled = torch.compile(probe.instead, backend=counter)
        x = torch.ones(2, dtype=torch.float64)
        same = all(torch.allclose(compiled(x, DynamicInt(v)), probe.run(x, v)) for v in values)
        checked[key] = same and len(counter.graphs) == 1
    torch.compiler.reset()
    return checked


def test_overhead_and_benchmark_pages_are_written_for_users() -> None:
    """A summary in plain words before any table; goals, targets and issue numbers live in
    benchmarks/README.md (written by the same scripts), not on the pages."""
    import re

    from benchmarks import render_overhead as overhead
    from benchmarks import render_strategies as strategies

    data = json.loads((ROOT / "benchmarks/published/overhead.json").read_text())
    readme = (ROOT / "benchmarks/README.md").read_text()
    source = "benchmarks/published/overhead.json"
    assert overhead.goals_block(data, source) in readme, "run python -m benchmarks.render"
    runs = strategies.load_runs(list(strategies.PUBLISHED))
    assert strategies.targets_block(runs) in readme, "run python -m benchmarks.render"
    for page in ("overhead.md", "benchmarks.md"):
        text = (ROOT / "docs" / page).read_text()
        summary = text[text.index("## Summary") : text.index("\n## ", text.index("## Summary"))]
        assert text.index("## Summary") < text.index("| "), page
        assert "µs" in summary or "s " in summary, page
        assert "## Goals" not in text and "## Targets" not in text, page
        assert " MISS " not in text and "0 of 3" not in text, page
    for path in (ROOT / "docs").glob("*.md"):
        found = re.findall(r"\bissue \d+|\(issue \d+\)", path.read_text())
        assert not found, f"{path.name}: {found}"
    text = (ROOT / "docs/overhead.md").read_text()
    assert "(1.75-1.75)" not in text  # one run: a value, not a range
    assert "so the figure shows it as points, not a curve" in text


def test_figures_are_legible_at_the_column_width() -> None:
    """Every figure is drawn at most as wide as the docs' content column (680 px at 1280),
    so it is not shrunk, and records its smallest text, at least 9 px
    (scripts/screenshot_docs.py checks the same on the rendered pages)."""
    shots = load(ROOT / "scripts" / "screenshot_docs.py")
    pngs = sorted((ROOT / "docs" / "img").glob("*.png"))
    assert len(pngs) >= 6
    for png in pngs:
        width, _ = png_size(png)
        smallest = float(shots.png_text(png)[shots.TEXT_PX_KEY])
        assert width <= 690 and smallest >= shots.MIN_TEXT_PX, (png.name, width, smallest)
