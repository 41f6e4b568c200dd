"""The one error of bad input that the command line reports: below ``app.commands`` so that the libraries the
commands share (:mod:`app.matching`) raise it without importing the commands."""


class CommandError(Exception):
    """Bad input detected by a command: ``hcep`` prints the message (one line) on stderr and exits 2."""
