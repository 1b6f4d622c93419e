"""Errors the service raises; the API maps each to one HTTP status in one place."""

from __future__ import annotations


class ChronoqError(Exception):
    """Base of every error chronoq raises on purpose."""


class NotFound(ChronoqError):
    """The thing does not exist, or belongs to someone else (the two are not told apart)."""


class Conflict(ChronoqError):
    """The request clashes with the job's current state or version (``field``: the field at
    fault, if one is)."""

    field: str | None = None


class NameTaken(Conflict):
    """Another job of the owner has the name (names are unique per owner)."""

    field: str | None = "name"


class SecretInUse(Conflict):
    """A secret that jobs name cannot be deleted (``jobs``: their ids)."""

    def __init__(self, message: str, jobs: list[str]) -> None:
        super().__init__(message)
        self.jobs = jobs


class InvalidRequest(ChronoqError):
    """A well-formed request that cannot be accepted; ``field`` names the culprit (its JSON
    path in the request body; None: the request as a whole)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class QuotaExceeded(ChronoqError):
    """The owner has as many jobs as the deployment allows."""


class LimitExceeded(ChronoqError):
    """A request past one of its owner's limits (``limit``: the setting's name).
    ``retry_after``: seconds after which it may fit, once what the owner holds has ended
    (429); None: it can never fit as asked (422, ``field`` naming what to change)."""

    def __init__(
        self,
        limit: str,
        message: str,
        retry_after: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message
        self.retry_after = retry_after
        self.field = field


class TargetError(ChronoqError):
    """A run's target failed (the runner raises it so that the attempt fails)."""


class PermanentError(ChronoqError):
    """A failure that trying again cannot fix: the run is not retried."""


class CalendarInUse(Conflict):
    """A calendar that jobs use cannot be deleted (``jobs``: their ids)."""

    def __init__(self, message: str, jobs: list[str]) -> None:
        super().__init__(message)
        self.jobs = jobs
