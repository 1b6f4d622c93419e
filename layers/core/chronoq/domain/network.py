"""Which network addresses chronoq may call (http targets, webhooks): the SSRF guard's rules.
Pure: no name is resolved here (see chronoq.execution.egress for the call-time check).

A host may be written as an address in many spellings that resolvers and HTTP clients
accept: ``127.0.0.1``, ``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``, ``[::1]``,
``[::ffff:127.0.0.1]``. ``literal_address`` reads them all (as the C library's
``inet_aton`` and browsers do), so that none slips past the rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The instance metadata services (EC2, ECS/Lambda credentials endpoints, IPv6 IMDS): never
#: reachable while the guard is on, whatever networks a deployment allows.
METADATA_NETWORKS: tuple[Network, ...] = (
    ipaddress.ip_network("169.254.169.254/32"),
    ipaddress.ip_network("169.254.170.2/32"),
    ipaddress.ip_network("fd00:ec2::254/128"),
)

#: Ranges that are not the public internet: refused while the guard is on.
PRIVATE_NETWORKS: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(cidr), kind)
    for cidr, kind in (
        ("0.0.0.0/8", "this-network"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)


def _ipv4_part(text: str) -> int | None:
    """One dot-separated part of an IPv4 address as inet_aton reads it: decimal, ``0x``
    hexadecimal or ``0``-prefixed octal; None if it is not a number."""
    lowered = text.lower()
    try:
        if lowered.startswith("0x"):
            return int(lowered[2:] or "0", 16)
        if len(lowered) > 1 and lowered.startswith("0"):
            return int(lowered[1:], 8)
        return int(lowered, 10) if lowered.isdigit() else None
    except ValueError:
        return None


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` as an IPv4 address in any inet_aton spelling (1 to 4 parts, the last filling
    the remaining bytes), or None if it is not one."""
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]  # a trailing dot ("127.0.0.1.") names the same host
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *leading, last = values
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(values)):
        raise ValueError(f"{host} is not a valid IPv4 address")
    value = 0
    for n in leading:
        value = value * 256 + n
    value = value * 256 ** (5 - len(values)) + last
    return ipaddress.IPv4Address(value)


def literal_address(host: str) -> Address | None:
    """The address ``host`` (a URL's host, brackets removed or not) spells, or None if it is
    a name. Raises ValueError for something that is neither (e.g. ``256.1.1.1``)."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        address = ipaddress.IPv6Address(host.split("%", 1)[0])  # (a zone id names no host)
        mapped = address.ipv4_mapped or address.sixtofour
        return mapped if mapped is not None else address
    return _ipv4(host)


@dataclass(frozen=True)
class NetworkPolicy:
    """The SSRF guard: with ``block_private`` on, addresses in private, loopback,
    link-local, unique-local and other non-public ranges are refused, except those inside
    ``allowed`` (a deployment's own networks); metadata addresses are refused regardless."""

    block_private: bool = True
    allowed: tuple[Network, ...] = ()

    @classmethod
    def of(cls, block_private: bool, allowed: Iterable[str]) -> NetworkPolicy:
        return cls(block_private, tuple(ipaddress.ip_network(n.strip()) for n in allowed))

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` may not be called (None: it may)."""
        if not self.block_private:
            return None
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in METADATA_NETWORKS):
            return f"{address} is a cloud metadata address"
        if any(
            address in network for network in self.allowed if network.version == address.version
        ):
            return None
        for network, kind in PRIVATE_NETWORKS:
            if network.version == address.version and address in network:
                return f"{address} is a {kind} address ({network})"
        return None

    def url_refusal(self, url: str) -> str | None:
        """Why a URL whose host is a literal address may not be called (None: it may, or its
        host is a name, checked when it is resolved)."""
        if not self.block_private:
            return None
        host = urlsplit(url).hostname or ""
        if host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
            return f"{host} is a loopback name"
        try:
            address = literal_address(host)
        except ValueError as error:
            return str(error)
        return None if address is None else self.refusal(address)


#: The guard off (chronoq local's default: developers call services on their machine).
OPEN = NetworkPolicy(block_private=False)
