"""Where the endpoint and token come from: flags, then the environment, then the profile
chronoq login saved, then chronoq local's default address."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from chronoq.cli import config
from chronoq.cli.main import cli, main
from chronoq.local import tokens
from click.testing import CliRunner

SAVED = {
    "current": "dev",
    "profiles": {
        "dev": {"url": "http://profile:1", "token": "t-profile"},
        "prod": {"url": "https://prod", "token": "t-prod"},
    },
}


def _resolve(
    environ: dict[str, str] | None = None, cfg: dict[str, Any] | None = None, **flags: Any
) -> config.Endpoint:
    return config.resolve(
        url=flags.get("url"),
        token=flags.get("token"),
        profile_name=flags.get("profile"),
        environ=environ or {},
        config=SAVED if cfg is None else cfg,
    )


def test_given_flags_env_and_profile_when_resolved_then_flags_win() -> None:
    endpoint = _resolve(
        {"CHRONOQ_URL": "http://env:1", "CHRONOQ_TOKEN": "t-env"},
        url="http://flag:1/",
        token="t-flag",
    )

    assert (endpoint.url, endpoint.token, endpoint.url_source, endpoint.token_source) == (
        "http://flag:1",
        "t-flag",
        "flag",
        "flag",
    )


def test_given_env_and_profile_when_resolved_then_env_wins_over_the_profile() -> None:
    endpoint = _resolve({"CHRONOQ_URL": "http://env:1", "CHRONOQ_TOKEN": "t-env"})

    assert (endpoint.url, endpoint.token) == ("http://env:1", "t-env")


def test_given_the_old_chronoq_api_variable_when_resolved_then_it_still_names_the_url() -> None:
    assert _resolve({"CHRONOQ_API": "http://old:1"}).url == "http://old:1"


def test_given_only_a_profile_when_resolved_then_the_current_one_is_used_unless_another_is_named() -> (
    None
):
    assert (_resolve().url, _resolve().token) == ("http://profile:1", "t-profile")
    assert _resolve(profile="prod").token == "t-prod"
    assert _resolve({"CHRONOQ_PROFILE": "prod"}).url == "https://prod"


def test_given_nothing_when_resolved_then_chronoq_locals_default_address_and_no_token() -> None:
    endpoint = _resolve(cfg={})

    assert (endpoint.url, endpoint.token, endpoint.token_source) == (
        "http://127.0.0.1:8080",
        "",
        "none",
    )


def test_given_no_token_anywhere_when_a_command_calls_the_api_then_it_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHRONOQ_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.delenv("CHRONOQ_TOKEN", raising=False)

    result = CliRunner().invoke(cli, ["jobs", "list"])

    assert result.exit_code == 2
    assert "a token is needed" in result.stderr


def test_given_login_local_when_done_then_the_profile_holds_a_token_for_the_user_and_is_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "conf" / "profile.json"
    monkeypatch.setenv("CHRONOQ_CONFIG", str(path))
    tokens.secret(tmp_path / "data")  # (chronoq local made it at its first start)

    code = main(
        [
            "login",
            "--local",
            "--data-dir",
            str(tmp_path / "data"),
            "--user",
            "alice",
            "--url",
            "http://127.0.0.1:9999",
            "--profile",
            "mine",
        ]
    )

    assert code == 0
    saved = json.loads(path.read_text())
    assert saved["current"] == "mine"
    profile = saved["profiles"]["mine"]
    assert profile["url"] == "http://127.0.0.1:9999"
    assert (
        tokens.verify(tokens.secret(tmp_path / "data"), f"Bearer {profile['token']}")["sub"]
        == "alice"
    )
    assert path.stat().st_mode & 0o777 == 0o600


def test_given_a_pasted_token_when_logged_in_then_it_is_stored_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "profile.json"
    monkeypatch.setenv("CHRONOQ_CONFIG", str(path))

    assert main(["login", "--url", "https://api.example.com/", "--token", "abc.def.ghi"]) == 0

    assert json.loads(path.read_text())["profiles"]["default"] == {
        "url": "https://api.example.com",
        "token": "abc.def.ghi",
    }


def test_given_two_ways_to_log_in_when_given_together_then_it_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHRONOQ_CONFIG", str(tmp_path / "profile.json"))

    assert main(["login", "--local", "--token", "abc"]) == 2


def test_given_a_local_profile_whose_token_has_run_out_when_used_then_a_new_one_is_minted_and_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronoq.cli.common import connect

    path = tmp_path / "profile.json"
    data = tmp_path / "data"
    stale = tokens.mint(data, "alice", ttl_seconds=-10)
    config.save_profile(
        path,
        "default",
        {"url": "http://x:1", "token": stale, "local": {"data_dir": str(data), "user": "alice"}},
    )
    monkeypatch.setenv("CHRONOQ_CONFIG", str(path))
    monkeypatch.delenv("CHRONOQ_TOKEN", raising=False)

    api = connect(None, None, None)

    assert api.token != stale
    assert jwt.decode(api.token, options={"verify_signature": False})["exp"] > time.time()
    assert json.loads(path.read_text())["profiles"]["default"]["token"] == api.token
