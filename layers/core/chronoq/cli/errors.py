"""What the command line fails with, and the exit codes scripts can rely on.

0  done
1  the API answered with an error (4xx other than 404, 5xx) or could not be reached
2  usage: bad flags or input found wrong before anything was sent, no token
3  not found: the job or run does not exist (or belongs to someone else)
4  ``--exit-status``: the run followed ended other than SUCCEEDED
5  ``diff``: applying the files would change something
"""

from __future__ import annotations

from typing import IO, Any

import click

OK = 0
API_ERROR = 1
USAGE = 2
NOT_FOUND = 3
RUN_NOT_SUCCEEDED = 4
DIFFERENT = 5


class Failure(click.ClickException):
    """A failure shown as ``error: <message>`` on stderr, exiting with ``exit_code``."""

    def __init__(self, message: str, exit_code: int = API_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click's is a class default

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class ApiError(Failure):
    """The API answered ``status`` with ``body`` (either error shape the API has used)."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        self.code, self.detail, self.fields = describe(body)
        exit_code = NOT_FOUND if status == 404 else API_ERROR
        super().__init__(self._text(), exit_code)

    def _text(self) -> str:
        code = f" {self.code}" if self.code else ""
        lines = [f"HTTP {self.status}{code}: {self.detail}"]
        lines += [f"  {field}: {message}" for field, message in self.fields]
        return "\n".join(lines)


def describe(body: Any) -> tuple[str, str, list[tuple[str, str]]]:
    """(code, message, [(field, message)]) of an error answer.

    Reads ``{"error": {"code", "message", "field"}}`` as well as
    ``{"message": ..., "errors": [{"field", "message"}]}``; anything else is shown as it is.
    """
    if not isinstance(body, dict):
        text = str(body).strip() if body not in (None, "") else "(no message)"
        return "", text, []
    error = body.get("error")
    if isinstance(error, dict):
        code = str(error.get("code") or "")
        message = str(error.get("message") or "")
        fields = _fields(error.get("details") or error.get("errors"))
        field = str(error.get("field") or "")
        if field and not any(f == field for f, _ in fields):
            # (the API's message names the field first: "<field>: <problem>")
            fields.insert(0, (field, message.removeprefix(f"{field}: ")))
        return code, message or code, fields
    message = str(body.get("message") or error or body)
    return "", message, _fields(body.get("errors"))


def _fields(items: Any) -> list[tuple[str, str]]:
    if not isinstance(items, list):
        return []
    return [
        (str(item.get("field") or ""), str(item.get("message") or ""))
        for item in items
        if isinstance(item, dict)
    ]
