"""The `verirl` command. Each domain adds its own subcommands from a `commands.py` beside its
code, so this file only wires them together; heavy imports happen inside the handlers."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from shared.settings import SettingsError

# Modules that define `register(subparsers)`. A module that is not there yet is skipped.
COMMAND_MODULES = (
    "services.grader.commands",
    "shared.factory.commands",
    "services.api.commands",
    "services.sampler.commands",
    "services.trainer.commands",
)


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def command_group(sub, name: str, help: str):
    """The subcommands of command `name`, created on first use, so that several domains can add to
    one command (`verirl serve api`, `verirl serve sampler`)."""
    if name not in sub.choices:
        parser = sub.add_parser(name, help=help)
        parser.subcommands = parser.add_subparsers(dest=f"{name}_command", required=True, metavar="WHAT")
    return sub.choices[name].subcommands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verirl", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if name.startswith(f"{exc.name}.") or exc.name == name:
                continue  # that domain is not installed here
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except (UsageError, SettingsError) as exc:
        print(f"verirl {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    # Run the importable module's main, so that `UsageError` raised by the commands is this one.
    from services.cli import main as importable_main

    sys.exit(importable_main())
