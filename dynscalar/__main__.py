"""Command line: ``python -m dynscalar demo`` and ``python -m dynscalar doctor SCRIPT``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynscalar", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="compile counts and time, stock torch.compile vs dynscalar, on the seed model "
        "(or --workload train)",
    )
    from ._demo import add_arguments as add_demo_arguments

    add_demo_arguments(demo)
    doctor = commands.add_parser(
        "doctor",
        help="run a script unchanged and report which Python scalars caused recompiles",
    )
    doctor.add_argument("script", help="path of the Python script to run")
    doctor.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    args = parser.parse_args(argv)

    if args.command == "doctor":
        from ._doctor import run_doctor

        return run_doctor(args.script, args.args)

    if args.command == "demo":
        from ._demo import main as run_demo_command

        return run_demo_command(args, demo)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
