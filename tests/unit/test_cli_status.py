"""``chronoq status`` against the api function's handler over the fakes: the caller's limits,
the secrets it keeps among them."""

from __future__ import annotations

import json
import re

from chronoq.domain import limits as lim

from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)


def test_given_secrets_kept_when_the_status_is_asked_then_their_limit_shows_with_how_many(
    api: HandlerApi,
) -> None:
    for name in ("crm-token", "api-key"):
        chronoq("secrets", "put", name, stdin="value-of-" + name)

    text = chronoq("status").stdout
    document = json.loads(chronoq("status", "-o", "json").stdout)

    assert text.startswith("heartbeat     missing"), text  # (none on the fakes)
    secrets = f"2 of {lim.DEFAULT_MAX_SECRETS_PER_OWNER}"
    assert re.search(rf"^  secrets per owner\s+{secrets}$", text, re.M), text
    assert re.search(r"^  jobs\s+0 of ", text, re.M), text  # the others still there
    assert document["limits"]["secrets_per_owner"] == {
        "limit": lim.DEFAULT_MAX_SECRETS_PER_OWNER,
        "used": 2,
    }
    assert "value-of-" not in text + json.dumps(document)
