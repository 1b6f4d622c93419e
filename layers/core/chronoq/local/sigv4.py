"""Who may use the embedded AWS's port: requests signed (Signature Version 4) with the local
deployment's credentials, as AWS itself checks them: the key known, the signature computed
again over the request as received (botocore's own signer) and equal, the time within 15
minutes. Anything else is refused with the error the service would answer."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from email.message import Message
from typing import Any
from xml.sax.saxutils import escape

#: How far a request's time may be from now (AWS: 15 minutes).
MAX_SKEW = datetime.timedelta(minutes=15)

_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/\s,]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)"
    r"/(?P<service>[a-z0-9-]+)/aws4_request,\s*SignedHeaders=(?P<headers>[a-z0-9;_.-]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})\s*$"
)
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: Services that answer in XML: S3 (<Error>), and those of the query protocol (<ErrorResponse>).
_QUERY_SERVICES = frozenset({"sns", "iam", "sts", "ec2", "ses", "email", "cloudformation"})


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused, as AWS names it: ``code`` (e.g. InvalidSignatureException
    for JSON services, SignatureDoesNotMatch for XML ones) and its message."""

    status: int
    code: str
    message: str
    service: str = ""

    def answer(self, headers: Message) -> tuple[int, dict[str, str], bytes]:
        """The refusal in the shape the service answers errors in."""
        code = _xml_codes.get(self.code, self.code) if self._xml(headers) else self.code
        if self.service == "s3":
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{code}</Code><Message>{escape(self.message)}</Message>"
                "<RequestId>chronoq-local</RequestId></Error>"
            )
            return self.status, {"Content-Type": "application/xml"}, body.encode()
        if self._xml(headers):
            body = (
                "<ErrorResponse><Error><Type>Sender</Type>"
                f"<Code>{code}</Code><Message>{escape(self.message)}</Message></Error>"
                "<RequestId>chronoq-local</RequestId></ErrorResponse>"
            )
            return self.status, {"Content-Type": "text/xml"}, body.encode()
        document = {"__type": code, "message": self.message}
        return (
            self.status,
            {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": code},
            json.dumps(document).encode(),
        )

    def _xml(self, headers: Message) -> bool:
        if self.service == "s3" or self.service in _QUERY_SERVICES:
            return True
        if self.service:
            return False
        content_type = str(headers.get("Content-Type", ""))
        return "x-www-form-urlencoded" in content_type and not headers.get("X-Amz-Target")


#: The XML services' names of the same refusals.
_xml_codes = {
    "UnrecognizedClientException": "InvalidClientTokenId",
    "InvalidSignatureException": "SignatureDoesNotMatch",
    "MissingAuthenticationTokenException": "MissingAuthenticationToken",
}


def _refused(code: str, message: str, service: str = "", status: int = 403) -> Refusal:
    if service == "s3":
        code = {
            "UnrecognizedClientException": "InvalidAccessKeyId",
            "MissingAuthenticationTokenException": "AccessDenied",
        }.get(code, code)
    return Refusal(status, code, message, service)


def _when(headers: Message) -> datetime.datetime | None:
    text = headers.get("X-Amz-Date") or ""
    try:
        return datetime.datetime.strptime(text, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def check(
    method: str,
    path: str,
    headers: Message,
    body: bytes,
    credentials: Credentials,
    now: datetime.datetime,
) -> Refusal | None:
    """Why this request (``path``: as received, with its query) is refused (None: it is
    signed with ``credentials``)."""
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    authorization = headers.get("Authorization")
    if not authorization:
        return _refused(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token: the embedded AWS takes requests signed with chronoq"
            " local's credentials (see aws-credentials in its data directory)",
        )
    found = _AUTHORIZATION.match(authorization)
    if found is None:
        return _refused(
            "IncompleteSignatureException",
            "Authorization header requires a Signature Version 4 Credential, SignedHeaders and"
            " Signature",
            status=400,
        )
    service, region = found["service"], found["region"]
    if not hmac.compare_digest(found["key"].encode(), credentials.access_key.encode()):
        return _refused(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
            service,
        )
    when = _when(headers)
    if when is None or found["date"] != when.strftime("%Y%m%d"):
        return _refused(
            "IncompleteSignatureException",
            "X-Amz-Date must be the request's time (YYYYMMDD'T'HHMMSS'Z'), on the date of its"
            " credential scope",
            service,
            400,
        )
    if abs(now - when) > MAX_SKEW:
        return _refused(
            "InvalidSignatureException",
            f"Signature expired: {when:%Y%m%dT%H%M%SZ} is more than 15 minutes from"
            f" {now:%Y%m%dT%H%M%SZ}",
            service,
        )
    signed = found["headers"].split(";")
    declared = headers.get("X-Amz-Content-SHA256", "")
    if _HEX_SHA256.match(declared) and declared != hashlib.sha256(body).hexdigest():
        return _refused(
            "InvalidSignatureException",
            "The provided x-amz-content-sha256 header does not match what was computed.",
            service,
        )
    request = AWSRequest(
        method=method,
        url=f"http://{headers.get('Host', '')}{path}",
        headers={name: ",".join(headers.get_all(name) or []) for name in signed},
        data=body,
    )
    request.context["timestamp"] = headers["X-Amz-Date"]
    signer_class: Any = S3SigV4Auth if service == "s3" else SigV4Auth
    signer = signer_class(
        BotoCredentials(credentials.access_key, credentials.secret_key), service, region
    )
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected.encode(), found["signature"].encode()):
        return _refused(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided."
            " Check your AWS Secret Access Key and signing method.",
            service,
        )
    return None
