"""SSM Parameter Store for chronoq's secrets on disk (chronoq.local.engine.parameters): a file
its user alone may read, kept across a restart of the engine and in its backups; versions,
selectors, SSM's errors, and what the meter and the least-privilege check see of each call
(never a value)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from chronoq import resources as r
from chronoq.aws.secrets import SsmSecretValues
from chronoq.domain.secrets import SecretUnavailable
from chronoq.fakes.clock import FakeClock
from chronoq.local.aws import LOCAL_SECRETS_PATH
from chronoq.local.backup import ENGINE_DIR, backup, restore
from chronoq.local.calls import Call, calls_in
from chronoq.local.clock import LocalClock
from chronoq.local.engine import parameters as engine_parameters
from chronoq.local.engine.parameters import MAX_VERSIONS, LocalParameters
from chronoq.local.engine.services import FILES, PARAMETERS_FILE, Engine
from chronoq.local.lambdas import LambdaRuntime
from chronoq.local.usage import Meter, Usage, calling_as

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
REGION, ACCOUNT = "us-east-1", "123456789012"
#: chronoq local's own path: the calls metered here are recorded with the session's, which
#: the least-privilege check reads as the stack's path.
PATH = LOCAL_SECRETS_PATH
VALUE = "s3cr3t-value-of-alice"


def _parameters(path: Path | None, heard: list[Any] | None = None) -> LocalParameters:
    observer = None if heard is None else (lambda *call: heard.append(call))
    return LocalParameters(path, REGION, ACCOUNT, FakeClock(now=NOW), observer)


@pytest.fixture
def ssm() -> Iterator[LocalParameters]:
    kept = _parameters(None)
    yield kept
    kept.close()


def _engine(directory: Path) -> Engine:
    def embedded(service: str) -> Any:
        raise AssertionError(f"the engine's parameters never call the embedded {service}")

    return Engine(
        directory,
        LocalClock(),
        LambdaRuntime({}, region=REGION, account=ACCOUNT),
        embedded,
        {t.id: t.id for t in r.TABLES},
        REGION,
        ACCOUNT,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_given_an_engine_with_a_directory_when_a_secret_is_put_then_its_file_is_its_users_only_and_the_value_survives_a_restart(
    tmp_path: Path,
) -> None:
    first = _engine(tmp_path)
    values = SsmSecretValues(lambda: first.clients()["ssm"], PATH)
    version = values.put_value("alice", "crm-token", VALUE)
    written = {p.name: _mode(p) for p in tmp_path.iterdir() if p.name.startswith(PARAMETERS_FILE)}
    first.close()

    again = _engine(tmp_path)
    try:
        read = SsmSecretValues(lambda: again.clients()["ssm"], PATH).get_value(
            "alice", "crm-token", version
        )
    finally:
        again.close()

    assert read == VALUE
    assert PARAMETERS_FILE in FILES  # (backed up and restored with the rest)
    assert written[PARAMETERS_FILE] == 0o600
    assert set(written.values()) == {0o600}  # (its WAL and shared memory, as SQLite made them)


def test_given_a_parameters_file_made_readable_by_others_when_the_engine_opens_it_then_it_is_its_users_only_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / PARAMETERS_FILE
    _parameters(path).close()
    path.chmod(0o644)

    _parameters(path).close()

    assert _mode(path) == 0o600


def test_given_a_secret_put_when_the_data_directory_is_backed_up_and_restored_then_its_value_is_there(
    tmp_path: Path,
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    (source / ENGINE_DIR).mkdir(parents=True)
    kept = _parameters(source / ENGINE_DIR / PARAMETERS_FILE)
    version = SsmSecretValues(lambda: kept, PATH).put_value("alice", "tok", VALUE)

    names = backup(source, tmp_path / "backup.tar")
    restore(tmp_path / "backup.tar", target)

    assert f"{ENGINE_DIR}/{PARAMETERS_FILE}" in names
    restored = target / ENGINE_DIR / PARAMETERS_FILE
    assert _mode(restored) == 0o600
    again = _parameters(restored)
    assert SsmSecretValues(lambda: again, PATH).get_value("alice", "tok", version) == VALUE


def test_given_a_parameter_put_more_often_than_ssm_keeps_when_read_then_the_oldest_version_is_gone(
    ssm: LocalParameters,
) -> None:
    for n in range(MAX_VERSIONS + 1):
        answer = ssm.put_parameter(Name="/p/x", Value=f"v{n}", Type="SecureString", Overwrite=True)

    assert answer == {"Version": MAX_VERSIONS + 1, "Tier": "Standard"}
    assert ssm.count() == MAX_VERSIONS
    with pytest.raises(ssm.exceptions.ParameterVersionNotFound):
        ssm.get_parameter(Name="/p/x:1", WithDecryption=True)
    second = ssm.get_parameter(Name="/p/x:2", WithDecryption=True)["Parameter"]
    assert (second["Value"], second["Version"], second["Selector"]) == ("v1", 2, ":2")
    latest = ssm.get_parameter(Name="/p/x", WithDecryption=True)["Parameter"]
    assert (latest["Value"], latest["Version"]) == (f"v{MAX_VERSIONS}", MAX_VERSIONS + 1)


def test_given_a_parameter_deleted_when_put_again_then_its_versions_start_again(
    ssm: LocalParameters,
) -> None:
    for value in ("one", "two"):
        ssm.put_parameter(Name="/p/x", Value=value, Type="SecureString", Overwrite=True)

    ssm.delete_parameter(Name="/p/x")

    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name="/p/x:2", WithDecryption=True)
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.delete_parameter(Name="/p/x")
    assert ssm.put_parameter(Name="/p/x", Value="three", Type="SecureString")["Version"] == 1


def test_given_ssm_errors_when_raised_then_they_are_client_errors_with_ssms_codes(
    ssm: LocalParameters,
) -> None:
    ssm.put_parameter(Name="/p/x", Value="one", Type="SecureString")

    with pytest.raises(ClientError) as missing:
        ssm.get_parameter(Name="/p/nothing")
    with pytest.raises(ssm.exceptions.ParameterAlreadyExists):
        ssm.put_parameter(Name="/p/x", Value="two", Type="SecureString")
    with pytest.raises(ssm.exceptions.ClientError) as invalid:
        ssm.put_parameter(Name="/p/y", Value="x" * 4097, Type="SecureString")

    assert missing.value.response["Error"]["Code"] == "ParameterNotFound"
    assert missing.value.operation_name == "GetParameter"
    assert invalid.value.response["Error"]["Code"] == "ValidationException"


def test_given_a_secure_string_when_read_without_decryption_then_nothing_of_its_value_is_answered(
    ssm: LocalParameters,
) -> None:
    ssm.put_parameter(Name="/p/x", Value=VALUE, Type="SecureString")

    answer = ssm.get_parameter(Name="/p/x")["Parameter"]

    assert answer["Type"] == "SecureString"
    assert VALUE not in str(answer)
    assert answer["ARN"] == f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/p/x"


def test_given_parameters_named_by_their_arns_when_got_together_then_the_missing_ones_are_listed(
    ssm: LocalParameters,
) -> None:
    ssm.put_parameter(Name="/p/x", Value="ex", Type="SecureString")
    arn = ssm.arn("/p/x")

    answer = ssm.get_parameters(Names=[arn, ssm.arn("/p/gone")], WithDecryption=True)

    assert [(p["Name"], p["Value"]) for p in answer["Parameters"]] == [("/p/x", "ex")]
    assert answer["InvalidParameters"] == [ssm.arn("/p/gone")]
    with pytest.raises(ssm.exceptions.ClientError):
        ssm.get_parameters(Names=[arn] * 11)


def test_given_the_engines_ssm_calls_when_metered_then_each_is_the_iam_call_on_the_parameter_and_no_value_is_seen() -> (
    None
):
    usage = Usage()
    meter = Meter(usage, {}, REGION, ACCOUNT)
    heard: list[Any] = []

    def observe(operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        heard.append((operation, request, response))
        meter.observe(operation, request, response)

    ssm = LocalParameters(None, REGION, ACCOUNT, FakeClock(now=NOW), observe)
    values = SsmSecretValues(lambda: ssm, PATH)
    with calling_as("api"):
        version = values.put_value("alice", "tok", VALUE)
    with calling_as("runner"):
        values.get_value("alice", "tok", version)
        with pytest.raises(SecretUnavailable):
            values.get_value("alice", "tok", version + 1)
    with calling_as("api"):
        values.delete_value("alice", "tok")
    ssm.close()

    arn = f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{PATH}/alice/tok"
    assert [operation for operation, _, _ in heard] == [
        "ssm:PutParameter",
        "ssm:GetParameter",
        "ssm:GetParameter",
        "ssm:DeleteParameter",
    ]
    assert VALUE not in str(heard)
    assert usage.requests == {
        "ssm:PutParameter": 1,
        "ssm:GetParameter": 2,
        "ssm:DeleteParameter": 1,
    }
    assert usage.by_caller == {"api": 2, "runner": 2}
    document = usage.document(runs_finished=0)
    assert document["ssm"] == {"requests": 4, "reads": 2, "kms_requests": 3}
    calls = {
        c
        for operation, request, _ in heard
        for c in calls_in("x", operation, request, REGION, ACCOUNT)
    }
    assert calls == {
        Call("x", "ssm:PutParameter", arn),
        Call("x", "ssm:GetParameter", arn),  # (the version selector is not the resource)
        Call("x", "ssm:DeleteParameter", arn),
    }


def test_given_the_ssm_model_when_the_engine_starts_then_it_is_read_only_once_an_error_is_raised(
    ssm: LocalParameters,
) -> None:
    engine_parameters.ssm_errors.cache_clear()

    ssm.put_parameter(Name="/p/x", Value="one", Type="SecureString")
    ssm.get_parameter(Name="/p/x", WithDecryption=True)
    unread = engine_parameters.ssm_errors.cache_info().currsize
    with pytest.raises(ClientError):
        ssm.get_parameter(Name="/p/none")

    assert (unread, engine_parameters.ssm_errors.cache_info().currsize) == (0, 1)
