"""Where the API is and which token to send: flags, then the environment, then the profile
``chronoq login`` saved, then chronoq local's default address.

Profiles live in one JSON file, ``profile.json`` in the user's config directory
(``~/.config/chronoq`` on Linux), or wherever ``CHRONOQ_CONFIG`` points::

    {"current": "default",
     "profiles": {"default": {"url": "http://127.0.0.1:8080", "token": "eyJ...",
                              "local": {"data_dir": "/abs/.chronoq", "user": "alice"}}}}

A profile may say how to renew its token: ``local`` (mint again from chronoq local's data
directory) or ``cognito`` (``client_id``, ``region``, ``refresh_token``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_PROFILE = "default"
URL_ENV = "CHRONOQ_URL"
#: The name earlier versions read the URL from (``runs logs``, ``cost``); still honoured.
LEGACY_URL_ENV = "CHRONOQ_API"
TOKEN_ENV = "CHRONOQ_TOKEN"  # noqa: S105 - an environment variable's name
PROFILE_ENV = "CHRONOQ_PROFILE"
CONFIG_ENV = "CHRONOQ_CONFIG"
#: chronoq local's data directory (its --data-dir), for chronoq local, token and login --local.
DATA_DIR_ENV = "CHRONOQ_DATA_DIR"
#: Its default, relative to the directory chronoq local is started in.
DEFAULT_DATA_DIR = Path(".chronoq")
_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])


def data_dir_option(
    what: str = "chronoq local's data directory",
) -> Callable[[_Decorated], _Decorated]:
    """The ``--data-dir`` option of every command that reads chronoq local's data directory
    (``$CHRONOQ_DATA_DIR`` when not given)."""
    return click.option(
        "--data-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=DEFAULT_DATA_DIR,
        show_default=True,
        envvar=DATA_DIR_ENV,
        help=f"{what} [env: {DATA_DIR_ENV}]",
    )


#: Endpoint.url_source / token_source of a value the profile gave.
FROM_PROFILE = "profile"
#: A token expiring sooner than this is renewed first, if its profile says how.
RENEW_MARGIN_SECONDS = 60


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    return Path(click.get_app_dir("chronoq")) / "profile.json"


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"profiles": {}}
    try:
        document = json.loads(path.read_text())
    except ValueError as error:
        raise click.ClickException(f"{path} is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        return {"profiles": {}}
    document.setdefault("profiles", {})
    return document


def save_profile(path: Path, name: str, profile: dict[str, Any]) -> None:
    """Store ``profile`` as ``name`` and make it the current one (the file is private: 0600)."""
    document = read_config(path)
    document["profiles"][name] = profile
    document["current"] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(json.dumps(document, indent=2) + "\n")


def remove_profile(path: Path, name: str) -> bool:
    document = read_config(path)
    if name not in document["profiles"]:
        return False
    del document["profiles"][name]
    if document.get("current") == name:
        document.pop("current", None)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return True


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str
    #: Where each came from: "flag", "env", "profile" or "default" (and "none" for no token).
    url_source: str
    token_source: str
    profile_name: str | None = None
    profile: Mapping[str, Any] | None = None


def resolve(
    *,
    url: str | None,
    token: str | None,
    profile_name: str | None,
    environ: Mapping[str, str],
    config: Mapping[str, Any],
) -> Endpoint:
    """The endpoint and token to use. Each is taken from the first of: its flag, its
    environment variable, the profile (``--profile``, else ``CHRONOQ_PROFILE``, else the
    current one), chronoq local's default (URL only)."""
    profiles: Mapping[str, Any] = config.get("profiles") or {}
    name = profile_name or environ.get(PROFILE_ENV) or config.get("current")
    if name and name not in profiles and (profile_name or environ.get(PROFILE_ENV)):
        raise click.UsageError(f"no profile {name!r}: create it with chronoq login --profile")
    profile: Mapping[str, Any] = profiles.get(name, {}) if name else {}

    def pick(flag: str | None, env: str | None, saved: Any, default: str) -> tuple[str, str]:
        if flag:
            return flag, "flag"
        if env:
            return env, "env"
        if saved:
            return str(saved), FROM_PROFILE
        return default, "default" if default else "none"

    env_url = environ.get(URL_ENV) or environ.get(LEGACY_URL_ENV)
    chosen_url, url_source = pick(url, env_url, profile.get("url"), DEFAULT_URL)
    chosen_token, token_source = pick(token, environ.get(TOKEN_ENV), profile.get("token"), "")
    return Endpoint(
        url=chosen_url.rstrip("/"),
        token=chosen_token,
        url_source=url_source,
        token_source=token_source,
        profile_name=name if profile else None,
        profile=profile or None,
    )


