"""Jobs as code: ``chronoq apply`` makes the caller's jobs what a set of files says (creating,
changing, leaving alone, and with ``--prune`` deleting), ``chronoq diff`` tells what apply
would change. Jobs are matched by name (names are unique per owner).

A file holds one job (an object, in the API's JSON or the same as YAML), several (a list, or
YAML documents separated by ``---``); a directory, every ``*.json``, ``*.yaml`` and ``*.yml``
file in it. The files are the whole truth about their jobs: a field a file leaves out is
the API's default, whatever the job had. Every job applied carries the label ``managed-by``
(``--managed-by``, default ``chronoq-apply``); ``--prune`` deletes the jobs that carry the
same label and are in none of the files.

Both warn, on stderr and without failing, about credentials written into the files' jobs (a
plain ``Authorization`` header, a value shaped like a well-known token: what the API's
``Warning`` header names), pointing at ``chronoq secrets put``; apply also passes on what the
API's ``Warning`` names beyond that."""

from __future__ import annotations

import difflib
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import click

from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.client import APPLY_AGENT, Api, quote
from chronoq.cli.common import api_options, credential_findings, warn_credentials
from chronoq.cli.errors import DIFFERENT, USAGE, ApiError, Failure
from chronoq.cli.jobspec import BadInput

SUFFIXES = (".json", ".yaml", ".yml")
Action = Literal["create", "update", "unchanged", "delete"]
#: How each action reads once done, and in a diff.
DONE = {"create": "created", "update": "updated", "unchanged": "unchanged", "delete": "deleted"}
WOULD = {
    "create": "to create",
    "update": "to update",
    "unchanged": "unchanged",
    "delete": "to delete",
}


# --- reading the files -------------------------------------------------------------------------


@dataclass(frozen=True)
class Desired:
    """A job as the files have it."""

    source: str  # "jobs/nightly.yaml" (and which document of it: "#2")
    document: dict[str, Any]  # the API's JSON for it (managed-by label added)
    spec: Any  # the JobSpec it validates to (what the API would store)

    @property
    def name(self) -> str:
        return str(self.document["name"])


def files_of(paths: tuple[str, ...], recursive: bool) -> list[Path | None]:
    """The files named (a directory: its job files, sorted; ``-``: stdin, as None)."""
    found: list[Path | None] = []
    for given in paths:
        if given == "-":
            found.append(None)
            continue
        path = Path(given)
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            inside = sorted(p for p in path.glob(pattern) if p.suffix in SUFFIXES and p.is_file())
            if not inside:
                raise BadInput("-f", f"{given}: no {', '.join(SUFFIXES)} file in it")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise BadInput("-f", f"{given}: no such file or directory")
    return found


def documents(path: Path | None) -> list[tuple[str, Any]]:
    """The jobs of one file, each with where it comes from."""
    name = str(path) if path is not None else "-"
    text = path.read_text() if path is not None else sys.stdin.read()
    loaded: list[Any]
    if name.endswith(".json") or (path is None and text.lstrip().startswith(("{", "["))):
        try:
            loaded = [json.loads(text)]
        except ValueError as error:
            raise BadInput("-f", f"{name} is not valid JSON: {error}") from None
    else:
        import yaml

        try:
            loaded = list(yaml.safe_load_all(text))
        except yaml.YAMLError as error:
            raise BadInput("-f", f"{name} is not valid YAML: {error}") from None
    jobs: list[Any] = []
    for document in loaded:
        if document is None:  # (an empty YAML document)
            continue
        jobs += document if isinstance(document, list) else [document]
    plain: list[Any] = json.loads(json.dumps(jobs, default=_iso))  # YAML's datetimes: text
    if len(plain) == 1:
        return [(name, plain[0])]
    return [(f"{name}#{n}", job) for n, job in enumerate(plain, 1)]


