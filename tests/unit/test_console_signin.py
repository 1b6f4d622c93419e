"""The console's sign-in through Cognito's hosted UI: the authorization code grant with PKCE
(RFC 7636), done by the page itself (console/assets/console/pkce.js), run here in Node against
a token endpoint that records what it is sent."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from chronoq import console

from tests.support import run_node

MODULE = (console.ASSETS_DIR / "console" / "pkce.js").as_uri()
COGNITO = {"domain": "acme.auth.eu-west-1.amazoncognito.com", "client_id": "abc123"}
REDIRECT = "https://api.example.com/"

#: Runs ``steps`` (an async function body) with the module as ``pkce``, a storage, and a fetch
#: that records its requests and answers ``answer``; prints what the body returns as JSON.
SCRIPT = """
import * as pkce from %(module)s;
const kept = new Map();
const storage = { getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, v),
                  removeItem: (k) => kept.delete(k) };
const sent = [];
const answer = %(answer)s;
const fetchFn = async (url, init) => { sent.push({ url, ...init });
  return { ok: answer.status === 200, status: answer.status, json: async () => answer.body }; };
const cognito = %(cognito)s, redirect = %(redirect)s;
const result = await (async () => { %(steps)s })();
console.log(JSON.stringify(result));
"""


def _node(steps: str, answer: dict[str, Any] | None = None) -> Any:
    script = SCRIPT % {
        "module": json.dumps(MODULE),
        "answer": json.dumps(answer or {"status": 200, "body": {"id_token": "ID.TOKEN.X"}}),
        "cognito": json.dumps(COGNITO),
        "redirect": json.dumps(REDIRECT),
        "steps": steps,
    }
    return run_node(script)


def test_given_a_verifier_when_hashed_then_its_challenge_is_its_sha256_in_base64url() -> None:
    verifier = "dBjftJeZ4CVP-mpOgh5ZzcEYFmLspWp1mq1QZbsSZlw"
    digest = hashlib.sha256(verifier.encode()).digest()

    challenge = _node(f"return pkce.challengeOf({json.dumps(verifier)});")

    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_given_a_sign_in_when_redirected_then_the_code_is_redeemed_with_the_kept_verifier() -> None:
    result = _node(
        """
        const url = new URL(await pkce.authorizeUrl(cognito, redirect, storage));
        const pending = JSON.parse(storage.getItem(pkce.PENDING_KEY));
        const token = await pkce.redeem(cognito, redirect,
          `?code=C0DE&state=${url.searchParams.get("state")}`, storage, fetchFn);
        return { url: url.href, query: Object.fromEntries(url.searchParams), pending,
                 expected: await pkce.challengeOf(pending.verifier), token, sent,
                 left: storage.getItem(pkce.PENDING_KEY) };
        """
    )
    query, pending = result["query"], result["pending"]
    (request,) = result["sent"]
    form = dict(pair.split("=", 1) for pair in request["body"].split("&"))

    assert result["url"].startswith(f"https://{COGNITO['domain']}/oauth2/authorize?")
    assert query["response_type"] == "code"  # not the implicit grant's "token"
    assert query["code_challenge_method"] == "S256"
    assert query["code_challenge"] == result["expected"]
    assert query["client_id"] == COGNITO["client_id"]
    assert query["state"] == pending["state"]
    assert len(pending["verifier"]) == 43
    assert request["url"] == f"https://{COGNITO['domain']}/oauth2/token"
    assert request["method"] == "POST"
    assert form["grant_type"] == "authorization_code"
    assert form["code"] == "C0DE"
    assert form["code_verifier"] == pending["verifier"]
    assert form["client_id"] == COGNITO["client_id"]
    assert result["token"] == "ID.TOKEN.X"
    assert result["left"] is None  # redeemed once


def test_given_an_answer_this_page_did_not_ask_for_when_redeemed_then_refused_unsent() -> None:
    result = _node(
        """
        await pkce.authorizeUrl(cognito, redirect, storage);
        try { await pkce.redeem(cognito, redirect, "?code=C0DE&state=forged", storage, fetchFn); }
        catch (error) { return { error: error.message, sent }; }
        return { sent };
        """
    )

    assert "not asked for" in result["error"]
    assert result["sent"] == []


def test_given_a_refused_code_when_redeemed_then_the_page_says_so() -> None:
    result = _node(
        """
        const url = new URL(await pkce.authorizeUrl(cognito, redirect, storage));
        try { await pkce.redeem(cognito, redirect,
                `?code=C0DE&state=${url.searchParams.get("state")}`, storage, fetchFn); }
        catch (error) { return { error: error.message }; }
        return {};
        """,
        answer={"status": 400, "body": {"error": "invalid_grant"}},
    )

    assert "HTTP 400" in result["error"]


def test_given_a_page_opened_without_a_code_when_redeemed_then_nothing_happens() -> None:
    assert _node('return pkce.redeem(cognito, redirect, "", storage, fetchFn);') is None


STATUS = (console.ASSETS_DIR / "console" / "status.js").as_uri()


@pytest.mark.parametrize(
    ("beat", "text"),
    [
        (
            {
                "state": "ok",
                "last_success": {"status": "SUCCEEDED", "lag_ms": 1234},
                "seconds_since_success": 41.2,
            },
            "heartbeat ok: last run succeeded, 1,234 ms late, 41 s ago",
        ),
        (
            {"state": "missing", "last_success": None, "seconds_since_success": None},
            "heartbeat missing: no run has succeeded yet",
        ),
    ],
)
def test_given_the_heartbeats_status_when_shown_in_the_console_then_it_reads_as_it_goes(
    beat: dict[str, Any], text: str
) -> None:
    script = (
        f"import {{ heartbeatText }} from {json.dumps(STATUS)};"
        f"console.log(JSON.stringify(heartbeatText({json.dumps(beat)})));"
    )

    assert run_node(script) == text
