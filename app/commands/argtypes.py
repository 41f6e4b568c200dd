"""argparse value types and choices shared by the subcommands: one clear one-line error per bad number."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def number(
    *, above: float | None = None, at_least: float | None = None, integer: bool = False, what: str = ""
) -> Callable[[str], float]:
    """A parser for a finite number (an int when ``integer``), optionally ``> above`` or ``>= at_least``."""

    def parse(text: str) -> float:
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if integer else 'a number'}: {text!r}") from None
        if isinstance(value, int) and abs(value) >= 2**63:  # math.isfinite() of a huge int raises OverflowError
            raise argparse.ArgumentTypeError(f"out of range: {text[:40]}")
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be finite, got {text}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be > {above:g}{what}, got {text}")
        if at_least is not None and not value >= at_least:
            raise argparse.ArgumentTypeError(f"must be >= {at_least:g}{what}, got {text}")
        return value

    return parse


finite = number()
positive = number(above=0)
positive_seconds = number(above=0, what=" seconds")
non_negative = number(at_least=0)
non_negative_seconds = number(at_least=0, what=" seconds")
positive_int = number(at_least=1, integer=True)
non_negative_int = number(at_least=0, integer=True)


#: Kept equal to ``engine.language.ast.STRATEGIES`` / ``OUTPUT_MODES`` (tests check it); listed here so that parsing
#: the command line does not import the engine.
STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")
OUTPUT_MODES = ("all", "distinct", "collapsed")


def probability(text: str) -> float:
    """A confidence threshold: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value
