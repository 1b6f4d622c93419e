"""Console: the web console on the HTTP API itself, so that page and API share one origin (no
CORS, no second distribution): ``GET /`` and ``GET /console/{proxy+}`` go, without the
authorizer, to a small function that answers the static files and the console's settings.
It reads nothing of chronoq's; every call the page makes goes through the authorized routes
with the signed-in user's token."""

from __future__ import annotations

from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from chronoq import console
from constructs import Construct

from .api import Api
from .functions import python_function
from .rules import acknowledge

#: The routes of the console (more specific than the API's ``ANY /{proxy+}``).
ROUTES = ("/", "/console/{proxy+}")


class Console(Construct):
    def __init__(
        self, scope: Construct, id: str, *, layer: lambda_.ILayerVersion, api: Api
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            console.FUNCTION,
            layer=layer,
            environment={},
            no_dead_letters="API Gateway invokes it synchronously: the browser gets its answer.",
        )
        if api.hosted_ui_domain is not None:
            self.function.add_environment(console.ENV_COGNITO_DOMAIN, api.hosted_ui_domain)
            self.function.add_environment(
                console.ENV_COGNITO_CLIENT_ID, api.client.user_pool_client_id
            )
        integration = integrations.HttpLambdaIntegration("Function", self.function)
        self.routes = [
            route
            for path in ROUTES
            for route in api.http_api.add_routes(
                path=path, methods=[apigwv2.HttpMethod.GET], integration=integration
            )
        ]
        for route in self.routes:
            acknowledge(
                route,
                "AwsSolutions-APIG4",
                "The console's routes serve its static page and files, which hold no data:"
                " every call the page makes goes to the API's routes with the user's token.",
            )
        self.url = api.console_url
