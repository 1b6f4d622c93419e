"""An owner as one segment of a path: an SSM parameter's (owners' secrets, see
chronoq.aws.secrets) and an S3 key's (the archive's partitions, see chronoq.domain.archive).

Owners are whatever the token's ``sub`` claim holds (a Cognito user's UUID, chronoq local's
user names): an owner made of letters, digits, ``_``, ``-`` and ``.`` (not first) is its
own segment; any other (``/``, ``=``, spaces, non-ASCII letters, or one that could be taken
for a digest) is written ``h.<digest>``, so that no two owners share a segment and no owner
can name another's path. Pure: no I/O."""

from __future__ import annotations

import hashlib
import re

#: An owner that can be a path segment as it is.
_PLAIN_OWNER = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$")
#: What begins the segment of any other owner (a digest of it).
DIGEST_PREFIX = "h."


def owner_segment(owner: str) -> str:
    """The path segment of ``owner``: the owner itself when it may be one, else a digest of
    it (no two owners share one)."""
    if _PLAIN_OWNER.fullmatch(owner) and not owner.startswith(DIGEST_PREFIX):
        return owner
    return DIGEST_PREFIX + hashlib.sha256(owner.encode()).hexdigest()[:40]
