"""``chronoq migrate``: one-off changes a deployment's stored data needs after an upgrade,
run with AWS credentials against its tables (not through the API)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from chronoq.cli import render
from chronoq.cli.errors import API_ERROR

F = TypeVar("F", bound=Callable[..., Any])


def _on_the_jobs_table(command: F) -> F:
    """The options of a command run on a deployment's jobs table."""
    for option in reversed(
        (
            click.option(
                "--jobs-table",
                required=True,
                metavar="NAME",
                help="the deployment's jobs table (stack output, or aws dynamodb list-tables)",
            ),
            click.option("--region", help="its region [default: the AWS configuration's]"),
            click.option(
                "--endpoint-url", metavar="URL", help="another DynamoDB endpoint (chronoq local's)"
            ),
            click.option(
                "-o",
                "--output",
                type=click.Choice(["table", "json"]),
                default="table",
                show_default=True,
            ),
        )
    ):
        command = option(command)
    return command


@click.group()
def migrate() -> None:
    """One-off changes of a deployment's stored data (AWS credentials needed)."""


@migrate.command()
@_on_the_jobs_table
def names(jobs_table: str, region: str | None, endpoint_url: str | None, output: str) -> None:
    """Claim the name of every job stored before names were unique per owner (the oldest
    job of a name gets it), and list the names several jobs of an owner still share: rename
    or delete all but one of each. Safe to run again, and while the API serves. Exits 1
    while duplicates remain."""
    import boto3

    from chronoq.aws.store import DynamoStore
    from chronoq.usecases.names import claim_existing_names

    client = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint_url)
    report = claim_existing_names(DynamoStore(client, jobs_table, ""), datetime.now(UTC))
    if output == "json":
        document = {
            "names": report.names,
            "duplicates": [
                {"owner": d.owner, "name": d.name, "job_ids": list(d.job_ids)}
                for d in report.duplicates
            ],
        }
        click.echo(render.dump_json(document))
    else:
        click.echo(f"{report.names} job names held, one job each")
        for d in report.duplicates:
            click.echo(
                f"duplicate: owner {d.owner!r}, name {d.name!r}: {', '.join(d.job_ids)}"
                f" ({d.job_ids[0]} holds it)"
            )
    if report.duplicates:
        raise click.exceptions.Exit(API_ERROR)


@migrate.command()
@_on_the_jobs_table
def jobs(jobs_table: str, region: str | None, endpoint_url: str | None, output: str) -> None:
    """List the jobs stored before a rule of the API was made stricter that today's rules
    refuse (they still run; a change to one must pass today's rules): each with the fields
    to change and why. Reads only. Exits 1 while any remain."""
    import boto3

    from chronoq.aws.store import DynamoJobs
    from chronoq.usecases.validity import jobs_needing_change

    client = boto3.client("dynamodb", region_name=region, endpoint_url=endpoint_url)
    found = jobs_needing_change(DynamoJobs(client, jobs_table))
    if output == "json":
        document = [
            {
                "owner": n.owner,
                "job_id": n.job_id,
                "name": n.name,
                "problems": [{"field": p.field, "message": p.message} for p in n.problems],
            }
            for n in found
        ]
        click.echo(render.dump_json(document))
    else:
        click.echo(f"{len(found)} stored job(s) today's rules refuse")
        for n in found:
            for p in n.problems:
                click.echo(f"{n.owner!r} {n.job_id} ({n.name!r}): {p.field!r}: {p.message}")
    if found:
        raise click.exceptions.Exit(API_ERROR)