def _iso(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def managed_by_of(found: list[tuple[str, Any]], given: str | None) -> str:
    """The value of the managed-by label: ``--managed-by``; else the one the files' jobs
    carry, if they all carry the same; else the default."""
    if given:
        return given
    carried = {
        str(job["labels"][r.MANAGED_BY_LABEL])
        for _, job in found
        if isinstance(job, dict)
        and isinstance(job.get("labels"), dict)
        and r.MANAGED_BY_LABEL in job["labels"]
    }
    if len(carried) > 1:
        raise BadInput(
            "--managed-by",
            f"the files' jobs carry several {r.MANAGED_BY_LABEL} labels"
            f" ({', '.join(sorted(carried))}): give one with --managed-by",
        )
    return carried.pop() if carried else r.DEFAULT_MANAGED_BY


def desired_jobs(found: list[tuple[str, Any]], managed_by: str) -> list[Desired]:
    """Each job of the files, labelled and validated as the API would (BadInput naming the
    file and the field otherwise); names must be unique among them."""
    from pydantic import ValidationError

    from chronoq.domain.jobs import JobSpec
    from chronoq.http_api import field_path

    desired: list[Desired] = []
    for source, job in found:
        if not isinstance(job, dict):
            raise BadInput("-f", f"{source}: a job is an object, not {type(job).__name__}")
        given = job.get("labels")
        labels: dict[str, Any] = given if isinstance(given, dict) else {}
        carried = labels.get(r.MANAGED_BY_LABEL, managed_by)
        if carried != managed_by:
            raise BadInput(
                "-f",
                f"{source}: labels.{r.MANAGED_BY_LABEL} is {carried!r}, but these jobs are"
                f" applied as {managed_by!r} (--managed-by)",
            )
        document = {**job, "labels": {**labels, r.MANAGED_BY_LABEL: managed_by}}
        try:
            spec = JobSpec.model_validate(document)
        except ValidationError as error:
            problems = "; ".join(  # (each field named by the path the API names it by)
                f"{field_path(e['loc']) or '(job)'}: {e['msg'].removeprefix('Value error, ')}"
                for e in error.errors()
            )
            raise BadInput("-f", f"{source}: {problems}") from None
        desired.append(Desired(source, document, spec))
    named = Counter(d.name for d in desired)
    twice = sorted(name for name, count in named.items() if count > 1)
    if twice:
        raise BadInput(
            "-f", f"names are unique: {', '.join(map(repr, twice))} given more than once"
        )
    return desired


# --- what would change -------------------------------------------------------------------------


@dataclass
class Change:
    action: Action
    name: str
    #: The job as it is (None: to create).
    current: dict[str, Any] | None = None
    desired: Desired | None = None
    #: The fields to change and their new values (an update's PATCH).
    patch: dict[str, Any] = field(default_factory=dict)
    #: The job as the API answered the change (or why it refused it).
    result: dict[str, Any] | None = None
    error: str | None = None
    #: The plain credentials the API's answer warned of that the files' check did not.
    warnings: list[str] = field(default_factory=list)

    @property
    def job_id(self) -> str:
        for job in (self.result, self.current):
            if job and job.get("id"):
                return str(job["id"])
        return ""


def spec_of(job: dict[str, Any]) -> dict[str, Any] | None:
    """The spec of a job as the API answered it, as the files' jobs are compared (None: it
    does not validate here)."""
    from pydantic import ValidationError

    from chronoq.domain.jobs import JobSpec

    try:
        spec = JobSpec.model_validate({k: v for k, v in job.items() if k in JobSpec.model_fields})
    except ValidationError:
        return None
    dumped: dict[str, Any] = spec.model_dump(mode="json")
    return dumped


def patch_for(desired: Desired, current: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``current`` that are not as the files have them, with their values
    from the files. A rate schedule given without ``start_at`` keeps the one its job was
    given when it was created (the API chooses it)."""
    want: dict[str, Any] = desired.spec.model_dump(mode="json")
    have = spec_of(current) or {}
    schedule = desired.document.get("schedule")
    if (
        isinstance(schedule, dict)
        and schedule.get("type") == "rate"
        and "start_at" not in schedule
        and isinstance(have.get("schedule"), dict)
        and have["schedule"].get("type") == "rate"
    ):
        want["schedule"] = {**want["schedule"], "start_at": have["schedule"].get("start_at")}
    # a business calendar: the job's copy of its rules is chronoq's, not the files'
    wanted_calendar = (want.get("schedule") or {}).get("calendar")
    had = have.get("schedule") if isinstance(have.get("schedule"), dict) else {}
    had_calendar = had.get("calendar") if isinstance(had, dict) else None
    if isinstance(wanted_calendar, dict) and isinstance(had_calendar, dict):
        copied = {k: had_calendar.get(k) for k in ("rules", "version")}
        want["schedule"] = {**want["schedule"], "calendar": {**wanted_calendar, **copied}}
    return {key: value for key, value in want.items() if have.get(key, object()) != value}


def plan(
    desired: list[Desired], current: list[dict[str, Any]], managed_by: str, prune: bool
) -> list[Change]:
    """What apply does: each job of the files created, updated or left unchanged, in the
    files' order; then, with ``prune``, the jobs labelled ``managed-by`` as these that no
    file has, deleted."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for job in current:
        by_name.setdefault(str(job.get("name")), []).append(job)
    wanted = {d.name for d in desired}
    clashing = sorted(n for n in wanted if len(by_name.get(n, [])) > 1)
    if clashing:
        raise Failure(
            f"several of your jobs are named {', '.join(map(repr, clashing))} (stored before"
            " names were unique): rename or delete all but one, then apply again",
            USAGE,
        )
    changes: list[Change] = []
    for d in desired:
        same = by_name.get(d.name)
        if not same:
            changes.append(Change("create", d.name, desired=d))
            continue
        patch = patch_for(d, same[0])
        changes.append(Change("update" if patch else "unchanged", d.name, same[0], d, patch))
    if prune:
        for kept in current:
            labels = kept.get("labels") or {}
            if labels.get(r.MANAGED_BY_LABEL) == managed_by and kept.get("name") not in wanted:
                changes.append(Change("delete", str(kept.get("name")), kept))
    return changes


def current_jobs(api: Api) -> list[dict[str, Any]]:
    """Every job of the caller, as the API answers them."""
    found: list[dict[str, Any]] = []
    for page, _ in api.pages("/jobs", "jobs", r.MAX_PAGE_LIMIT, None, every=True):
        found += page
    return found


def _planned(
    api: Api, files: tuple[str, ...], recursive: bool, managed_by: str | None, prune: bool
) -> tuple[list[Change], str]:
    try:
        found = [doc for path in files_of(files, recursive) for doc in documents(path)]
        label = managed_by_of(found, managed_by)
        desired = desired_jobs(found, label)
    except BadInput as error:
        raise click.UsageError(str(error)) from None
    except OSError as error:
        raise click.UsageError(f"-f: {error}") from None
    planned = plan(desired, current_jobs(api), label, prune)
    for job in desired:
        warn_credentials(_subject(job), job.spec.plain_credentials())
    return planned, label


def _subject(desired: Desired) -> str:
    """How a warning names a job of the files: ``nightly (jobs/nightly.yaml): ``."""
    return f"{desired.name} ({desired.source}): "


# --- the commands ------------------------------------------------------------------------------


def _options(function: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "-f",
                "--file",
                "files",
                multiple=True,
                required=True,
                metavar="FILE|DIR",
                help="a job file (JSON or YAML; one job or several), a directory of them, or -"
                " for stdin; repeatable",
            ),
            click.option(
                "-R", "--recursive", is_flag=True, help="the directories' subdirectories too"
            ),
            click.option(
                "--prune",
                is_flag=True,
                help=f"delete the jobs labelled {r.MANAGED_BY_LABEL} as these that no file has",
            ),
            click.option(
                "--managed-by",
                metavar="VALUE",
                help=f"the {r.MANAGED_BY_LABEL} label of these jobs [default: the one the"
                f" files' jobs carry, else {r.DEFAULT_MANAGED_BY}]",
            ),
            click.option(
                "-o",
                "--output",
                type=click.Choice(["table", "json"]),
                default="table",
                show_default=True,
                help="lines for people, or JSON for scripts",
            ),
        ]
    ):
        function = option(function)
    return api_options(function)


