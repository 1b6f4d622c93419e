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

#: Ranges that are not the public internet, named in refusals. The guard admits only
#: globally routable addresses (``ipaddress``'s ``is_global``); this table names why an
#: address is not one, and holds ranges some Python versions still call global.
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
        ("192.0.2.0/24", "documentation (TEST-NET-1)"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation (TEST-NET-2)"),
        ("203.0.113.0/24", "documentation (TEST-NET-3)"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible"),
        ("::ffff:0:0:0/96", "IPv4-translated"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing (SRv6)"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)

_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and reaches, if it is one of the forms that
    embed one: IPv4-mapped (``::ffff:a.b.c.d``), IPv4-translated (``::ffff:0:a.b.c.d``),
    IPv4-compatible (``::a.b.c.d``), well-known NAT64 (``64:ff9b::a.b.c.d``), 6to4
    (``2002:AABB:CCDD::``) and Teredo (``2001::/32``, the client's address)."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _IPV4_TRANSLATED or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return ipaddress.IPv4Address(int(address))
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


#: Embedding forms whose own range is as routable as the IPv4 address inside (the others,
#: IPv4-compatible and Teredo, are refused whatever they carry).
_TRANSPARENT = (_NAT64, ipaddress.ip_network("2002::/16"), ipaddress.ip_network("::ffff:0:0/96"))


def _kind(address: Address) -> str | None:
    """What kind of non-global address ``address`` is ("a loopback address (127.0.0.0/8)"),
    its embedded IPv4 address aside; None for a globally routable one."""
    for network, kind in PRIVATE_NETWORKS:
        if network.version == address.version and address in network:
            article = "an" if kind[0].lower() in "aeiou" else "a"
            return f"{article} {kind} address ({network})"
    return None if address.is_global else "not a globally routable address"


def non_global(address: Address) -> str | None:
    """Why ``address`` is not a globally routable address (None: it is one), the IPv4
    address it embeds, if any, judged too."""
    inner = embedded_ipv4(address)
    if inner is not None:
        kind = _kind(inner)
        if kind is not None:
            return f"{address} embeds {inner}, {kind}"
        if any(address in network for network in _TRANSPARENT):
            return None
    kind = _kind(address)
    return None if kind is None else f"{address} is {kind}"


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
        return address.ipv4_mapped or address  # (the same socket address either way)
    return _ipv4(host)


@dataclass(frozen=True)
class OwnEndpoints:
    """The ports chronoq serves on this machine (chronoq local's API and embedded AWS), and
    the machine's own addresses besides loopback: no target or webhook calls them, whatever
    the guard and its allowed networks say."""

    ports: frozenset[int] = frozenset()
    addresses: frozenset[Address] = frozenset()

    @classmethod
    def of(cls, ports: Iterable[int], addresses: Iterable[str]) -> OwnEndpoints:
        return cls(frozenset(ports), frozenset(ipaddress.ip_address(a.strip()) for a in addresses))

    def refusal(self, address: Address, port: int) -> str | None:
        """Why ``address``:``port`` is chronoq itself (None: it is not)."""
        if port not in self.ports:
            return None
        for candidate in (address, embedded_ipv4(address)):
            if candidate is not None and (
                candidate.is_loopback or candidate.is_unspecified or candidate in self.addresses
            ):
                return f"{address} port {port} is chronoq's own endpoint on this machine"
        return None


#: No endpoint of chronoq's on the machines its functions run on (AWS).
NO_OWN_ENDPOINTS = OwnEndpoints()


@dataclass(frozen=True)
class NetworkPolicy:
    """The SSRF guard: with ``block_private`` on, only globally routable addresses may be
    called (see ``non_global``), and those inside ``allowed`` (a deployment's own networks);
    metadata addresses are refused regardless. chronoq's ``own`` endpoints are refused
    whether the guard is on or off."""

    block_private: bool = True
    allowed: tuple[Network, ...] = ()
    own: OwnEndpoints = NO_OWN_ENDPOINTS

    @classmethod
    def of(
        cls, block_private: bool, allowed: Iterable[str], own: OwnEndpoints = NO_OWN_ENDPOINTS
    ) -> NetworkPolicy:
        return cls(block_private, tuple(ipaddress.ip_network(n.strip()) for n in allowed), own)

    @property
    def checks_addresses(self) -> bool:
        """Must each call's address be resolved and checked (the guard is on, or chronoq has
        endpoints of its own here)?"""
        return self.block_private or bool(self.own.ports)

    def call_refusal(self, address: Address, port: int) -> str | None:
        """Why ``address``:``port`` may not be called (None: it may)."""
        return self.own.refusal(address, port) or self.refusal(address)

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` may not be called (None: it may). IPv6 forms that embed an IPv4
        address are judged by it too (see ``embedded_ipv4``)."""
        if not self.block_private:
            return None
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # (the same socket address)
        inner = embedded_ipv4(address)
        for candidate in (address, inner) if inner is not None else (address,):
            if any(candidate in network for network in METADATA_NETWORKS):
                return f"{address} is a cloud metadata address"
        if any(address in network for network in self.allowed):  # (as written: a form
            return None  # embedding an allowed address is allowed only if listed as such)
        return non_global(address)

    def url_refusal(self, url: str) -> str | None:
        """Why a URL whose host is a literal address (or ``localhost``) may not be called
        (None: it may, or its host is a name, checked when it is resolved)."""
        if not self.checks_addresses:
            return None
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return "the URL has an invalid port"
        if host == "localhost" or host.endswith(".localhost"):
            address: Address | None = ipaddress.IPv4Address("127.0.0.1")
            named = f"{host} is a loopback name"
        else:
            try:
                address = literal_address(host)
            except ValueError as error:
                return str(error)
            named = ""
        if address is None:
            return None
        own = self.own.refusal(address, port)
        if own is not None:
            return f"{named}: {own}" if named else own
        if named and self.block_private:
            return named
        return self.refusal(address)


#: The guard off (chronoq local's default: developers call services on their machine).
OPEN = NetworkPolicy(block_private=False)
