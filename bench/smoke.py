"""The ``--smoke`` option every bench script has: a run small enough for CI (under 30 s on a
2-core machine) that goes through the same code as a full run, so a bench that no longer
runs fails the build (``.ci/run``'s last stage runs every script so). Its figures are
printed like any others but mean little: too few turns, no warm-up to speak of.

A script builds its parser as usual and hands it here with the values its smoke run uses;
options given on the command line still win over them::

    args = parse_args(parser, smoke={"turns": 5, "warmup": 1})
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

SMOKE_HELP = "a quick run proving the bench still works (figures not meaningful)"


def parse_args(
    parser: argparse.ArgumentParser,
    *,
    smoke: Mapping[str, object],
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """Parse ``argv`` with a ``--smoke`` option added; with it, ``smoke`` replaces the
    defaults (each key an option's ``dest``, which must exist)."""
    shown = " ".join(
        f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}")
        for key, value in smoke.items()
    )
    parser.add_argument(
        "--smoke", action="store_true", help=f"{SMOKE_HELP}{f': {shown}' if shown else ''}"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(smoke) - set(vars(args)))
    if unknown:
        raise ValueError(f"smoke values for options the parser lacks: {', '.join(unknown)}")
    if args.smoke:
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
    return args