@click.command()
@_options
def apply(
    api: Api,
    files: tuple[str, ...],
    recursive: bool,
    prune: bool,
    managed_by: str | None,
    output: str,
) -> None:
    """Make your jobs what the files say: create the jobs they name that you do not have,
    change those that differ, leave the others alone (by name); with --prune, delete the
    jobs labelled managed-by as these that no file has. Applying the same files again
    changes nothing.

    \b
    chronoq apply -f jobs/
    chronoq apply -f jobs/ --prune --managed-by team-data
    """
    api.agent = APPLY_AGENT  # (its changes are told apart in jobs' audit trails)
    changes, label = _planned(api, files, recursive, managed_by, prune)
    for change in changes:
        try:
            change.result = _carry_out(api, change)
        except ApiError as error:
            change.error = error.format_message()
        if change.desired is not None:
            warn_credentials(_subject(change.desired), change.warnings)
    failed = [c for c in changes if c.error]
    if output == "json":
        click.echo(render.dump_json(_summary(changes, label, DONE)))
    else:
        for change in changes:
            _line(change, DONE[change.action] if not change.error else "failed")
        click.echo(
            f"apply: {_counts(changes, DONE)}" + (f", {len(failed)} failed" if failed else "")
        )
    if failed:
        raise click.exceptions.Exit(1)


