"""The web console in the synthesized stack: its routes on the HTTP API without the authorizer
(the API's own route keeps it), its function that may touch nothing of chronoq's, and the
Cognito hosted UI when the context names a domain prefix."""

from __future__ import annotations

from typing import Any

from chronoq import console

from tests.infra.synthesis import Synthesis, allowed, rendered


def _routes(synth: Synthesis) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in synth.of_type("AWS::ApiGatewayV2::Route").values()
    }


def _integration_function(synth: Synthesis, route: dict[str, Any]) -> str:
    integration_id = route["Target"]["Fn::Join"][1][1]["Ref"]
    uri = synth.resources[integration_id]["Properties"]["IntegrationUri"]
    return str(uri["Fn::GetAtt"][0])


def test_given_the_stack_when_synthesized_then_the_console_routes_skip_the_authorizer_and_the_api_keeps_it(
    synth: Synthesis,
) -> None:
    routes = _routes(synth)
    function = synth.logical_id(synth.stack.console.function)

    assert set(routes) == {"ANY /{proxy+}", "GET /", "GET /console/{proxy+}"}
    assert routes["ANY /{proxy+}"]["AuthorizationType"] == "JWT"
    for key in ("GET /", "GET /console/{proxy+}"):
        assert routes[key]["AuthorizationType"] == "NONE"
        assert _integration_function(synth, routes[key]) == function
    assert _integration_function(synth, routes["ANY /{proxy+}"]) == synth.logical_id(
        synth.stack.api.function
    )


def test_given_the_console_function_when_synthesized_then_it_may_touch_nothing_of_chronoqs(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.console.function)["Properties"]
    actions: set[str] = set()
    for statement in allowed(synth.role_statements(synth.stack.console.function)):
        listed = statement["Action"]
        actions |= set(listed if isinstance(listed, list) else [listed])

    assert props["Handler"] == console.FUNCTION.handler
    assert props["MemorySize"] == console.FUNCTION.memory_mb
    assert props["Layers"] == [synth.ref(synth.stack.layer)]
    # tracing, and its own log group: nothing of chronoq's
    assert actions <= {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert set(props["Environment"]["Variables"]) == {
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
    }
    assert "ConsoleUrl" in synth.template["Outputs"]
    assert not synth.of_type("AWS::Cognito::UserPoolDomain")


def test_given_a_domain_prefix_when_synthesized_then_the_console_signs_in_through_the_hosted_ui(
    tuned: Synthesis,
) -> None:
    hosted_ui = tuned  # (-c console_domain_prefix=chronoq-example)
    (domain,) = hosted_ui.of_type("AWS::Cognito::UserPoolDomain").values()
    (client,) = hosted_ui.of_type("AWS::Cognito::UserPoolClient").values()
    variables = hosted_ui.resource(hosted_ui.stack.console.function)["Properties"]["Environment"][
        "Variables"
    ]

    assert domain["Properties"]["Domain"] == "chronoq-example"
    assert client["Properties"]["AllowedOAuthFlows"] == ["code"]  # with PKCE, by the page
    assert set(client["Properties"]["AllowedOAuthScopes"]) == {"openid", "email"}
    (callback,) = client["Properties"]["CallbackURLs"]
    api = hosted_ui.logical_id(hosted_ui.stack.api.http_api)
    assert rendered(callback) == f"${{{api}.ApiEndpoint}}/"  # the console, on the API
    assert variables[console.ENV_COGNITO_CLIENT_ID] == hosted_ui.ref(hosted_ui.stack.api.client)
    assert ".amazoncognito.com" in rendered(variables[console.ENV_COGNITO_DOMAIN])
