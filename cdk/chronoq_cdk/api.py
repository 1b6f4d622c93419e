"""Api: the api function behind an HTTP API whose JWT authorizer trusts a Cognito user pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from aws_cdk import Fn, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .access import TargetAccess
from .functions import python_function
from .notifications import Notifications
from .queues import Queues
from .storage import Storage


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        task_layers: Sequence[lambda_.ILayerVersion],
        environment: Mapping[str, str],
        storage: Storage,
        queues: Queues,
        state_machine: sfn.IStateMachine,
        notifications: Notifications,
        access: TargetAccess,
        burst_limit: int = r.DEFAULT_API_BURST_LIMIT,
        rate_limit: float = r.DEFAULT_API_RATE_LIMIT,
        hosted_ui_prefix: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            r.API_FUNCTION,
            layer=layer,
            extra_layers=task_layers,
            environment=environment,
        )
        storage.jobs.grant_read_write_data(self.function)
        storage.schedule.grant(
            self.function, "dynamodb:PutItem", "dynamodb:BatchWriteItem", "dynamodb:GetItem"
        )
        # Runs are created, read, cancelled (UpdateItem) and, when a pending occurrence is
        # replaced by a schedule change or a pause, forgotten (DeleteItem).
        storage.runs.grant(
            self.function,
            "dynamodb:PutItem",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        queues.grant_send_messages(self.function)
        # POST /runs/{id}/cancel stops the run's execution; it never starts one.
        state_machine.grant_execution(self.function, "states:StopExecution")
        # GET of a run's output and logs reads the objects too large for its record.
        iam.Grant.add_to_principal(
            grantee=self.function,
            actions=["s3:GetObject"],
            resource_arns=[storage.outputs.arn_for_objects("*"), *access.output_object_arns(self)],
        )
        # An owner asks for their webhook signing secret, derived from the deployment's.
        notifications.grant_read_signing_secret(self.function)

        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
        )
        self.http_api = apigwv2.HttpApi(self, "Http", description="chronoq jobs API")
        #: The web console's address (served by the console function on this API).
        self.console_url = f"{self.http_api.api_endpoint}/"
        # With a hosted UI domain (context console_domain_prefix), the console signs users
        # in there and comes back to its own page with an ID token (implicit grant: the page
        # has no server side to redeem a code with).
        o_auth = (
            cognito.OAuthSettings(
                flows=cognito.OAuthFlows(implicit_code_grant=True),
                scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
                callback_urls=[self.console_url],
                logout_urls=[self.console_url],
            )
            if hosted_ui_prefix
            else None
        )
        self.client = self.user_pool.add_client(
            "Client", auth_flows=cognito.AuthFlow(user_srp=True, user_password=True), o_auth=o_auth
        )
        #: The hosted UI's host name, when the stack has one.
        self.hosted_ui_domain: str | None = None
        if hosted_ui_prefix:
            domain = self.user_pool.add_domain(
                "Domain",
                cognito_domain=cognito.CognitoDomainOptions(domain_prefix=hosted_ui_prefix),
            )
            self.hosted_ui_domain = Fn.join(
                "", [domain.domain_name, ".auth.", Stack.of(self).region, ".amazoncognito.com"]
            )
        # Throttling of every route of the default stage, for all callers together: a flood
        # is answered 429 by API Gateway before it reaches the function or the tables.
        stage = self.http_api.default_stage
        assert stage is not None
        cfn_stage = cast(apigwv2.CfnStage, stage.node.default_child)
        cfn_stage.default_route_settings = apigwv2.CfnStage.RouteSettingsProperty(
            throttling_burst_limit=burst_limit, throttling_rate_limit=rate_limit
        )
        self.http_api.add_routes(
            path="/{proxy+}",
            methods=[apigwv2.HttpMethod.ANY],
            integration=integrations.HttpLambdaIntegration("Function", self.function),
            authorizer=authorizers.HttpUserPoolAuthorizer(
                "Users", self.user_pool, user_pool_clients=[self.client]
            ),
        )
