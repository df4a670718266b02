"""The optimizer x scheduler sweep (``tests/optim_sweep``) as a test.

Each row compiles ``opt.step`` three ways beside an eager twin (see the runner): the
paths run (nothing marked, values constant), stock (nothing marked, scheduled) and
marked (the scheduler's keys marked).  A row holds when the marked run compiles exactly
the paths run's graphs, is no further from eager than stock, and leaves the param groups
as eager does.  The default suite runs the issue's inductor examples; the ``broad``
marker runs a wider slice of both backends; ``python -m tests.optim_sweep`` runs it all
and publishes ``docs/optimizers.md``.
"""

from __future__ import annotations

import json

import pytest

from .optim_sweep import catalogue, render_docs
from .optim_sweep.runner import run_row

#: row -> (stock torch's graphs, the marked run's graphs) over the run (5 scheduled steps;
#: the first step creates state): stock compiles a graph per new value, marked one per path
#: (the paths run's count), on every supported release.  Before issue 37 (main at 976cfbe)
#: the marked runs compiled SGD + CosineAnnealingLR 10 graphs over 12 steps, SGD(nesterov)
#: + OneCycleLR 11, RMSprop(momentum) + CyclicLR 8, AdamW + OneCycleLR 10; before issue 47,
#: AdamW (foreach) + OneCycleLR compiled 6 on torch 2.14 and 2.15 (betas[0] specialized).
EXAMPLES = {
    "AdamW foreach OneCycleLR inductor": (6, 1),
}
BROAD_EXAMPLES = {
    "SGD(momentum) foreach CosineAnnealingLR inductor": (6, 2),
    "SGD(momentum) single CosineAnnealingLR inductor": (6, 2),
    "SGD(nesterov) foreach OneCycleLR inductor": (6, 2),
    "SGD(momentum) foreach CyclicLR inductor": (5, 2),
    "RMSprop(momentum) foreach CyclicLR inductor": (4, 1),
    "AdamW single OneCycleLR inductor": (6, 1),
    "Adam foreach OneCycleLR inductor": (6, 1),
}


def _check(record: dict[str, object], graphs: tuple[int, int]) -> None:
    paths, stock, marked = (record[w] for w in ("paths", "stock", "marked"))
    assert isinstance(paths, dict) and isinstance(stock, dict) and isinstance(marked, dict)
    assert marked["error"] is None and stock["error"] is None
    assert marked["warnings"] == []  # nothing specialized, nothing fell back
    assert (stock["graphs"], marked["graphs"]) == graphs
    assert marked["graphs"] == paths["graphs"]  # one graph per path
    assert marked["groups_equal"]
    assert marked["distance"] <= stock["distance"]  # no further from eager than stock
    assert render_docs.verdict(record) == "dynamic"


@pytest.mark.inductor
@pytest.mark.parametrize("key", list(EXAMPLES))
def test_a_scheduled_optimizer_compiles_once_per_path_on_inductor(key: str) -> None:
    _check(run_row(catalogue.find(key)), EXAMPLES[key])


@pytest.mark.broad
@pytest.mark.inductor
@pytest.mark.parametrize("key", list(BROAD_EXAMPLES))
def test_more_scheduled_optimizers_compile_once_per_path_on_inductor(key: str) -> None:
    _check(run_row(catalogue.find(key)), BROAD_EXAMPLES[key])


_AOT_SCHEDULERS = ("CosineAnnealingLR", "OneCycleLR", "CyclicLR", "ReduceLROnPlateau")


@pytest.mark.broad
@pytest.mark.parametrize(
    "key",
    [row.key for row in catalogue.rows(("aot_eager",)) if row.sched.name in _AOT_SCHEDULERS],
)
def test_every_optimizer_is_dynamic_on_aot_eager(key: str) -> None:
    record = run_row(catalogue.find(key))
    want = render_docs.NOT_COMPILED if render_docs.untraced(key) else "dynamic"
    assert render_docs.verdict(record) == want, record


def test_the_published_sweep_is_the_page_and_every_row_is_accounted_for() -> None:
    data = json.loads(render_docs.JSON_PATH.read_text())
    assert render_docs.PAGE_PATH.read_text() == render_docs.render(data)
    keys = {r["key"] for r in data["rows"]}
    assert keys == {row.key for row in catalogue.rows()}  # the whole sweep, nothing else
    verdicts = {r["key"]: render_docs.verdict(r) for r in data["rows"]}
    not_compiled = {k for k, v in verdicts.items() if v == render_docs.NOT_COMPILED}
    assert not_compiled == {k for k in verdicts if render_docs.untraced(k)}  # torch skips them
    assert {
        k: v for k, v in verdicts.items() if v not in ("dynamic", render_docs.NOT_COMPILED)
    } == (KNOWN)
    assert all(r["marked"]["graphs"] <= r["stock"]["graphs"] for r in data["rows"])


#: rows of the published sweep that are not dynamic, and why (filled in from the run)
KNOWN: dict[str, str] = {}
