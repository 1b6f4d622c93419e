"""The SSRF guard's pure rules: addresses in every spelling, ranges, allowed networks, and
the call-time check of resolved names (with a stub resolver)."""

from __future__ import annotations

import ipaddress

import pytest
from chronoq.domain.network import OPEN, NetworkPolicy, literal_address
from chronoq.execution.egress import BlockedTarget, Egress

GUARD = NetworkPolicy()


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("169.254.169.254", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("[::ffff:7f00:1]", "127.0.0.1"),
        ("[0:0:0:0:0:ffff:127.0.0.1]", "127.0.0.1"),
        ("[fe80::1%25eth0]", "fe80::1"),
        ("[fd00:ec2::254]", "fd00:ec2::254"),
    ],
)
def test_given_an_address_in_any_spelling_when_read_then_it_is_the_address_it_spells(
    host: str, address: str
) -> None:
    assert literal_address(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.com", "localhost", "1.2.3.example", "0x7g.1"])
def test_given_a_name_when_read_then_it_is_no_address(host: str) -> None:
    assert literal_address(host) is None


@pytest.mark.parametrize("host", ["256.0.0.1", "1.2.3.256", "4294967296", "[::zz]"])
def test_given_a_number_that_is_no_address_when_read_then_it_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match=r"not a valid|[Ee]xpected|does not appear|Only hex"):
        literal_address(host)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0x7f.1:8080/x",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://0/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.1.1/",
        "http://[fd00:ec2::254]/",
        "http://[fc00::1]/",
        "http://[fe80::1]/",
        "http://localhost:8080/",
        "http://api.localhost/",
        "https://256.256.256.256/",
    ],
)
def test_given_the_guard_on_when_a_url_names_a_non_public_address_then_it_is_refused(
    url: str,
) -> None:
    assert GUARD.url_refusal(url)


@pytest.mark.parametrize(
    "url", ["https://example.com/hook", "http://93.184.216.34/", "http://[2606:4700::1111]/"]
)
def test_given_the_guard_on_when_a_url_names_a_public_host_then_it_passes(url: str) -> None:
    assert GUARD.url_refusal(url) is None


def test_given_the_guard_off_when_a_url_names_loopback_then_it_passes() -> None:
    assert OPEN.url_refusal("http://127.0.0.1:8000/") is None


def test_given_an_allowed_network_when_an_address_in_it_is_called_then_it_passes_but_metadata_never() -> (
    None
):
    policy = NetworkPolicy.of(True, ["10.20.0.0/16", "169.254.0.0/16"])

    assert policy.url_refusal("http://10.20.3.4/") is None
    assert policy.url_refusal("http://10.21.3.4/")
    assert policy.url_refusal("http://169.254.169.254/")


def test_given_a_network_that_is_not_one_when_a_policy_is_made_then_it_is_refused() -> None:
    with pytest.raises(ValueError, match=r"10\.0\.0\.0/33"):
        NetworkPolicy.of(True, ["10.0.0.0/33"])


def _egress(*addresses: str) -> Egress:
    return Egress(GUARD, resolve=lambda host, port: list(addresses))


@pytest.mark.parametrize(
    "addresses",
    [("127.0.0.1",), ("93.184.216.34", "10.0.0.5"), ("::1",), ("::ffff:169.254.169.254",)],
)
def test_given_a_name_resolving_to_a_refused_address_when_called_then_the_call_is_refused(
    addresses: tuple[str, ...],
) -> None:
    with pytest.raises(BlockedTarget, match="network policy"):
        _egress(*addresses).address("rebind.example", 80)


def test_given_a_name_resolving_to_public_addresses_when_called_then_the_first_is_used() -> None:
    assert str(_egress("93.184.216.34", "93.184.216.35").address("example.com", 443)) == (
        "93.184.216.34"
    )


def test_given_a_name_that_does_not_resolve_when_called_then_the_call_is_refused() -> None:
    def fail(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(BlockedTarget, match="does not resolve"):
        Egress(GUARD, resolve=fail).address("nowhere.invalid", 80)