def expires_soon(token: str, now: float | None = None) -> bool:
    """Does the JWT expire within RENEW_MARGIN_SECONDS (read, not verified)?"""
    import jwt

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    expiry = claims.get("exp")
    if not isinstance(expiry, int | float):
        return False
    return float(expiry) - (time.time() if now is None else now) < RENEW_MARGIN_SECONDS


def no_local_data(data_dir: Path) -> click.ClickException:
    """The refusal to mint a token from a directory chronoq local never ran on: a secret made
    here would sign tokens every chronoq local refuses."""
    return click.ClickException(
        f"no chronoq local data in {data_dir}: it has no jwt-secret, the secret chronoq local"
        " signs and checks tokens with (a token signed with another secret is refused)."
        " chronoq local creates it at its first start and keeps its data in its --data-dir:"
        f" by default {DEFAULT_DATA_DIR} in the directory it is started in (make run: the"
        f" repository's), or ${DATA_DIR_ENV}. Run this command in the directory chronoq local"
        f" runs in, or point at its data directory with --data-dir or ${DATA_DIR_ENV}."
    )


def renewed_token(profile: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A fresh token for a profile that says how to get one, and the profile to save; None
    if it says nothing of the kind."""
    if isinstance(profile.get("local"), dict):
        from chronoq.local import tokens

        local = profile["local"]
        # whoever reads the data directory can mint any token: its profile is chronoq local's admin
        data_dir = Path(local["data_dir"])
        try:
            token = tokens.mint(data_dir, str(local["user"]), admin=True, create=False)
        except tokens.NoSecret:
            raise no_local_data(data_dir) from None
        return token, {**profile, "token": token}
    if isinstance(profile.get("cognito"), dict):
        cognito = profile["cognito"]
        answer = cognito_auth(
            cognito["client_id"],
            cognito["region"],
            "REFRESH_TOKEN_AUTH",
            {"REFRESH_TOKEN": cognito["refresh_token"]},
        )
        return answer["IdToken"], {**profile, "token": answer["IdToken"]}
    return None


def cognito_auth(
    client_id: str, region: str, flow: str, parameters: dict[str, str]
) -> dict[str, str]:
    """Cognito's InitiateAuth (no AWS credentials needed): the AuthenticationResult."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client(
        "cognito-idp", region_name=region, config=Config(signature_version=UNSIGNED)
    )
    try:
        answer = client.initiate_auth(
            ClientId=client_id,
            AuthFlow=flow,
            AuthParameters=parameters,
        )
    except ClientError as error:
        raise click.ClickException(
            f"Cognito refused: {error.response['Error']['Message']}"
        ) from None
    except BotoCoreError as error:
        raise click.ClickException(f"cannot reach Cognito: {error}") from None
    if "AuthenticationResult" not in answer:
        challenge = answer.get("ChallengeName", "a challenge")
        raise click.ClickException(
            f"Cognito asks for {challenge}: complete it once (e.g. in the hosted UI), then log in"
        )
    result = answer["AuthenticationResult"]
    return {k: str(v) for k, v in result.items() if isinstance(v, str)}
