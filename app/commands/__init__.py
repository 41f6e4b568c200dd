"""The ``hcep`` subcommands, one module each; imported only when the subcommand runs.

Each module exposes ``configure(parser)`` (its options) and ``run(args)`` (the exit status) and is listed once in
:data:`app.cli.COMMANDS`.  What several commands share lives below, in :mod:`app.matching`.
"""

from app.errors import CommandError

__all__ = ["CommandError"]
