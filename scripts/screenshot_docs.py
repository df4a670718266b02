"""Render the documentation site, open its pages in headless Chromium, screenshot and check them.

    python scripts/screenshot_docs.py             # build, check all pages, screenshot the main ones
    python scripts/screenshot_docs.py --out DIR   # where the PNGs go (default build/screenshots)
    python scripts/screenshot_docs.py --site DIR  # check an already built site instead

Each page is loaded at 1280x800 (a laptop screen) from a local HTTP server on 127.0.0.1 and
checked in the browser, after layout, for what a reader would see as broken:

* an image that did not load (missing file, wrong path);
* a figure whose smallest text is under 9 px as the page shows it (the render scripts record
  each figure's smallest text in its PNG; a figure of the site without that record counts);
* a table wider than its column (cut off at 1280 px: the reader has to scroll sideways);
* a table cell whose text breaks a line inside a word or name (``dynscalar.DynamicIn`` /
  ``t(0)``, between two letters or digits);
* a navigation entry cut short (the table of contents shows ``...`` for a long heading);
* a page wider than the window;
* an API signature that does not fit (long signatures must be formatted over several lines);
* literal markup in the text: Sphinx roles (``:class:``, ``:func:``, ...), unrendered Markdown
  (``**bold**``, ``[text](link)``, table pipes), mkdocstrings or snippet directives.

It prints one line per problem and exits 1 if there is any. Screenshots (full page, capped at
``--max-height`` pixels) are written for ``MAIN_PAGES``, or for every page with ``--all``.

Needs Chromium: Debian's ``chromium`` package (``apt-get install -y chromium``), or
``--chromium PATH``. ``tests/test_docs.py`` runs it (and skips, saying so, without Chromium).
The browser is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), so
nothing beyond the standard library is needed, and it makes no network connection: every host
other than 127.0.0.1 resolves to nothing.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "build" / "screenshots"
WIDTH, HEIGHT = 1280, 800

# Pages whose screenshots are saved by default (site paths); every page is checked.
MAIN_PAGES = [
    "",
    "tutorial/",
    "recipes/",
    "concepts/",
    "api/",
    "faq/",
    "troubleshooting/",
    "benchmarks/",
    "comparison/",
    "overhead/",
]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--force-device-scale-factor=1",
    # No network: only the local server answers.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
]

# Runs in the page after the load event; returns the problems a reader would see.
CHECK_JS = r"""
(async () => {
  const problems = [];
  const headings = [...document.querySelectorAll('h1[id], h2[id], h3[id], h4[id], h5[id]')];
  const where = (el) => {  // the last heading before el: the section a reader would look in
    let found = null;
    for (const h of headings) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) found = h;
    }
    return found ? '#' + found.id : 'the top';
  };
  const images = [...document.querySelectorAll('img')];
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener('load', done);
    img.addEventListener('error', done);
  })));
  const shown = [];
  for (const img of images) {
    if (!img.complete || img.naturalWidth === 0) {
      problems.push({kind: 'missing image', detail: img.getAttribute('src')});
    } else {
      shown.push({src: img.src, natural: img.naturalWidth,
                  width: img.getBoundingClientRect().width, where: where(img)});
    }
  }
  const content = document.querySelector('article.md-content__inner') || document.body;
  for (const table of content.querySelectorAll('table')) {
    const box = table.closest('.md-typeset__scrollwrap') || table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1 || table.scrollWidth > table.clientWidth + 1) {
      const head = [...table.querySelectorAll('th')].map((th) => th.textContent.trim());
      problems.push({kind: 'table wider than the page', detail:
        `${box.scrollWidth}px in ${box.clientWidth}px near ${where(table)}` +
        ` (columns: ${head.join(' | ')})`});
    }
  }
  for (const sig of content.querySelectorAll('.doc-signature')) {
    for (const pre of sig.querySelectorAll('pre, code')) {
      if (pre.scrollWidth > pre.clientWidth + 1) {
        problems.push({kind: 'signature wider than the page', detail:
          `${pre.textContent.trim().slice(0, 80)}...` +
          ` (${pre.scrollWidth}px in ${pre.clientWidth}px)`});
        break;
      }
    }
  }
  for (const pre of content.querySelectorAll('pre')) {
    if (pre.closest('.doc-signature')) continue;
    const code = pre.querySelector('code') || pre;
    if (code.scrollWidth > code.clientWidth + 1) {
      const line = code.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '');
      problems.push({kind: 'code block wider than the page', detail:
        `${code.scrollWidth}px in ${code.clientWidth}px near ${where(pre)}:` +
        ` "${line.trim().slice(0, 60)}..."`});
    }
  }
  // A table cell's line broken inside a word (`DynamicIn` / `t(0)`): between two letters or
  // digits, where no space, punctuation or <wbr> offers a break. Only text that wraps is
  // measured, one character at a time.
  const wordChar = /[A-Za-z0-9]/;
  for (const cell of content.querySelectorAll('td, th')) {
    const cells = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let last = null;  // {ch, top} of the previous character in the cell
    for (let node = cells.nextNode(); node; node = cells.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      const rects = range.getClientRects();
      if (rects.length === 0) continue;
      if (rects.length === 1) {
        const at = node.data.length - 1;
        last = {ch: node.data[at], top: rects[0].top, node, at};
        continue;
      }
      for (let i = 0; i < node.data.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const box = range.getClientRects()[0];
        if (!box) continue;
        const ch = node.data[i];
        if (last && box.top > last.top + 2 && wordChar.test(last.ch) && wordChar.test(ch)) {
          const text = cell.textContent;
          problems.push({kind: 'table cell broken inside a word', detail:
            `"${(last.node.data.slice(Math.max(0, last.at - 20), last.at + 1) + ' / ' +
                node.data.slice(i, i + 20)).replace(/\s+/g, ' ')}" near ${where(cell)}`});
        }
        last = {ch, top: box.top, node, at: i};
      }
    }
  }
  // Navigation entries cut short with an ellipsis (the table of contents of a page whose
  // headings are long questions).
  for (const entry of document.querySelectorAll('.md-nav .md-ellipsis, .md-nav__link')) {
    if (entry.scrollWidth > entry.clientWidth + 1 && entry.offsetParent !== null) {
      problems.push({kind: 'navigation entry cut short', detail:
        `"${entry.textContent.trim().slice(0, 80)}"`});
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push({kind: 'page wider than the window', detail:
      `${document.documentElement.scrollWidth}px in ${window.innerWidth}px`});
  }
  const patterns = [
    [/:(class|func|meth|attr|mod|exc|data|obj|ref|doc|py:[a-z]+):/, 'Sphinx role'],
    [/\*\*\S[^*]*\*\*/, 'unrendered **bold**'],
    [/\]\((https?:|\.{0,2}\/|[\w.-]+\.md)/, 'unrendered [link](...)'],
    [/\|\s*-{3,}/, 'unrendered table'],
    [/^\s*:::\s*[\w.]+/m, 'unrendered mkdocstrings directive'],
    [/--8<--/, 'unrendered snippet'],
    [/\{\{|\{%/, 'unrendered template'],
  ];
  const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => node.parentElement.closest('pre, code, script, style, .headerlink')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  // Text split around inline code (":class:" then <code>X</code>) is checked per block.
  const blocks = new Map();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const block = node.parentElement.closest('p, li, td, th, h1, h2, h3, h4, h5, h6, dd, dt, div');
    blocks.set(block, (blocks.get(block) || '') + node.textContent);
  }
  for (const [block, text] of blocks) {
    for (const [re, kind] of patterns) {
      const m = text.match(re);
      if (m) {
        const at = Math.max(0, m.index - 30);
        problems.push({kind: 'literal markup: ' + kind, detail:
          `"${text.slice(at, m.index + 50).replace(/\s+/g, ' ').trim()}" near ${where(block)}`});
      }
    }
  }
  if (!content.querySelector('h1')) {
    problems.push({kind: 'no title', detail: 'the page has no <h1>'});
  }
  return {
    problems,
    images: shown,
    height: Math.ceil(document.documentElement.scrollHeight),
    title: document.title,
  };
})()
"""


class Chromium:
    """A headless Chromium driven over the DevTools protocol on fds 3 (to it) and 4 (from it)."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="dynscalar-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child, before exec: the protocol wants fds 3 and 4
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self._proc = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Kept open in the child: subprocess closes other fds after preexec_fn ran.
            pass_fds=(3, 4),
            preexec_fn=wire,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._reader = os.fdopen(self._from_child, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close")
        with contextlib.suppress(OSError):
            os.close(self._to_child)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = self._reader.read(1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium exited (code {self._proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self._events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    def open_page(self) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        sid: str = session["sessionId"]
        self.send("Page.enable", session=sid)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            session=sid,
        )
        return sid

    def load(self, sid: str, url: str) -> dict[str, Any]:
        self._events = [e for e in self._events if e.get("sessionId") != sid]
        self.send("Page.navigate", {"url": url}, session=sid)
        self.wait_event("Page.loadEventFired", sid)
        result = self.send(
            "Runtime.evaluate",
            {"expression": CHECK_JS, "awaitPromise": True, "returnByValue": True},
            session=sid,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"check script failed on {url}: {result['exceptionDetails']}")
        return result["result"]["value"]  # type: ignore[no-any-return]

    def screenshot(self, sid: str, height: int, path: Path) -> None:
        shot = self.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
            },
            session=sid,
        )
        path.write_bytes(base64.b64decode(shot["data"]))


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium executable: ``--chromium``, ``$CHROMIUM``, or one on ``PATH``."""
    for name in (explicit, os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if name and (found := shutil.which(name)):
            return found
    return None


def build_site(site: Path) -> None:
    """``mkdocs build --strict`` into ``site``; raise with mkdocs' output when it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"mkdocs build --strict failed:\n{proc.stdout}{proc.stderr}")


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 (a free port) while the block runs; yield the base URL."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def site_pages(site: Path) -> list[str]:
    """Every HTML page of a built site, as site paths (``api/`` for ``api/index.html``)."""
    pages = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        if rel == "404.html" or rel.startswith(("assets/", "search/")):
            continue
        pages.append(rel[: -len("index.html")] if rel.endswith("index.html") else rel)
    return sorted(pages, key=lambda p: (p != "", p))


def shot_name(page: str) -> str:
    return (page.strip("/").replace("/", "_") or "index") + ".png"


#: The smallest text a figure may show at the page's column width (px at 1280 px).
MIN_TEXT_PX = 9.0
#: PNG text key the render scripts write: the height of the figure's smallest text, in px
#: of the image itself (benchmarks/render_strategies.py, benchmarks/render_overhead.py).
TEXT_PX_KEY = "dynscalar-min-text-px"


def png_text(path: Path) -> dict[str, str]:
    """The tEXt chunks of a PNG file."""
    data = path.read_bytes()
    found: dict[str, str] = {}
    at = 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        if kind == b"tEXt":
            key, _, value = data[at + 8 : at + 8 + length].partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return found


def image_text_problems(
    site: Path, base: str, images: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """Figures whose smallest text is under ``MIN_TEXT_PX`` as shown on the page.

    The size shown is the figure's own smallest text (written into the PNG by the script
    that drew it) scaled by the width the page gives the image; a figure of the site
    without that record is reported too, since nothing says it can be read.
    """
    problems = []
    for img in images:
        src = str(img["src"])
        if not src.startswith(base) or not src.lower().endswith(".png"):
            continue
        path = site / src[len(base) :].split("#")[0].split("?")[0]
        if not path.is_file():
            continue
        value = png_text(path).get(TEXT_PX_KEY)
        name = path.name
        if value is None:
            problems.append(
                {"kind": "image text size unknown", "detail": f"{name} near {img['where']}"}
            )
            continue
        px = float(value) * float(img["width"]) / max(float(img["natural"]), 1.0)
        if px < MIN_TEXT_PX:
            problems.append(
                {
                    "kind": "image text too small",
                    "detail": f"{name} near {img['where']}: smallest text {px:.1f} px as shown "
                    f"({img['width']:.0f} of {img['natural']} px wide), under {MIN_TEXT_PX:.0f} px",
                }
            )
    return problems


def check_site(
    site: Path,
    chromium: str,
    out: Path | None,
    screenshot_pages: list[str] | None,
    max_height: int = 6000,
) -> dict[str, list[dict[str, str]]]:
    """Check every page of ``site``; screenshot ``screenshot_pages`` (None: all) into ``out``."""
    pages = site_pages(site)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    report: dict[str, list[dict[str, str]]] = {}
    browser = Chromium(chromium)
    try:
        sid = browser.open_page()
        with serve(site) as base:
            for page in pages:
                result = browser.load(sid, base + page)
                report[page] = result["problems"] + image_text_problems(
                    site, base, result.get("images", [])
                )
                wanted = screenshot_pages is None or page in screenshot_pages
                if out is not None and wanted:
                    browser.screenshot(
                        sid, min(result["height"], max_height), out / shot_name(page)
                    )
    finally:
        browser.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="check this built site instead of building one")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="screenshot folder")
    parser.add_argument("--all", action="store_true", help="screenshot every page")
    parser.add_argument("--no-screenshots", action="store_true", help="only check")
    parser.add_argument("--max-height", type=int, default=6000, help="screenshot height cap (px)")
    parser.add_argument("--chromium", help="Chromium executable (default: chromium on PATH)")
    args = parser.parse_args(argv)

    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("Chromium not found: apt-get install -y chromium, or pass --chromium PATH")
        return 2
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dynscalar-site-") as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            build_site(site)
        built = time.perf_counter()
        out = None if args.no_screenshots else args.out
        report = check_site(site, chromium, out, None if args.all else MAIN_PAGES, args.max_height)
    problems = [(page, p) for page, found in report.items() for p in found]
    for page, p in problems:
        print(f"/{page}: {p['kind']}: {p['detail']}")
    print(
        f"{len(report)} pages checked at {WIDTH}x{HEIGHT}, {len(problems)} problem(s); "
        f"build {built - start:.1f} s, browser {time.perf_counter() - built:.1f} s"
        + ("" if out is None else f"; screenshots in {out}")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
