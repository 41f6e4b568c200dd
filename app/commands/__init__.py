"""The ``hcep`` subcommands, one module each; imported only when the subcommand runs."""


class CommandError(Exception):
    """Bad input detected by a command: ``hcep`` prints the message (one line) on stderr and exits 2."""
