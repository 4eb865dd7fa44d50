"""One pooled `httpx.AsyncClient` per provider endpoint, kept for the daemon's life.

Building an AsyncClient costs tens of milliseconds (most of it the SSL context), and a fresh
client also means a fresh TCP and TLS handshake: per model request, that was most of a turn's
fixed cost. An `HttpClients` pool keeps one client per endpoint (scheme, host, port) so that
connections are reused across requests and turns, and closes them all at shutdown.

The pool is injected, never global: the composition root (pi_rpc/cli.py) makes the daemon's one
pool, the model choice (`ModelChoice.http`) carries it into every request's `StreamOptions.http`,
and the composition root closes it on the daemon's way out. Two daemons in one process therefore
never share a connection. Unit tests hand a pool an `httpx.MockTransport`; a request that names no
pool gets one of its own (pi_rpc/ai/http.py).

Timeouts are per request (`request_timeout`), not per client, because they are stream options.
httpx is imported on first use: the daemon need not load it before the first model request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HttpClients",
    "PoolClosedError",
    "endpoint_key",
    "request_timeout",
]

# Keep-alive connections idle longer than this are dropped by the pool (servers commonly close at
# 60-120 s; closing first avoids most writes into a connection the server already closed).
KEEPALIVE_EXPIRY_S = 30.0
CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
POOL_TIMEOUT_S = 10.0


class PoolClosedError(RuntimeError):
    """A request after the pool was closed (the daemon is exiting)."""


Endpoint = tuple[str, str, int | None]
TransportFactory = Callable[[], "httpx.AsyncBaseTransport"]


def endpoint_key(url: str) -> Endpoint:
    """What one pooled client serves: the scheme, host and port of a URL."""
    import httpx

    parsed = httpx.URL(url)
    return parsed.scheme, parsed.host, parsed.port


def request_timeout(idle_timeout: float) -> httpx.Timeout:
    # `read` bounds the gap between two chunks, which is what "the stream went quiet" means.
    import httpx

    return httpx.Timeout(connect=CONNECT_TIMEOUT_S, read=idle_timeout, write=WRITE_TIMEOUT_S, pool=POOL_TIMEOUT_S)


class HttpClients:
    """Clients by endpoint. `transport` (a factory, called once per endpoint) replaces the network,
    for tests. After `aclose` the pool refuses new requests: nothing reopens a socket while the
    daemon exits."""

    def __init__(
        self, *, transport: TransportFactory | None = None, keepalive_expiry: float = KEEPALIVE_EXPIRY_S
    ) -> None:
        self._transport = transport
        self._keepalive_expiry = keepalive_expiry
        self._clients: dict[Endpoint, httpx.AsyncClient] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._clients)

    def client_for(self, url: str) -> httpx.AsyncClient:
        if self._closed:
            raise PoolClosedError("the HTTP client pool is closed (the daemon is exiting)")
        key = endpoint_key(url)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self._create(key)
        return client

    def _create(self, key: Endpoint) -> httpx.AsyncClient:
        import httpx

        limits = httpx.Limits(keepalive_expiry=self._keepalive_expiry)
        transport = self._transport() if self._transport is not None else None
        # A client serves one endpoint and never follows redirects, so a plain-http client never
        # speaks TLS: skip loading the CA bundle (tens of ms, on the first request of a local model).
        verify = key[0] == "https"
        # Redirects are not followed: an API never needs one, and following it could send the key
        # elsewhere. Each request sets its own timeout; this default only covers a stray request.
        return httpx.AsyncClient(
            timeout=request_timeout(120.0), limits=limits, transport=transport, follow_redirects=False, verify=verify
        )

    async def aclose(self) -> None:
        """Close every client (and with it every pooled connection); shielded and bounded, so it
        completes while the caller is being cancelled."""
        self._closed = True
        clients, self._clients = list(self._clients.values()), {}
        with anyio.move_on_after(5, shield=True):
            for client in clients:
                await client.aclose()