@click.command()
@_options
def diff(
    api: Api,
    files: tuple[str, ...],
    recursive: bool,
    prune: bool,
    managed_by: str | None,
    output: str,
) -> None:
    """Show what chronoq apply would change (nothing is changed). Exits 5 when it would
    change something, 0 when your jobs are as the files say."""
    changes, label = _planned(api, files, recursive, managed_by, prune)
    if output == "json":
        click.echo(render.dump_json(_summary(changes, label, WOULD)))
    else:
        for change in changes:
            if change.action == "unchanged":
                continue
            _line(change, WOULD[change.action])
            if change.action == "update":
                _show_diff(change)
        click.echo(f"diff: {_counts(changes, WOULD)}")
    if any(c.action != "unchanged" for c in changes):
        raise click.exceptions.Exit(DIFFERENT)


def _carry_out(api: Api, change: Change) -> dict[str, Any] | None:
    """The job as the API answered the change; the plain credentials its ``Warning`` names
    that the files' own check did not find, noted in ``change.warnings``."""
    if change.action in ("unchanged", "delete"):
        assert change.current is not None
        if change.action == "delete":
            api.call("DELETE", f"/jobs/{quote(str(change.current['id']))}")
        return change.current
    assert change.desired is not None
    if change.action == "create":
        answer = api.send("POST", "/jobs", change.desired.document)
    else:
        assert change.current is not None
        body = {**change.patch, "version": change.current["version"]}
        answer = api.send("PATCH", f"/jobs/{quote(str(change.current['id']))}", body)
    known = set(change.desired.spec.plain_credentials())
    change.warnings = [f for f in credential_findings(answer) if f not in known]
    done: dict[str, Any] = answer.body
    return done


def _line(change: Change, verb: str) -> None:
    where = f"  ({change.desired.source})" if change.desired else ""
    fields = f"  {', '.join(change.patch)}" if change.action == "update" else ""
    click.echo(f"{verb:<10} {change.name}  {change.job_id or '-'}{fields}{where}")
    if change.error:
        click.echo(f"  error: {change.error}", err=True)


def _show_diff(change: Change) -> None:
    """The fields that would change: as they are, and as the files have them."""
    assert change.current is not None
    have = spec_of(change.current) or {}
    before = json.dumps({k: have.get(k) for k in change.patch}, indent=2, sort_keys=True)
    after = json.dumps(change.patch, indent=2, sort_keys=True)
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        f"{change.name} (as it is)",
        f"{change.name} (as the files have it)",
        lineterm="",
    )
    for line in lines:
        click.echo(f"    {line}")


def _counts(changes: list[Change], words: dict[str, str]) -> str:
    counted = Counter(str(c.action) for c in changes if not c.error)
    return ", ".join(f"{counted[action]} {word}" for action, word in words.items())


def _summary(changes: list[Change], label: str, words: dict[str, str]) -> dict[str, Any]:
    document: dict[str, Any] = {"managed_by": label}
    for action, word in words.items():
        document[word.replace(" ", "_")] = [
            {
                "name": c.name,
                "id": c.job_id or None,
                **({"fields": sorted(c.patch)} if action == "update" else {}),
                **({"source": c.desired.source} if c.desired else {}),
            }
            for c in changes
            if c.action == action and not c.error
        ]
    document["failed"] = [{"name": c.name, "error": c.error} for c in changes if c.error]
    return document
