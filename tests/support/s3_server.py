"""A real S3 API server for the tests: moto's standalone server on loopback, with IAM credentials
enforced (so wrong keys are refused as by AWS). Started once per session."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.services import free_port, missing_service, venv_executable, wait_listening

_UNAUTHENTICATED_SETUP_CALLS = 3  # create_user, put_user_policy, create_access_key; then keys are checked


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
        )

    def new_bucket(self) -> str:
        name = f"mcp-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    executable = venv_executable("moto_server")
    if executable is None:
        missing_service("moto's S3 server", "pip install 'moto[server]'")
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(_UNAUTHENTICATED_SETUP_CALLS)}
    process = subprocess.Popen(
        [str(executable), "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port)
        endpoint = f"http://127.0.0.1:{port}"
        yield S3Server(endpoint, *_admin_keys(endpoint))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _admin_keys(endpoint: str) -> tuple[str, str]:
    import boto3

    iam = boto3.client(
        "iam", endpoint_url=endpoint, aws_access_key_id="setup", aws_secret_access_key="setup", region_name="us-east-1"
    )
    iam.create_user(UserName="mcp-tests")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="mcp-tests", PolicyName="all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="mcp-tests")["AccessKey"]
    return str(key["AccessKeyId"]), str(key["SecretAccessKey"])
