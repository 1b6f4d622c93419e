"""Local access tokens: JWTs signed with a secret kept in the data directory, checked the
way API Gateway's JWT authorizer checks Cognito's (signature, issuer, audience, expiry)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import jwt

from chronoq.resources import LOCAL_TOKEN_ISSUER, TOKEN_AUDIENCE

SECRET_FILE = "jwt-secret"  # noqa: S105 - a file name
DEFAULT_TTL_SECONDS = 7 * 24 * 3600


def secret(data_dir: Path) -> str:
    """The signing secret of this data directory, created on first use (mode 0600)."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(32))
    return path.read_text().strip()


def mint(data_dir: Path, user: str, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> str:
    now = int(time.time())
    claims = {
        "sub": user,
        "username": user,
        "iss": LOCAL_TOKEN_ISSUER,
        "aud": TOKEN_AUDIENCE,
        "iat": now,
        "exp": now + ttl_seconds,
    }
    return jwt.encode(claims, secret(data_dir), algorithm="HS256")


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
