"""The examples stay true to the code: run them and check what they print."""

from __future__ import annotations

import pytest

from .helpers import ROOT, run_interpreter


def run(*args: str) -> str:
    result = run_interpreter(*args, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.broad
def test_seed_model_example() -> None:
    out = run("examples/seed_model.py")
    assert "stock torch.compile:         8 compiles" in out
    assert "mark_dynamic_attr(m, 'step'): 1 compile; step = 20" in out


@pytest.mark.broad
def test_warmup_training_example() -> None:
    out = run("examples/warmup_training.py", "--steps", "30")
    assert "30 steps, 1 compile(s), step=30, max |loss - eager loss| = 0.00e+00" in out


@pytest.mark.broad
def test_demo_command() -> None:
    out = run(
        "-m", "dynscalar", "demo", "--backend", "aot_eager", "--steps", "12", "--steady", "40"
    )
    header = out.splitlines()[1]
    assert "12 timed calls and 40 steady ones per strategy, backend aot_eager, single" in header
    assert "x86_64" not in header  # the CPU model, not the architecture
    assert " cores, 1 torch thread, load " in header  # the load: the timings depend on it
    # progress while it runs (plain lines: stdout is not a terminal here)
    assert "  stock torch.compile: first call (compile) took" in out
    assert "  stock torch.compile: done: 8 compiles, then eager;" in out
    table = out[out.index("strategy  ") :].splitlines()
    assert table[0].split("  ")[0] == "strategy" and set(table[1]) == {"-", " "}
    rows = {line.split("  ")[0]: line.split() for line in table[2:6]}
    assert rows["stock torch.compile"][2:5] == ["8,", "then", "eager"]
    for name in ("dynscalar.DynamicInt", "dynscalar.mark_dynamic_attr", "@dynscalar.dynamic_attrs"):
        line = rows[name]
        assert line[1] == "1" and line[-1] == "yes", line
    assert "(single cold run per strategy; steady: median of 40 calls after the timed" in out
    for name in rows:  # the steady median, then its interquartile range: q1 <= median <= q3
        median, spread = rows[name][-3], rows[name][-2]
        q1, q3 = (float(v) for v in spread.strip("()").split("-"))
        assert q1 <= float(median) <= q3, rows[name]
    assert "|" not in "\n".join(table[:6])  # no Markdown pipes


def test_demo_train_workload_and_runs_options() -> None:
    from dynscalar.tools.demo import WORKLOADS, Row, _median_row

    assert WORKLOADS["train"].default_steps == 200
    runs = [
        Row("s", 2, 1.0, 3.0, 0.5, True, [1.0, 1.0, 1.0], False, 1, [3.0]),
        Row("s", 2, 3.0, 9.0, 0.7, True, [3.0, 3.0, 3.0], False, 1, [9.0]),
        Row("s", 2, 2.0, 5.0, 0.6, True, [2.0, 2.0, 1.0], False, 1, [5.0]),
    ]
    row = _median_row(runs)
    assert (row.first_call_s, row.total_s, row.median_step_ms, row.runs) == (2.0, 5.0, 0.6, 3)
    assert row.step_times_s == [2.0, 2.0, 1.0] and row.totals_s == [3.0, 9.0, 5.0]
    # with the steady calls recorded: their median and quartiles, pooled over the runs
    for r, steady in zip(runs, ([0.5, 0.5, 0.6], [0.7, 0.9, 0.8], [0.6, 0.6, 0.4]), strict=True):
        r.steady_ms = steady
    row = _median_row(runs)
    assert row.median_step_ms == 0.6 and len(row.steady_ms) == 9
    assert row.steady_text == "0.60 (0.50-0.75)"


def test_demo_rich_progress_renders() -> None:
    """The terminal path: rich progress and table, drawn into a string."""
    import io

    from rich.console import Console

    from dynscalar.tools.demo import RichProgress, Row, print_rich_table

    console = Console(file=io.StringIO(), force_terminal=True, width=140)
    row = Row("stock torch.compile", 8, 2.0, 3.0, 0.1, True, [2.0] + [0.1] * 9, True)
    with RichProgress(1, console) as progress:
        progress.start(row.strategy, 1, 10)
        progress.compile(row.strategy, 1, 1)
        progress.call(row.strategy, 1, 1, 2.0)
        progress.done(row.strategy, 1, row)
    print_rich_table([row], console, caption="single cold run per strategy")
    text = console.file.getvalue()
    assert "8 compiles, then eager" in text and "single cold run per strategy" in text


@pytest.mark.broad
def test_training_loop_example_prints_its_recorded_output() -> None:
    """The script form of docs/tutorial.md: its recorded output must stay true."""
    out = run("examples/training_loop.py")
    assert out == (ROOT / "examples/output/training_loop.txt").read_text()


@pytest.mark.broad
def test_stock_vs_marked_example_prints_its_recorded_output() -> None:
    """docs/faq.md shows examples/output/stock_vs_marked.txt: it must stay true."""
    out = run("examples/stock_vs_marked.py")
    recorded = (ROOT / "examples/output/stock_vs_marked.txt").read_text()
    if out.splitlines()[0] == recorded.splitlines()[0]:  # the torch it was recorded with
        assert out == recorded
        return
    # Another torch (scripts/compat.sh): stock torch's counts are that torch's own business
    # (2.15 compiles the float attribute written in forward 9 times, not 8); the rows and
    # dynscalar's column must not change.
    assert _rows_and_dynscalar_column(out) == _rows_and_dynscalar_column(recorded)


def _rows_and_dynscalar_column(text: str) -> list[tuple[str, str]]:
    rows = [line for line in text.splitlines() if "  " in line and not line.startswith(" ")]
    return [(line[:40].strip(), line[64:].strip()) for line in rows[2:]]


def test_plain_demo_progress_says_it_is_still_compiling() -> None:
    """Plain mode (no terminal): a cold inductor compile is a minute or more of silence
    without a heartbeat line."""
    import io
    import time

    from dynscalar.tools.demo import PlainProgress, Row, _load

    out = io.StringIO()
    progress = PlainProgress(1, out)
    progress.HEARTBEAT_S = 0.05
    progress.start("stock torch.compile", 1, 10)
    time.sleep(0.3)
    progress.call("stock torch.compile", 1, 1, 0.3)
    written = out.getvalue()
    time.sleep(0.2)
    assert out.getvalue() == written  # stopped at the first call
    assert "  stock torch.compile: still compiling (" in written
    progress.done("stock torch.compile", 1, Row("stock torch.compile", 8, 0.3, 1.0, 0.1, True))
    assert _load().startswith(", load ")


def test_demo_seed_note_says_what_its_table_shows() -> None:
    """The note under the seed table compares the stock row's steady calls (eager after the
    limit) with the compiled rows' as the table rounds them, in words that match."""
    from dynscalar.tools.demo import Row, format_table, seed_note

    rows = [
        Row("stock torch.compile", 8, 16.2, 17.1, 0.067, True, fell_back_to_eager=True),
        Row("dynscalar.DynamicInt", 1, 17.0, 17.0, 0.130, True),
        Row("dynscalar.mark_dynamic_attr", 1, 17.7, 17.7, 0.117, True),
    ]
    table = format_table(rows)
    note = seed_note(rows)
    assert "(0.07 ms steady) are faster than the compiled ones (0.12-0.13 ms)" in note
    assert all(figure in table for figure in ("0.07", "0.12", "0.13"))
    rows[0].median_step_ms = 0.125
    assert "are about as fast as the compiled ones (0.12-0.13 ms)." in seed_note(rows)
    rows[0].median_step_ms = 0.3
    assert "are slower than the compiled ones" in seed_note(rows)
    rows[0].fell_back_to_eager = False
    assert "steady" not in seed_note(rows)
