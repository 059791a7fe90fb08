"""Errors that reach the user as one clear line."""

from __future__ import annotations


class DataError(Exception):
    """Bad input: a file, line or field that is not what the loader expects.

    The CLI prints ``str(error)`` (``path:line: field: what is wrong``) and exits with code 2.
    """

    def __init__(self, path: str, message: str, *, line: int | None = None, field: str | None = None):
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        """Return the one-line form ``path:line: field: message``."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


class UsageError(Exception):
    """A command-line argument that cannot be used (unknown split, bad model spec...)."""


class ModelError(Exception):
    """A model call failed for good (bad request, auth, malformed response)."""


class TransientModelError(ModelError):
    """A model call failed in a way worth retrying (429, 5xx, timeout, connection reset)."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class RunInterrupted(Exception):
    """A run stopped by Ctrl-C; its finished samples are stored and it can be resumed."""

    def __init__(self, run_id: str):
        super().__init__(run_id)
        self.run_id = run_id


class EndpointDown(ModelError):
    """The model endpoint stopped answering (a streak of connection failures, or its server process died).

    The run stops at once, resumable; retrying a dead port sample after sample only wastes time.
    """


class StoreWriteError(Exception):
    """A write to the store failed (disk full, read-only, lost connection).

    The run stops at once with no further model calls; rows not yet written stay buffered or are
    re-done on resume, so nothing finished is lost.
    """


class MissingDataPath(UsageError):
    """A data path given to a benchmark (``--data``, ``--candidates``) where nothing is: said about the option."""

    def __init__(self, option: str, path: str):
        super().__init__(f"{option} {path}: no such file or folder")
        self.option = option
        self.path = path


class RunLocked(UsageError):
    """Another process is already running or resuming this run."""


class ConnectionFailed(TransientModelError):
    """Nothing came back over the connection (refused, reset, body cut short).

    Retried like any transient fault; a streak of them across the run means the endpoint is down.
    """


class RunStopped(RunInterrupted):
    """A run stopped by a failure outside its samples (endpoint down, store write failed).

    Its finished samples are stored and it can be resumed once the cause is fixed; ``reason`` is
    the one line shown to the user.
    """

    def __init__(self, run_id: str, reason: str):
        super().__init__(run_id)
        self.reason = reason
