"""tests/contract/test_secret_values.py on the engine (see conftest)."""

from __future__ import annotations

import uuid

from chronoq.aws import clients
from chronoq.local.aws import LocalAWS

from tests.contract.test_secret_values import *  # noqa: F403


def test_given_chronoq_local_on_its_engine_when_a_function_reaches_ssm_then_the_engines_parameters_answer(
    local_aws: LocalAWS,
) -> None:
    """The functions' SSM client (chronoq.aws.clients.client("ssm"), what compose builds
    SsmSecretValues on) is the engine's, not the embedded AWS's."""
    assert local_aws.services is not None
    parameters = local_aws.services.parameters
    name = f"/chronoq/local/secrets/{uuid.uuid4().hex}/tok"

    clients.client("ssm").put_parameter(Name=name, Value="v" * 8, Type="SecureString")

    assert clients.client("ssm") is parameters
    assert parameters.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"] == "v" * 8
