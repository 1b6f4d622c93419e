"""Outgoing HTTP calls of http targets and webhooks, under the deployment's SSRF guard.

With the guard on (or where chronoq has endpoints of its own to keep targets from, chronoq
local), the host is resolved when the call is made (a name's addresses can change
between the job's creation and its runs), every address it resolves to is checked against
the network policy, and the connection goes to the address that was checked (so that a
second resolution cannot answer differently); TLS still verifies the certificate against
the host's name. Redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3

from chronoq.domain.errors import PermanentError
from chronoq.domain.network import OPEN, Address, NetworkPolicy, literal_address
from chronoq.execution import waits

#: Host name, port -> the addresses it resolves to.
Resolve = Callable[[str, int], list[str]]


def system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class BlockedTarget(PermanentError):
    """The URL's host is, or resolves to, an address the SSRF guard refuses (not retried:
    trying again would call the same place)."""


def _pool() -> urllib3.PoolManager:
    return urllib3.PoolManager(retries=False)


@dataclass
class Egress:
    policy: NetworkPolicy = OPEN
    resolve: Resolve = system_resolve
    _http: urllib3.PoolManager = field(default_factory=_pool, repr=False)

    def address(self, host: str, port: int) -> Address:
        """The address to call for ``host``, checked; raises BlockedTarget."""
        try:
            literal = literal_address(host)
        except ValueError as error:
            raise BlockedTarget(f"{host}: {error}") from None
        if literal is not None:
            addresses: list[Address] = [literal]
        else:
            try:
                found = self.resolve(host, port)
            except OSError as error:
                raise BlockedTarget(f"{host} does not resolve: {error}") from None
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
            if not addresses:
                raise BlockedTarget(f"{host} does not resolve")
        for address in addresses:
            refusal = self.policy.call_refusal(address, port)
            if refusal:
                raise BlockedTarget(
                    f"{host} is refused by the deployment's network policy: {refusal}"
                )
        checked = addresses[0]
        if isinstance(checked, ipaddress.IPv6Address) and checked.ipv4_mapped is not None:
            return checked.ipv4_mapped  # (the same socket address)
        return checked

    def request(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None,
        headers: dict[str, str],
        timeout: urllib3.Timeout,
        preload_content: bool = True,
    ) -> Any:
        """One request, no redirect followed, no retry. Raises BlockedTarget before any
        connection when the guard refuses the host, urllib3's errors otherwise."""
        with waits.waiting():
            return self._request(method, url, body, headers, timeout, preload_content)

    def _request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: urllib3.Timeout,
        preload_content: bool,
    ) -> Any:
        if not self.policy.checks_addresses:
            return self._http.request(
                method,
                url,
                body=body,
                headers=headers,
                timeout=timeout,
                redirect=False,
                preload_content=preload_content,
            )
        parts = urlsplit(url)
        host = parts.hostname or ""
        https = parts.scheme == "https"
        default_port = 443 if https else 80
        port = parts.port or default_port
        address = self.address(host, port)
        name = f"[{host}]" if ":" in host else host
        host_header = name if port == default_port else f"{name}:{port}"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        pool: urllib3.HTTPConnectionPool
        if https:
            pool = urllib3.HTTPSConnectionPool(
                str(address),
                port,
                retries=False,
                maxsize=1,
                server_hostname=host,
                assert_hostname=host,
            )
        else:
            pool = urllib3.HTTPConnectionPool(str(address), port, retries=False, maxsize=1)
        return pool.urlopen(
            method,
            path,
            body=body,
            headers={**headers, "Host": host_header},
            timeout=timeout,
            redirect=False,
            retries=False,
            preload_content=preload_content,
            assert_same_host=False,
        )
