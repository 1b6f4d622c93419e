"""Page tokens: where the next page of a listing starts, sealed for one owner and one listing.
Pure.

A listing answers at most ``limit`` items and, when more may follow, a ``next_token``. The
token holds the position the store resumes from (keys of the owner's own items: a job's
creation time and id, a run's id), and must neither show them nor be usable by anyone else:

- the position (compact JSON) is encrypted with a keystream of HMAC-SHA256 blocks over a
  random 16-byte nonce and a counter (counter mode with HMAC as the pseudo-random function);
- the version, nonce and ciphertext are authenticated, together with the owner and the
  listing (which list, of which job, with which filters), by HMAC-SHA256 truncated to 16
  bytes (encrypt-then-MAC);
- both keys derive from the deployment's master secret (the one webhook signing secrets
  derive from), under labels of their own.

The token is ``base64url(version | nonce | ciphertext | tag)``. A token altered, forged,
issued to another owner or for another listing fails the tag check and is refused. Only the
standard library is used: the Lambda layer carries no native dependency.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence

_VERSION = b"\x01"
_NONCE_BYTES = 16
_TAG_BYTES = 16
#: Longest token accepted (a position is a few keys: far shorter).
MAX_TOKEN_CHARS = 1024


class BadToken(ValueError):
    """A token that was not issued by this deployment for this owner and listing."""


def _key(master: str, label: str) -> bytes:
    return hmac.new(master.encode(), f"chronoq-page-token:{label}".encode(), "sha256").digest()


def _crypt(master: str, nonce: bytes, data: bytes) -> bytes:
    """``data`` XOR the keystream of ``nonce`` (encrypts and decrypts)."""
    key = _key(master, "enc")
    blocks = (
        hmac.new(key, nonce + n.to_bytes(4, "big"), hashlib.sha256).digest()
        for n in range(len(data) // 32 + 1)
    )
    return bytes(a ^ b for a, b in zip(data, b"".join(blocks), strict=False))


def _tag(master: str, owner: str, listing: str, body: bytes) -> bytes:
    bound = json.dumps([owner, listing]).encode() + b"\x00" + body
    return hmac.new(_key(master, "mac"), bound, hashlib.sha256).digest()[:_TAG_BYTES]


def seal(master: str, owner: str, listing: str, position: Sequence[str]) -> str:
    """The token of ``position`` in ``listing`` of ``owner``."""
    plain = json.dumps(list(position), separators=(",", ":")).encode()
    nonce = secrets.token_bytes(_NONCE_BYTES)
    body = _VERSION + nonce + _crypt(master, nonce, plain)
    token = body + _tag(master, owner, listing, body)
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode()


def open_token(master: str, owner: str, listing: str, token: str) -> tuple[str, ...]:
    """The position ``token`` holds, if this deployment issued it to ``owner`` for
    ``listing``; else BadToken."""
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise BadToken("malformed")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise BadToken("malformed") from None
    if len(raw) < 1 + _NONCE_BYTES + _TAG_BYTES or raw[:1] != _VERSION:
        raise BadToken("malformed")
    body, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(master, owner, listing, body)):
        raise BadToken("not issued for this listing")
    nonce, cipher = body[1 : 1 + _NONCE_BYTES], body[1 + _NONCE_BYTES :]
    position = json.loads(_crypt(master, nonce, cipher))
    if not isinstance(position, list) or not all(isinstance(p, str) for p in position):
        raise BadToken("malformed")  # (authentic, so never: a guard for future versions)
    return tuple(position)
