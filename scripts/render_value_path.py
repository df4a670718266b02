"""Write the path of one marked value through dynscalar, traced from a real compile.

    python scripts/render_value_path.py          # rewrite the list in docs/how-it-works.md
    python scripts/render_value_path.py --check  # exit 1 if the page differs from a trace

A fresh process compiles ``x * n`` with ``n = DynamicInt(2)`` on ``aot_eager`` once (the
bridge installed, caches warm), resets, and compiles it again for ``DynamicInt(5)`` under
``sys.setprofile``: every function of ``dynscalar`` entered, in the order first entered,
without the table, its wrapper (``_patch``), the safety net and the wrapper's call of
torch's function (``_torchs_own``: the plumbing every hook call passes).  Consecutive
functions of one module make one step of the list, so a newcomer reads, top down, which
module handles the value next and by which functions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "how-it-works.md"
START, END = "<!-- value-path:start -->\n", "<!-- value-path:end -->\n"
#: plumbing every hook call passes: the table, its wrapper (the patch mechanism), the
#: safety net and the wrapper's call of torch's function (``_torchs_own.by_torch``)
PLUMBING = ("_bridge._table", "_bridge._patch", "_bridge._safety", "_bridge._torchs_own")

_TRACE = r"""
import json, sys, torch, dynscalar as ds
import torch._dynamo

def f(x, n):
    return x * n

g = torch.compile(f, backend="aot_eager")
x = torch.randn(3)
g(x, ds.DynamicInt(2))
torch._dynamo.reset()
package = ds.__file__.rsplit("/", 1)[0] + "/"
seen, order = set(), []

def profile(frame, event, arg):
    if event != "call" or not frame.f_code.co_filename.startswith(package):
        return
    module = frame.f_code.co_filename[len(package):-3].replace("/", ".")
    key = (module.removesuffix(".__init__"), frame.f_code.co_qualname)
    if key not in seen:
        seen.add(key)
        order.append(key)

sys.setprofile(profile)
out = g(x, ds.DynamicInt(5))
sys.setprofile(None)
assert torch.equal(out, f(x, 5))
print(json.dumps(order))
"""


def trace() -> list[tuple[str, str]]:
    """(module, function) of every dynscalar function the compile entered, in order."""
    done = subprocess.run(
        [sys.executable, "-c", _TRACE], capture_output=True, text=True, check=True, cwd=ROOT
    )
    order = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        (module, name)
        for module, name in order
        if not module.startswith(PLUMBING) and "<" not in name
    ]


def render(path: list[tuple[str, str]]) -> str:
    """The steps as a numbered Markdown list: a module, then its functions in order."""
    steps: list[tuple[str, list[str]]] = []
    for module, name in path:
        if steps and steps[-1][0] == module:
            steps[-1][1].append(name)
        else:
            steps.append((module, [name]))
    lines = [
        f"{i}. `dynscalar.{module}`: {', '.join(f'`{n}`' for n in names)}"
        for i, (module, names) in enumerate(steps, 1)
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs")
    args = parser.parse_args(argv)
    text = PAGE.read_text()
    head, found, rest = text.partition(START)
    old, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise SystemExit(f"{PAGE} has no {START.strip()} ... {END.strip()} block")
    new = render(trace())
    if args.check:
        if new != old:
            print(f"{PAGE.relative_to(ROOT)} is out of date: python {Path(__file__).name}")
            return 1
        return 0
    PAGE.write_text(head + START + new + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
