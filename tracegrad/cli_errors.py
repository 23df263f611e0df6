"""The ``tracegrad`` command's error, shared by ``cli`` and ``cli_demo`` (which ``cli``
imports, so it cannot import ``cli``)."""

USAGE, RUNTIME = 2, 1       # exit statuses: a bad command line, a failure while running


class CLIError(Exception):
    """An error reported as one line and an exit status, without a traceback."""

    def __init__(self, message, status=RUNTIME):
        super().__init__(message)
        self.status = status
