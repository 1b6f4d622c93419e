"""What the console says when the API refuses its token (console/assets/console/refusal.js),
run here in Node: the likely cause read from the token (chronoq local's, signed with another
data directory's secret; expired; a Cognito token the API does not take) and how to get a fresh
one. (tests/browser/test_console.py shows it on the sign-in page after a refusal.)"""

from __future__ import annotations

import json
from typing import Any

from chronoq import console
from chronoq import resources as r

from tests.support import run_node

MODULE = (console.ASSETS_DIR / "console" / "refusal.js").as_uri()
NOW_MS = 1_800_000_000_000
LOCAL = {"iss": r.LOCAL_TOKEN_ISSUER, "aud": r.TOKEN_AUDIENCE, "sub": "alice"}
COGNITO = {"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc", "sub": "u-1"}


def _words(claims: dict[str, Any] | None) -> str:
    script = (
        f"import {{ refusalWords }} from {json.dumps(MODULE)};\n"
        f"console.log(JSON.stringify(refusalWords({json.dumps(claims)}, {NOW_MS})));"
    )
    words: str = run_node(script)
    return words


def test_given_a_local_token_not_expired_when_refused_then_another_data_directory_is_named_and_how_to_get_one() -> (
    None
):
    words = _words({**LOCAL, "exp": NOW_MS // 1000 + 3600})

    assert "not signed with this chronoq local's secret" in words
    assert "another data directory" in words
    assert '"chronoq token NAME", run in the directory chronoq local runs in' in words
    assert "$CHRONOQ_DATA_DIR" in words


def test_given_an_expired_local_token_when_refused_then_its_expiry_and_how_to_get_one() -> None:
    words = _words({**LOCAL, "exp": NOW_MS // 1000 - 60})

    assert words.startswith("Your token expired at 2027-01-15T07:59:00Z.")
    assert "chronoq token NAME" in words


def test_given_a_cognito_token_when_refused_then_signing_in_again_and_no_local_advice() -> None:
    assert "chronoq token" not in _words({**COGNITO, "exp": NOW_MS // 1000 + 60})
    assert _words({**COGNITO, "exp": NOW_MS // 1000 - 60}).endswith("Sign in again.")


def test_given_no_token_when_refused_then_it_says_so() -> None:
    assert "missing or not a token" in _words(None)


def test_given_the_module_when_served_then_it_is_javascript() -> None:
    status, headers, _ = console.asset("console/refusal.js")

    assert (status, headers["Content-Type"]) == (200, "text/javascript; charset=utf-8")
