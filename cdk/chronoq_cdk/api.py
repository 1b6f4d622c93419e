"""Api: the api function behind an HTTP API whose JWT authorizer trusts a Cognito user pool."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from aws_cdk import ArnFormat, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .access import TargetAccess
from .functions import LOG_RETENTION, python_function
from .notifications import Notifications
from .queues import Queues
from .rules import acknowledge, grant_wildcards
from .storage import OBJECTS_REASON, Storage, grant_index_query, grant_items

#: Why a grant on a state machine's executions names them with a wildcard.
EXECUTIONS_REASON = (
    "Executions are named by their run's id (one per run): the grant names the state"
    " machine's executions, not one of them."
)


def executions_of(machine: sfn.StateMachine) -> str:
    """The ARN pattern of every execution of ``machine``."""
    return Stack.of(machine).format_arn(
        service="states",
        resource="execution",
        resource_name=f"{machine.state_machine_name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


#: One line per request in the API's access log group (HTTP API context variables).
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "method": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "user": "$context.authorizer.claims.sub",
}


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
        state_machine: sfn.StateMachine,
        notifications: Notifications,
        access: TargetAccess,
        burst_limit: int = r.DEFAULT_API_BURST_LIMIT,
        rate_limit: float = r.DEFAULT_API_RATE_LIMIT,
        hosted_ui_prefix: str | None = None,
        mfa_required: bool = False,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            r.API_FUNCTION,
            layer=layer,
            extra_layers=task_layers,
            environment=environment,
            no_dead_letters="API Gateway invokes it synchronously: the caller gets its answer.",
        )
        # Jobs (and idempotency keys, items of the same table): created, read, counted per
        # owner, changed, deleted; listed through the owner index (keys only), then read; the
        # silent ones through the silent index. A job's secrets are noted in a transaction
        # that checks (ConditionCheckItem) that its owner has them; a secret is forgotten in
        # one that checks no job names it.
        grant_items(
            self.function,
            storage.jobs,
            "dynamodb:PutItem",
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:ConditionCheckItem",
            "dynamodb:Query",
            indexes=[r.JOBS_BY_OWNER_INDEX, r.JOBS_SILENT_INDEX],
        )
        # A job's next occurrence is written to the time index; whether its minute was
        # already dispatched is read there (and, if its run cannot be sent, reopened).
        grant_items(
            self.function,
            storage.schedule,
            "dynamodb:BatchWriteItem",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
        )
        # Runs are created, read, cancelled (UpdateItem) and, when a pending occurrence is
        # replaced by a schedule change or a pause, forgotten (DeleteItem); a cancelled run
        # that held flow slots without starting wakes the runs parked on them (the waiting
        # index). A backfill is kept there too: made (PutItem) and ended (UpdateItem) in one
        # transaction with its owner's usage item (jobs table); an owner's running backfills
        # are read together (BatchGetItem) to know the fire times they hold.
        grant_items(
            self.function,
            storage.runs,
            "dynamodb:PutItem",
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        grant_index_query(self.function, storage.runs, r.RUNS_WAITING_INDEX)
        # Jobs' audit trails are only ever added to and read: an entry is written with a
        # PartiQL INSERT, which fails on a key that exists; nothing may change or delete one
        # (no PutItem, UpdateItem, DeleteItem, BatchWriteItem, PartiQLUpdate or PartiQLDelete).
        grant_items(self.function, storage.audit, "dynamodb:PartiQLInsert", "dynamodb:Query")
        queues.grant_send_messages(self.function)
        # POST /runs/{id}/cancel stops the run's execution; it never starts one.
        grant_wildcards(
            self.function,
            ["states:StopExecution"],
            [executions_of(state_machine)],
            EXECUTIONS_REASON,
        )
        # GET of a run's output and logs reads the objects too large for its record.
        grant_wildcards(
            self.function,
            ["s3:GetObject"],
            [storage.outputs.arn_for_objects("*"), *access.output_object_arns(self)],
            OBJECTS_REASON,
        )
        # An owner asks for their webhook signing secret, derived from the deployment's.
        notifications.grant_read_signing_secret(self.function)

        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            password_policy=cognito.PasswordPolicy(
                min_length=r.MIN_PASSWORD_LENGTH,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            # a second factor (an authenticator app) for whoever sets one up; required for
            # every user with the deployment setting mfa_required
            mfa=cognito.Mfa.REQUIRED if mfa_required else cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
        )
        if not mfa_required:
            acknowledge(
                self.user_pool,
                "AwsSolutions-COG2",
                "MFA is optional by default (each user may set up an authenticator app);"
                " deploy with -c mfa_required=true to require it of every user.",
            )
        acknowledge(
            self.user_pool,
            "AwsSolutions-COG8",
            "The Plus feature plan (threat protection) is billed per monthly active user; a"
            " deployment that wants it turns it on in the user pool.",
        )
        self.http_api = apigwv2.HttpApi(self, "Http", description="chronoq jobs API")
        #: The web console's address (served by the console function on this API).
        self.console_url = f"{self.http_api.api_endpoint}/"
        # With a hosted UI domain (context console_domain_prefix), the console signs users
        # in there with the authorization code grant and PKCE (the page exchanges the code
        # for tokens itself: a public client, no secret). Without one, OAuth is off: no
        # callback URL at all.
        o_auth = (
            cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
                callback_urls=[self.console_url],
                logout_urls=[self.console_url],
            )
            if hosted_ui_prefix
            else None
        )
        # Only the flows chronoq's clients use: the command line signs in with a user name
        # and password (USER_PASSWORD_AUTH) and renews with the refresh token (always on);
        # the console through the hosted UI. An unknown user and a wrong password get the
        # same answer.
        self.client = self.user_pool.add_client(
            "Client",
            auth_flows=cognito.AuthFlow(user_password=True),
            o_auth=o_auth,
            disable_o_auth=not hosted_ui_prefix,
            prevent_user_existence_errors=True,
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
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
        # One line per request (who, what, how it ended), kept a month.
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn,
            format=json.dumps(ACCESS_LOG_FORMAT, separators=(",", ":")),
        )
        self.http_api.add_routes(
            path="/{proxy+}",
            methods=[apigwv2.HttpMethod.ANY],
            integration=integrations.HttpLambdaIntegration("Function", self.function),
            authorizer=authorizers.HttpUserPoolAuthorizer(
                "Users", self.user_pool, user_pool_clients=[self.client]
            ),
        )
