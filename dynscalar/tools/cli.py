"""The command line of ``python -m dynscalar``: ``demo``, ``doctor SCRIPT``, ``measure
SCRIPT`` and ``specializations``, each a tool of this package (``dynscalar/__main__.py``
only calls ``main``)."""

from __future__ import annotations

import argparse
import platform

import torch

from .. import __version__

DESCRIPTION = """\
dynscalar: mark_dynamic for Python scalars under torch.compile.

  python -m dynscalar demo            stock torch.compile vs dynscalar on a step counter
  python -m dynscalar doctor SCRIPT   which Python scalars make SCRIPT recompile, and the fix
  python -m dynscalar measure SCRIPT  measure the exactness cells SCRIPT needs on this torch
                                      and device (where a SpecializationWarning says one is
                                      missing)
  python -m dynscalar specializations which Python constructs force a marked value, on this torch

Documentation: https://dynscalar.github.io/dynscalar
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dynscalar",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    versions = f"torch {torch.__version__}, Python {platform.python_version()}"
    parser.add_argument(
        "--version", action="version", version=f"dynscalar {__version__} ({versions})"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="compile counts and time, stock torch.compile vs dynscalar, on the seed model "
        "(or --workload train)",
    )
    from .demo import add_arguments as add_demo_arguments

    add_demo_arguments(demo)
    doctor = commands.add_parser(
        "doctor",
        help="run a script unchanged and report which Python scalars caused recompiles",
        usage="python -m dynscalar doctor [-h] [--json] [-o FILE] SCRIPT [ARGS ...]",
        description="Run SCRIPT as `python SCRIPT ARGS...` would and report every Python "
        "scalar that made torch.compile recompile, with the code that makes it dynamic. "
        "Options go before SCRIPT; everything after it is the script's. The exit code is "
        "the script's.",
    )
    doctor.add_argument("--json", action="store_true", help="write the report as JSON")
    doctor.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE (default: stderr)"
    )
    doctor.add_argument(  # nargs="?" and a check below: argparse would call ARGS required
        "script", metavar="SCRIPT", nargs="?", help="path of the Python script to run"
    )
    doctor.add_argument(
        "args", metavar="ARGS", nargs=argparse.REMAINDER, help="arguments for the script"
    )
    measure = commands.add_parser(
        "measure",
        help="measure, on this torch and device, the exactness cells a script needs that the "
        "shipped file lacks, into the per-user cache",
        usage="python -m dynscalar measure [-h] [--list] [--json FILE] SCRIPT [ARGS ...]\n"
        "       python -m dynscalar measure [--rules R,...|all] [--forms F,...|all] "
        "[--backend python,inductor] [--dtypes D,...] [--device DEV]",
        description="Run SCRIPT as `python SCRIPT ARGS...` would (in a child process), collect "
        "the op-rule and scalar-form cells it needed and no measurement held, measure each "
        "with the exactness harness on this torch and device, and store the verdicts in the "
        "per-user cache ($DYNSCALAR_CACHE_DIR, else $XDG_CACHE_HOME/dynscalar, else "
        "~/.cache/dynscalar) that dynscalar reads where its shipped file lacks a cell. "
        "Options go before SCRIPT.",
    )
    from .measure import add_arguments as add_measure_arguments

    add_measure_arguments(measure)
    commands.add_parser(
        "specializations",
        help="which Python constructs (int(), min, range, f-strings, indexing, math) force a "
        "marked value to a constant on the installed torch (a few seconds)",
    )
    args = parser.parse_args(argv)

    if args.command == "specializations":
        from .specializations import probe, render_table

        print(
            f"torch {torch.__version__}: n a DynamicInt, then a DynamicFloat, compiled and "
            "called with 4 values each\n"
        )
        print(render_table(probe()), end="")
        return 0

    if args.command == "doctor":
        from .doctor.run import run_doctor

        if args.script is None:
            doctor.error("the following argument is required: SCRIPT")
        return run_doctor(args.script, args.args, as_json=args.json, output=args.output)

    if args.command == "measure":
        from .measure import run_command

        return run_command(args)

    if args.command == "demo":
        from .demo import main as run_demo_command

        return run_demo_command(args, demo)
    return 2  # pragma: no cover - argparse rejects unknown commands
