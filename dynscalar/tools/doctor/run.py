"""Running the user's script as ``python SCRIPT ARGS...`` would, under the recompile watcher."""

from __future__ import annotations

import builtins
import os
import shlex
import sys
import threading
import time
import types

from .analysis import Collector
from .records import DoctorReport
from .report import format_json, format_report

__all__ = ["PROGRESS_EVERY_S", "rerun_command", "run_doctor"]

#: seconds between the progress lines printed while the script runs
PROGRESS_EVERY_S = 15.0


class _Progress:
    """A line on stderr when the script starts, then one every :data:`PROGRESS_EVERY_S`
    seconds while it runs (a training script may run for minutes before the report)."""

    def __init__(self, collector: Collector, every: float) -> None:
        self._collector = collector
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dynscalar-doctor", daemon=True)
        self._start = time.perf_counter()

    def __enter__(self) -> _Progress:
        self._start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            seen = self._collector.seen
            elapsed = time.perf_counter() - self._start
            print(
                f"dynscalar doctor: still running ({elapsed:.0f} s, {seen} cache "
                f"miss{'es' * (seen != 1)} read so far)",
                file=sys.stderr,
                flush=True,
            )


def _run_script(script: str, args: list[str]) -> tuple[int, str | None]:
    """Run ``script`` as ``python script args...`` would; return (exit code, crash summary)."""
    import runpy

    path = os.path.abspath(script)
    folder = os.path.dirname(os.path.realpath(path)) if os.path.isfile(path) else path
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_main = sys.modules.get("__main__")
    sys.argv = [script, *args]
    if not getattr(sys.flags, "safe_path", False):  # python -P adds no folder
        sys.path[:1] = [folder]  # replaces the doctor's own entry (the current folder)
    try:
        if os.path.isfile(path):
            _exec_main(path)
        else:  # a folder or zip with __main__.py: runpy puts it first on sys.path itself
            del sys.path[:1]
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc), None
    except BaseException as exc:  # noqa: BLE001 - any crash is reported, as python would
        _print_exception(exc.with_traceback(_script_frames(exc, path)))
        message = str(exc)
        return (
            130 if isinstance(exc, KeyboardInterrupt) else 1,
            f"{type(exc).__name__}: {message}" if message else type(exc).__name__,
        )
    finally:
        sys.stdout.flush()
        sys.argv = saved_argv
        if sys.path[:1] == [folder]:
            sys.path[:1] = saved_path[:1]
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return 0, None


def _exec_main(path: str) -> None:
    import importlib.machinery

    with open(path, "rb") as handle:
        source = handle.read()
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=path,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __spec__=None,
        __package__=None,
        __builtins__=builtins,
    )
    sys.modules["__main__"] = module
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)  # python prints any other exit value and exits 1
    return 1


def _script_frames(exc: BaseException, path: str) -> types.TracebackType | None:
    """The traceback python would show: from the script's first frame on, not the doctor's."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return tb


def _print_exception(exc: BaseException) -> None:
    sys.stdout.flush()
    sys.excepthook(type(exc), exc, exc.__traceback__)


def rerun_command(
    script: str, args: list[str], *, as_json: bool = False, output: str | None = None
) -> str:
    """The command line that runs the doctor again the same way."""
    options = (["--json"] if as_json else []) + (["-o", output] if output else [])
    return shlex.join(["python", "-m", "dynscalar", "doctor", *options, script, *args])


def run_doctor(
    script: str,
    args: list[str],
    *,
    as_json: bool = False,
    output: str | None = None,
) -> int:
    """Run ``script`` with ``args``; write the report; return the script's exit code.

    Exit code 2 without running anything when the script does not exist or the doctor
    cannot read this torch's recompiles.
    """
    import dynscalar  # noqa: F401  (bridge hook in place before the script imports torch)

    from ..._diagnostics import BridgeError
    from .watcher import RecompileWatcher

    path = os.path.abspath(script)
    if not os.path.exists(path):  # what python says, with the doctor's name
        print(
            f"dynscalar doctor: can't open file {path!r}: [Errno 2] No such file or directory",
            file=sys.stderr,
        )
        return 2
    report = DoctorReport(script=script, args=list(args))
    report.rerun = rerun_command(script, args, as_json=as_json, output=output)
    collector = Collector(report)
    watcher = RecompileWatcher(collector)
    where = "follows when it ends" if output is None else f"goes to {output} when it ends"
    print(
        f"dynscalar doctor: running {shlex.join([script, *args])} (the report {where})",
        file=sys.stderr,
        flush=True,
    )
    try:
        with watcher, _Progress(collector, PROGRESS_EVERY_S):
            report.exit_code, report.crash = _run_script(script, args)
    except BridgeError as exc:  # raised before the script runs: internals moved
        print(str(exc), file=sys.stderr)
        return 2
    collector.finish(watcher.unobserved)
    report.notes[:0] = [
        f"calls of {name} after its recompile limit ran eagerly without being read (this "
        "torch keeps the limit's strategy for the whole function): a scalar that changed "
        "only then is missing here"
        for name in report.unread
    ]
    report.notes.extend(watcher.errors)
    text = format_json(report) if as_json else format_report(report)
    if output is None:
        print(text, file=sys.stderr, flush=True)
    else:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return report.exit_code
