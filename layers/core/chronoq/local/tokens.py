"""Local access tokens: JWTs signed with a secret kept in the data directory, checked the
way API Gateway's JWT authorizer checks Cognito's (signature, issuer, audience, expiry).

A token minted with ``admin`` may also use chronoq local's own controls (``/_local/*``: the
ticker, the usage counts); an ordinary one only the API, as its user. The data directory
also keeps the master secret webhook signatures derive from, so that they survive a restart,
and the credentials of the embedded AWS's port."""

from __future__ import annotations

import configparser
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt

from chronoq.local.sigv4 import Credentials
from chronoq.resources import LOCAL_TOKEN_ISSUER, TOKEN_AUDIENCE

SECRET_FILE = "jwt-secret"  # noqa: S105 - a file name
SIGNING_SECRET_FILE = "signing-secret"  # noqa: S105 - a file name
AWS_CREDENTIALS_FILE = "aws-credentials"
#: The profile of the credentials file that holds them.
AWS_PROFILE = "chronoq-local"
DEFAULT_TTL_SECONDS = 7 * 24 * 3600
#: The claim of a token that may use chronoq local's controls.
ADMIN_CLAIM = "chronoq:admin"


def _kept(
    data_dir: Path, name: str, make: Callable[[], str] = lambda: secrets.token_hex(32)
) -> str:
    """A random secret kept in ``data_dir/name``, created on first use by ``make`` (mode
    0600, in a directory of mode 0700 when chronoq creates it)."""
    path = data_dir / name
    if not path.exists():
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it meanwhile
            pass
        else:
            with os.fdopen(descriptor, "w") as file:
                file.write(make())
    return path.read_text().strip()


def _new_aws_credentials() -> str:
    """A credentials file (the AWS CLI's and SDKs' format) with a new key pair."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    key = "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16))
    secret_key = secrets.token_urlsafe(30)
    return f"[{AWS_PROFILE}]\naws_access_key_id = {key}\naws_secret_access_key = {secret_key}\n"


def aws_credentials(data_dir: Path) -> Credentials:
    """The credentials requests to the embedded AWS's port must be signed with: kept in
    ``data_dir/aws-credentials`` as a credentials file whose profile is ``chronoq-local``
    (``AWS_SHARED_CREDENTIALS_FILE=... AWS_PROFILE=chronoq-local``)."""
    parser = configparser.ConfigParser()
    parser.read_string(_kept(data_dir, AWS_CREDENTIALS_FILE, _new_aws_credentials))
    profile = parser[AWS_PROFILE]
    return Credentials(profile["aws_access_key_id"], profile["aws_secret_access_key"])


class NoSecret(Exception):
    """The data directory has no token secret: chronoq local never ran on it."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(f"no {SECRET_FILE} in {data_dir}")
        self.data_dir = data_dir


def secret(data_dir: Path, *, create: bool = True) -> str:
    """The token signing secret of this data directory (``create``: made on first use, as
    chronoq local does at its first start; else NoSecret if there is none: a token signed
    with a secret of its own would be refused by every chronoq local)."""
    if not create and not (data_dir / SECRET_FILE).is_file():
        raise NoSecret(data_dir)
    return _kept(data_dir, SECRET_FILE)


def signing_secret(data_dir: Path) -> str:
    """The master secret of this data directory's webhook signatures (the embedded Secrets
    Manager's secret, as the deployment's is in AWS)."""
    return _kept(data_dir, SIGNING_SECRET_FILE)


def mint(
    data_dir: Path,
    user: str,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    *,
    admin: bool = False,
    create: bool = True,
) -> str:
    """A token for ``user`` signed with the data directory's secret (``create``: see
    ``secret``)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": user,
        "username": user,
        "iss": LOCAL_TOKEN_ISSUER,
        "aud": TOKEN_AUDIENCE,
        "iat": now,
        "exp": now + ttl_seconds,
    }
    if admin:
        claims[ADMIN_CLAIM] = True
    return jwt.encode(claims, secret(data_dir, create=create), algorithm="HS256")


class InvalidToken(Exception):
    pass


def verify(key: str, authorization: str | None) -> dict[str, Any]:
    """The claims of a ``Bearer`` token; InvalidToken if it is missing or not valid."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise InvalidToken("missing bearer token")
    try:
        claims: dict[str, Any] = jwt.decode(
            token.strip(),
            key,
            algorithms=["HS256"],
            audience=TOKEN_AUDIENCE,
            issuer=LOCAL_TOKEN_ISSUER,
            options={"require": ["sub", "exp", "iss", "aud"]},
        )
    except jwt.PyJWTError as error:
        raise InvalidToken(str(error)) from None
    return claims


def is_admin(claims: dict[str, Any]) -> bool:
    """May the holder of a token with these claims use chronoq local's controls?"""
    return claims.get(ADMIN_CLAIM) is True
