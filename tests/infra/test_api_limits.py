"""The HTTP API's throttling and the limits and SSRF guard the functions are given, as the
synthesized template has them: by default, and as the app's context sets them."""

from __future__ import annotations

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq_cdk.stack import ChronoqStack

from tests.infra.synthesis import Synthesis


def _stage_throttling(synth: Synthesis) -> dict[str, object]:
    (stage,) = synth.of_type("AWS::ApiGatewayV2::Stage").values()
    settings: dict[str, object] = stage["Properties"]["DefaultRouteSettings"]
    return settings


def _variables(synth: Synthesis, function: str) -> dict[str, str]:
    construct = synth.stack.functions[function]
    variables: dict[str, str] = synth.resource(construct)["Properties"]["Environment"]["Variables"]
    return variables


def test_given_the_default_deployment_when_synthesized_then_the_api_stage_is_throttled(
    synth: Synthesis,
) -> None:
    assert _stage_throttling(synth) == {
        "ThrottlingBurstLimit": r.DEFAULT_API_BURST_LIMIT,
        "ThrottlingRateLimit": r.DEFAULT_API_RATE_LIMIT,
    }


def test_given_the_default_deployment_when_synthesized_then_the_ssrf_guard_is_on_where_urls_are_called(
    synth: Synthesis,
) -> None:
    for function in ("api", "runner", "notifier"):
        variables = _variables(synth, function)
        assert variables[r.ENV_BLOCK_PRIVATE_TARGETS] == "true"
        assert variables[r.ENV_ALLOWED_TARGET_NETWORKS] == ""
    assert _variables(synth, "api")[r.ENV_MAX_JOBS_PER_OWNER] == str(lim.DEFAULT_MAX_JOBS_PER_OWNER)


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    app = App(outdir=str(tmp_path_factory.mktemp("limits")))
    stack = ChronoqStack(
        app,
        "Chronoq",
        allowed_target_networks=["10.20.0.0/16"],
        max_jobs_per_owner=50,
        api_burst_limit=20,
        api_rate_limit=5,
    )
    return Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})


def test_given_limits_in_the_context_when_synthesized_then_the_stage_and_functions_have_them(
    configured: Synthesis,
) -> None:
    assert _stage_throttling(configured) == {"ThrottlingBurstLimit": 20, "ThrottlingRateLimit": 5}
    assert _variables(configured, "api")[r.ENV_MAX_JOBS_PER_OWNER] == "50"
    assert _variables(configured, "runner")[r.ENV_ALLOWED_TARGET_NETWORKS] == "10.20.0.0/16"


def test_given_an_allowed_network_that_is_not_one_when_synthesized_then_it_is_refused(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    app = App(outdir=str(tmp_path_factory.mktemp("bad")))
    with pytest.raises(ValueError, match="allowed_target_networks"):
        ChronoqStack(app, "Chronoq", allowed_target_networks=["10.0.0.0/33"])
