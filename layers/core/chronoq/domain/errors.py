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


class InvalidRequest(ChronoqError):
    """A well-formed request that cannot be accepted; ``field`` names the culprit (its JSON
    path in the request body; None: the request as a whole)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class QuotaExceeded(ChronoqError):
    """The owner has as many jobs as the deployment allows."""


class TargetError(ChronoqError):
    """A run's target failed (the runner raises it so that the attempt fails)."""


class PermanentError(ChronoqError):
    """A failure that trying again cannot fix: the run is not retried."""
