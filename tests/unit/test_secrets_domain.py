"""The placeholder language and what the domain says about secrets: one pass, references
only where they belong, scrubbing every form a value takes, plain credentials recognised."""

from __future__ import annotations

import pytest
from chronoq.domain import secrets
from chronoq.domain.jobs import JobSpec
from chronoq.domain.secrets import SecretRef


def test_given_a_value_holding_a_placeholder_when_rendered_then_it_stays_text() -> None:
    values = {"a": "{{ secret.b }}", "b": "never"}

    rendered = secrets.render(
        "x={{ secret.a }} y={{secret.b}} z={{ user.name }}", values.__getitem__
    )

    assert rendered == "x={{ secret.b }} y=never z={{ user.name }}"


def test_given_a_target_when_its_secrets_are_named_then_references_and_placeholders_count_and_body_objects_do_not() -> (
    None
):
    spec = JobSpec.model_validate(
        {
            "name": "n",
            "schedule": {"type": "rate", "every": "1 hour"},
            "target": {
                "type": "http",
                "url": "https://x.example.com/p?k={{ secret.q }}",
                "headers": {"A": {"secret": "h"}, "B": "Bearer {{ secret.p }}"},
                "body": {"data": {"secret": "not-a-reference"}, "s": ["{{ secret.b }}"]},
            },
            "notify": {
                "webhook": "https://h.example.com",
                "webhook_headers": {"W": {"secret": "w"}},
            },
        }
    )

    assert spec.secret_names() == {"q", "h", "p", "b", "w"}
    assert isinstance(spec.target.headers["A"], SecretRef)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "value",
    ["tok3n-v@lue", 'quo"te\\back', "spa ce/ü&"],
)
def test_given_a_value_in_any_form_when_scrubbed_then_none_is_left(value: str) -> None:
    import json
    from urllib.parse import quote

    text = f"raw {value} json {json.dumps(value)} url {quote(value, safe='')}"

    scrubbed = secrets.scrub(text, [value])

    assert value not in scrubbed
    assert json.dumps(value)[1:-1] not in scrubbed
    assert quote(value, safe="") not in scrubbed
    assert scrubbed.count(secrets.MASK) == 3


def test_given_values_one_inside_another_when_scrubbed_then_the_longer_is_masked_whole() -> None:
    assert secrets.scrub("k=abcdef", ["abc", "abcdef"]) == "k=***"


@pytest.mark.parametrize(
    ("headers", "found"),
    [
        (
            {"Authorization": "Bearer xyz"},
            ["target.headers.Authorization holds a plain credential"],
        ),
        ({"authorization": "Bearer {{ secret.t }}"}, []),
        ({"X-Api-Key": {"secret": "t"}}, []),
        (
            {"X-Anything": "AKIAABCDEFGHIJKLMNOP"},
            ["target.headers.X-Anything looks like an AWS access key id"],
        ),
        ({"X-Trace": "abc-123"}, []),
    ],
)
def test_given_headers_when_checked_for_credentials_then_plain_ones_are_named(
    headers: dict[str, object], found: list[str]
) -> None:
    assert secrets.credential_warnings(headers, "target.headers") == found
