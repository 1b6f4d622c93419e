"""Typed settings of the Lambda functions, read from the environment when asked for."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from chronoq import resources as r


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    jobs_table: str = ""
    schedule_table: str = ""
    runs_table: str = ""
    queue_urls: dict[str, str] = Field(default_factory=dict)
    state_machine_arn: str = ""
    shards: int = Field(default=r.DEFAULT_SHARDS, ge=1, le=1000)
    output_bucket: str = ""
    #: Other buckets an output_location may name; None: any.
    output_buckets: frozenset[str] | None = frozenset()
    topic_arn: str = ""
    signing_secret_arn: str = ""
    email_sender: str = ""
    container_log_group: str = ""
    container_execution_role_arn: str = ""
    container_task_role_arn: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            jobs_table=env.get(r.ENV_JOBS_TABLE, ""),
            schedule_table=env.get(r.ENV_SCHEDULE_TABLE, ""),
            runs_table=env.get(r.ENV_RUNS_TABLE, ""),
            queue_urls={p: env[name] for p, name in r.ENV_QUEUE_URLS.items() if name in env},
            state_machine_arn=env.get(r.ENV_STATE_MACHINE_ARN, ""),
            shards=int(env.get(r.ENV_SHARDS, r.DEFAULT_SHARDS)),
            output_bucket=env.get(r.ENV_OUTPUT_BUCKET, ""),
            output_buckets=_buckets(env.get(r.ENV_OUTPUT_BUCKETS, "")),
            topic_arn=env.get(r.ENV_TOPIC_ARN, ""),
            signing_secret_arn=env.get(r.ENV_SIGNING_SECRET_ARN, ""),
            email_sender=env.get(r.ENV_EMAIL_SENDER, ""),
            container_log_group=env.get(r.ENV_CONTAINER_LOG_GROUP, ""),
            container_execution_role_arn=env.get(r.ENV_CONTAINER_EXECUTION_ROLE_ARN, ""),
            container_task_role_arn=env.get(r.ENV_CONTAINER_TASK_ROLE_ARN, ""),
        )


def _buckets(value: str) -> frozenset[str] | None:
    if value.strip() == "*":
        return None
    return frozenset(b.strip() for b in value.split(",") if b.strip())
