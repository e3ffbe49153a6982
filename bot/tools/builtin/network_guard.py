"""The network guard of ``http_fetch``: which addresses a fetch may reach, and pinning.

Every hop (the first URL and each redirect) is vetted after DNS resolution: if any address
the host resolves to is loopback, link-local (including the 169.254.169.254 cloud metadata
endpoint), private, unique-local, carrier-grade NAT, multicast, unspecified, reserved or
otherwise not globally routable, the fetch is refused, unless the host name or that address is
in ``tools.http_fetch.allow_hosts`` (host names, IP addresses or CIDR networks). IPv4 addresses
embedded in IPv6 (mapped, 6to4, Teredo) are checked as IPv4.

The connection is then pinned: :class:`bot.tools.builtin.page_fetch.PinnedResolver` hands
aiohttp only the vetted addresses, so a second DNS answer (rebinding) can never redirect the
socket elsewhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from yarl import URL

from bot.tools.builtin.observation import ToolFailed, ToolRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

HostResolver = Callable[[str, int], Awaitable[list[str]]]
"""``async (host, port) -> [ip, ...]``; raises ``OSError`` when the name does not resolve."""


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (``getaddrinfo``), addresses in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    found: list[str] = []
    for info in infos:
        address = str(info[4][0]).split("%", 1)[0]
        if address not in found:
            found.append(address)
    return found


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
    return None


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched by default, or None for a public unicast address."""
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return forbidden_reason(embedded)
    checks = (
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "non-public"),
    )
    for hit, reason in checks:
        if hit:
            return reason
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowList:
    """``tools.http_fetch.allow_hosts``: exact host names and IP networks."""

    hosts: frozenset[str]
    networks: tuple[IPNetwork, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().strip("[]").rstrip(".").lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry)
        return cls(hosts=frozenset(hosts), networks=tuple(networks))

    def allows_host(self, host: str) -> bool:
        return host.rstrip(".").lower() in self.hosts

    def allows_ip(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)


@dataclass(frozen=True, slots=True, kw_only=True)
class VettedTarget:
    """A host and the addresses it may be reached at, for one hop."""

    host: str
    port: int
    addresses: tuple[str, ...]


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


class NetworkGuard:
    """Vets URLs before a connection is made. ``resolver`` is injectable for tests."""

    def __init__(
        self, allow_hosts: Iterable[str], *, resolver: HostResolver = system_resolver
    ) -> None:
        self._allow = AllowList.parse(allow_hosts)
        self._resolve = resolver

    async def vet(self, url: URL) -> VettedTarget:
        """Resolve ``url``'s host and check every address; raises :class:`ToolRefused` for a
        forbidden scheme or address and :class:`ToolFailed` when the host does not resolve."""
        if url.scheme not in ("http", "https"):
            raise ToolRefused(f"only http and https URLs can be fetched, not {url.scheme!r}")
        host = url.raw_host
        if not host or url.port is None:
            raise ToolFailed(f"{url} has no host")
        port = url.port
        literal = _parse_ip(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = await self._resolve(host, port)
            except OSError as exc:
                raise ToolFailed(f"cannot resolve {host}: {exc}") from None
        if not addresses:
            raise ToolFailed(f"cannot resolve {host}: no addresses")
        host_allowed = self._allow.allows_host(host)
        for address in addresses:
            ip = _parse_ip(address)
            if ip is None:
                raise ToolFailed(f"resolver returned a non-address for {host}: {address!r}")
            if host_allowed or self._allow.allows_ip(ip):
                continue
            reason = forbidden_reason(ip)
            if reason is not None:
                raise ToolRefused(
                    f"{host} resolves to a {reason} address ({ip}); internal addresses are "
                    "not fetched unless listed in tools.http_fetch.allow_hosts"
                )
        return VettedTarget(host=host, port=port, addresses=tuple(addresses))
