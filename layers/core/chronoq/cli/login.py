"""``chronoq login`` / ``logout``: save (or forget) an endpoint and token as a profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from chronoq.cli import config
from chronoq.cli.jobspec import parse_duration


@click.command()
@click.option(
    "--profile",
    default=config.DEFAULT_PROFILE,
    show_default=True,
    help="name to save it as (and make current)",
)
@click.option(
    "--url",
    metavar="URL",
    help="the API's base URL [default with --local: where the chronoq local running on"
    " --data-dir answers, as its local.json there says]",
)
@click.option(
    "--local", "is_local", is_flag=True, help="chronoq local: mint a token from its data directory"
)
@config.data_dir_option("with --local: chronoq local's data directory")
@click.option(
    "--user", default="local-user", show_default=True, help="with --local: the user to act as"
)
@click.option(
    "--ttl",
    default="7d",
    show_default=True,
    help="with --local: how long the token is valid (renewed when it runs out)",
)
@click.option(
    "--token", metavar="TOKEN", help="a token to store as it is (e.g. a Cognito ID token)"
)
@click.option(
    "--client-id", metavar="ID", help="Cognito user-pool app client (stack output UserPoolClientId)"
)
@click.option("--username", metavar="NAME", help="with --client-id: the Cognito user")
@click.option("--password", metavar="PASSWORD", help="with --client-id [default: asked for]")
@click.option(
    "--region",
    metavar="REGION",
    envvar=["AWS_REGION", "AWS_DEFAULT_REGION"],
    help="with --client-id: the user pool's region [default: $AWS_REGION]",
)
def login(
    profile: str,
    url: str | None,
    is_local: bool,
    data_dir: Path,
    user: str,
    ttl: str,
    token: str | None,
    client_id: str | None,
    username: str | None,
    password: str | None,
    region: str | None,
) -> None:
    """Save an endpoint and a token as a profile, used when no flag or environment variable
    names them.

    \b
    chronoq login --local [--data-dir .chronoq] [--user alice]
    chronoq login --url https://abc.execute-api.eu-west-1.amazonaws.com --token eyJ...
    chronoq login --url https://... --client-id 1a2b3c --username alice --region eu-west-1
    """
    ways = [
        w
        for w, given in (("--local", is_local), ("--token", token), ("--client-id", client_id))
        if given
    ]
    if len(ways) != 1:
        raise click.UsageError("give one of --local, --token, --client-id")
    saved: dict[str, Any]
    if is_local:
        from chronoq.local import instance, tokens

        try:
            seconds = parse_duration(ttl)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--ttl") from None
        directory = data_dir.resolve()
        try:  # (whoever reads the secret may mint any token: the profile is an admin's)
            minted = tokens.mint(directory, user, seconds, admin=True, create=False)
        except tokens.NoSecret:
            raise config.no_local_data(directory) from None
        if not url:
            try:
                url = instance.find(directory).url
            except instance.NotRunning as why:
                raise click.ClickException(
                    f"{why}: start it (chronoq local --data-dir {directory}, or make run"
                    " PORT=...), or give the URL it answers at with --url"
                ) from None
        saved = {
            "url": url.rstrip("/"),
            "token": minted,
            "local": {"data_dir": str(directory), "user": user},
        }
        who = user
    else:
        if not url:
            raise click.UsageError("--url is needed (the stack output ApiUrl)")
        if token:
            saved, who = {"url": url.rstrip("/"), "token": token.strip()}, "the token's user"
        else:
            if not username:
                raise click.UsageError("--client-id needs --username")
            if not region:
                raise click.UsageError("--client-id needs --region (or $AWS_REGION)")
            secret = password or click.prompt("password", hide_input=True)
            assert client_id is not None  # one of the ways, checked above
            result = config.cognito_auth(
                client_id, region, "USER_PASSWORD_AUTH", {"USERNAME": username, "PASSWORD": secret}
            )
            saved = {
                "url": url.rstrip("/"),
                "token": result["IdToken"],
                "cognito": {
                    "client_id": client_id,
                    "region": region,
                    "refresh_token": result.get("RefreshToken", ""),
                },
            }
            who = username
    path = config.config_path()
    config.save_profile(path, profile, saved)
    click.echo(f"logged in to {saved['url']} as {who}: profile {profile!r} in {path}", err=True)


@click.command()
@click.option("--profile", default=None, help="the profile to forget [default: the current one]")
def logout(profile: str | None) -> None:
    """Forget a saved profile (its token with it)."""
    path = config.config_path()
    name = profile or config.read_config(path).get("current")
    if not name or not config.remove_profile(path, name):
        raise click.UsageError(
            f"no profile {name!r} in {path}" if name else f"no current profile in {path}"
        )
    click.echo(f"forgot profile {name!r}", err=True)
