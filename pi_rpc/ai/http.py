"""Provider HTTP core: client factory, retrying send, HTTP error text, SSE iteration, and the
request-to-message driver (`stream_sse`) every HTTP provider ends with.

Every provider streams over the same pieces, so every provider fails the same way: an HTTP error
becomes readable text (the provider's own JSON message when it sent one), 429/5xx/529 are retried
with exponential backoff that honours `retry-after` (not a 5xx whose body says the request is
invalid: that cannot succeed on retry), and each retry is announced through the
builder (`auto_retry_start` / `auto_retry_end`). API keys are scrubbed from every text produced
here (`pi_rpc/ai/redact.py`), the builder scrubs every error text of the message with the same
secrets, and nothing here logs headers or bodies.

Cancellation is never caught: leaving `open_stream` by cancellation closes the response at once,
which closes the TCP connection because the body was not read to its end.

Requests go through the pooled clients of `pi_rpc/ai/clients.py` (one per endpoint, for the
daemon's life). A pooled connection the server closed while it sat idle fails before any response
arrives; such a request is sent once more at once, without counting as a retry. The retry policy
(`StreamOptions.max_retries`, `retry_base_ms`) and the idle timeout are options of each request;
`pi_rpc.ai.provider.retry_base_from_env` reads `PI_RPC_RETRY_BASE_MS` when the daemon builds its
settings.
"""

from __future__ import annotations

import email.utils
import importlib.util
import logging
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import aclosing, asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import httpx
import msgspec
from httpx_sse import ServerSentEvent, SSEError

from pi_rpc.ai.clients import HttpClients, PoolClosedError, request_timeout
from pi_rpc.ai.provider import DEFAULT_RETRY_BASE_MS, NOT_RETRIED_NOTE, StreamOptions, backoff_ms
from pi_rpc.ai.redact import redact, request_secrets
from pi_rpc.ai.sse import MAX_SSE_LINE_BYTES, SSELineTooLong, aiter_sse_bytes
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage

_log = logging.getLogger(__name__)


def _remember_missing(module: str) -> None:
    """Make a failing `import module` fail at once: with None in `sys.modules` it raises without
    searching every path entry again."""
    if module not in sys.modules and importlib.util.find_spec(module) is None:
        sys.modules[module] = None  # type: ignore[assignment]  # the import system's "known absent"


# httpcore tries `import sniffio` each time it sets up a connection-pool lock, four times per
# request; anyio 4 no longer installs sniffio, and each failed search cost ~0.13 ms of a turn.
_remember_missing("sniffio")

DEFAULT_RETRY_BASE_DELAY_MS = DEFAULT_RETRY_BASE_MS
# A server asking to wait longer than this is not retried: the error is reported instead.
MAX_RETRY_DELAY_MS = 60_000
# Multiplies every real sleep (not the reported delay); tests set it near zero.
RETRY_TIME_SCALE = 1.0

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_MAX_BODY_IN_ERROR = 500
_MAX_INVALID_SCAN = 4096


class ProviderError(Exception):
    """A request failed for good; `str(exc)` is the text for the assistant message."""


def create_client(idle_timeout: float, *, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """A one-off AsyncClient with the request timeouts (tests of `open_stream`); requests of the
    daemon use the pooled clients. Redirects are not followed (an API never needs them, and
    following one could send the key elsewhere)."""
    return httpx.AsyncClient(timeout=request_timeout(idle_timeout), transport=transport, follow_redirects=False)


def join_url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + "/" + path.lstrip("/")


# --- error text ---------------------------------------------------------------------------------


def error_message_from_body(body: bytes | str) -> str | None:
    """The human message inside a provider's JSON error body, if any.

    Shapes seen: Anthropic `{"type":"error","error":{"type","message"}}`, OpenAI
    `{"error":{"message"}}`, Ollama/llama.cpp `{"error":"..."}`, FastAPI/vLLM `{"detail":...}`,
    others `{"message":"..."}`; some servers wrap it in a one-element list.
    """
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if value:
            return msgspec.json.encode(value).decode()
    return None


def http_error_text(response: httpx.Response, secrets: Iterable[str | None] = ()) -> str:
    """`"<status> <reason>: <provider message>"` from a response whose body has been read."""
    head = f"{response.status_code} {response.reason_phrase}".strip()
    body = response.content
    message = error_message_from_body(body)
    if message is None:
        message = body.decode("utf-8", "replace").strip()[:_MAX_BODY_IN_ERROR]
    text = f"{head}: {message}" if message else head
    return redact(text, secrets)


def display_url(url: httpx.URL | str) -> str:
    """Where a request went, for error text: without query, fragment or credentials (a key can
    travel in any of them)."""
    return str(httpx.URL(url).copy_with(query=None, fragment=None, userinfo=b""))


def transport_error_text(
    exc: Exception, secrets: Iterable[str | None] = (), *, url: str | None = None, received: int | None = None
) -> str:
    """Readable text for a failure below HTTP (connect, read timeout, dropped stream, bad SSE):
    what happened, to which URL (when known), and how far into the response (`received` bytes
    of body; None when no response had begun)."""
    detail = str(exc)
    where = url or "the server"
    after = "before a response arrived" if received is None else f"after {received} bytes of the response"
    if isinstance(exc, httpx.ReadTimeout):
        text = f"Request timed out: no data received from the server ({where}, {after})"
    elif isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        text = f"Connection timed out: could not connect to {where}"
    elif isinstance(exc, httpx.ConnectError):
        text = f"Connection error: could not connect to {where}" + (f": {detail}" if detail else "")
    elif isinstance(exc, httpx.RemoteProtocolError):
        text = f"Connection closed before the response completed: {where} closed it {after}" + (
            f": {detail}" if detail else ""
        )
    elif isinstance(exc, httpx.ReadError | httpx.WriteError):
        midway = "mid-stream " if received else ""
        text = f"Connection to {where} was reset {midway}{after}" + (f": {detail}" if detail else "")
    elif isinstance(exc, SSELineTooLong):
        text = f"{detail[:1].upper()}{detail[1:]} ({where}, {after})"
    elif isinstance(exc, SSEError):
        text = f"Malformed event stream from {where}: {detail}"
    else:
        text = f"{type(exc).__name__} ({where}, {after})" + (f": {detail}" if detail else "")
    return redact(text, secrets)


# --- retry --------------------------------------------------------------------------------------


def retry_after_ms(headers: httpx.Headers) -> int | None:
    """The server's requested wait: `retry-after-ms`, or `retry-after` in seconds or as a date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0, int(float(raw_ms)))
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0, int(float(raw) * 1000))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0, int((when.timestamp() - time.time()) * 1000))


# Words of a server error that blames the request: sending it again cannot succeed.
_INVALID_REQUEST_WORDS = ("invalid", "validation", "must be", "not supported", "unsupported")


def is_invalid_request(status: int, body: bytes) -> bool:
    """A 5xx whose body says the request itself is wrong (llama-cpp-python answers 500 to a
    message shape it refuses; llama.cpp's server says `"type":"invalid_request_error"` or a 4xx
    `code`): final, not retried. 408/409/429 are about timing and are always retried, and so are
    502-504, which a gateway answers for a server it could not reach, whatever its words."""
    if status != 500:
        return False
    text = body[:_MAX_INVALID_SCAN].decode("utf-8", "replace").lower()
    if any(word in text for word in _INVALID_REQUEST_WORDS):
        return True
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    return isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 500 and code not in (408, 409, 429)


async def _sleep_ms(delay_ms: int) -> None:
    await anyio.sleep(delay_ms / 1000 * RETRY_TIME_SCALE)


async def _close(response: httpx.Response) -> None:
    # Shielded and bounded: closing must happen even while the caller is being cancelled.
    with anyio.move_on_after(5, shield=True):
        await response.aclose()


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    request: httpx.Request,
    builder: AssistantBuilder,
    *,
    max_retries: int,
    secrets: Iterable[str | None] = (),
    base_delay_ms: int = DEFAULT_RETRY_BASE_DELAY_MS,
) -> AsyncIterator[httpx.Response]:
    """Send `request` (streaming), retrying 429/5xx/529 and failed connects with backoff.

    Yields the first response with a status below 400. Raises `ProviderError` when the request
    fails for good. Retry events go through `builder.retry_start/retry_end`: one start per retry,
    and one end once a retried request got through or the retries ran out. A connection that
    dies before any response (a pooled one the server closed) is tried once more, at once.
    """
    secrets = tuple(secrets)
    attempt = 0
    resent_dead_connection = False
    while True:
        server_delay: int | None = None
        try:
            response = await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            error, retryable = transport_error_text(exc, secrets, url=display_url(request.url)), True
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if resent_dead_connection:
                raise
            resent_dead_connection = True
            _log.info("connection closed before a response (%s); sending the request once more", type(exc).__name__)
            continue
        else:
            if response.status_code < 400:
                if attempt:
                    builder.retry_end(True, attempt)
                try:
                    yield response
                finally:
                    await _close(response)
                return
            try:
                await response.aread()
            except httpx.HTTPError:
                pass  # the status alone still makes a readable error
            finally:
                await _close(response)
            error = http_error_text(response, secrets)
            retryable = response.status_code in RETRYABLE_STATUS
            if retryable and is_invalid_request(response.status_code, response.content):
                retryable, error = False, f"{error} ({NOT_RETRIED_NOTE})"
            server_delay = retry_after_ms(response.headers)
        delay = backoff_ms(attempt + 1, base_delay_ms) if server_delay is None else server_delay
        if not retryable or attempt >= max_retries or delay > MAX_RETRY_DELAY_MS:
            if attempt:
                builder.retry_end(False, attempt, error)
            raise ProviderError(error)
        attempt += 1
        _log.info("request failed (%s), retry %d/%d in %d ms", error, attempt, max_retries, delay)
        builder.retry_start(attempt, max_retries, delay, error)
        await _sleep_ms(delay)


async def aiter_sse(
    response: httpx.Response, secrets: Iterable[str | None] = (), max_line_bytes: int = MAX_SSE_LINE_BYTES
) -> AsyncGenerator[ServerSentEvent, None]:
    """The response's server-sent events (`pi_rpc.ai.sse`: never `aiter_lines`, which also splits
    on U+2028; a line longer than `max_line_bytes` raises `SSELineTooLong`). A 2xx body that is
    not an event stream is a `ProviderError` carrying the server's message: some compatible
    servers answer errors with status 200 and a JSON body."""
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type and content_type != "text/event-stream":
        await response.aread()
        message = error_message_from_body(response.content)
        if message is None:
            snippet = response.content.decode("utf-8", "replace").strip()[:_MAX_BODY_IN_ERROR]
            message = f"Expected an event stream, got {content_type!r}" + (f": {snippet}" if snippet else "")
        raise ProviderError(redact(message, secrets))
    # A server that omits the content-type header still streams SSE.
    events = aiter_sse_bytes(response.aiter_bytes(), max_line_bytes)
    try:
        async for event in events:
            yield event
    finally:
        await events.aclose()


def failure_text(
    exc: Exception, secrets: Iterable[str | None] = (), *, url: str | None = None, received: int | None = None
) -> str:
    """The assistant-message error text for anything a provider's stream can raise. A
    `ProviderError` raised by a provider's own event handling (an error event mid-stream) may
    quote the key too: it is scrubbed like the rest."""
    if isinstance(exc, ProviderError):
        return redact(str(exc), secrets)
    return transport_error_text(exc, secrets, url=url, received=received)


STREAM_ERRORS: tuple[type[Exception], ...] = (
    ProviderError,
    httpx.HTTPError,
    httpx.StreamError,
    SSEError,
    SSELineTooLong,
    PoolClosedError,
)
# The SSE loop yields to the event loop at least this often, so requests from the editor are
# answered while a stream of tiny events pours in (a 64 KiB read can hold thousands of them).
EVENTS_PER_CHECKPOINT = 64


# After the event that ends a message, the rest of the body (the `[DONE]` or the chunked
# terminator) is read for at most this long, so that the connection goes back to the pool.
DRAIN_SECONDS = 0.5
DRAIN_EVENTS = 16


# --- the provider driver ------------------------------------------------------------------------


async def _drain(events: AsyncGenerator[ServerSentEvent, None]) -> None:
    """Read what follows the final event, briefly: a response read to its end leaves its
    connection open for the next request, one closed early takes the connection with it. A
    server that keeps talking is cut off (the connection then closes, as before), and one that
    drops the connection here has still sent the whole message."""
    with anyio.move_on_after(DRAIN_SECONDS):
        seen = 0
        try:
            async for _ in events:
                seen += 1
                if seen >= DRAIN_EVENTS:
                    return
        except STREAM_ERRORS as exc:
            _log.debug("connection ended badly after the final event: %s", type(exc).__name__)


class SseState(Protocol):
    """A provider's per-message stream state: turns one event's data into builder calls."""

    @property
    def finished(self) -> bool:
        """True once the event that ends the message has arrived (later events are not read)."""
        ...

    def apply(self, data: str) -> None: ...

    def result(self) -> AssistantMessage:
        """The finished or failed message once the stream is over."""
        ...


async def stream_sse(
    url: str,
    body: Any,
    headers: dict[str, str],
    options: StreamOptions,
    builder: AssistantBuilder,
    state: SseState,
) -> AssistantMessage:
    """POST `body` and stream its answer through the daemon's pool (`options.http`). A caller that
    names no pool (a script, a test) gets one for this request alone, closed with it."""
    if options.http is not None:
        return await _stream_sse(options.http, url, body, headers, options, builder, state)
    pool = HttpClients()
    try:
        return await _stream_sse(pool, url, body, headers, options, builder, state)
    finally:
        await pool.aclose()


async def _stream_sse(
    pool: HttpClients,
    url: str,
    body: Any,
    headers: dict[str, str],
    options: StreamOptions,
    builder: AssistantBuilder,
    state: SseState,
) -> AssistantMessage:
    """POST `body` as JSON to `url` and feed each server-sent event to `state` until it is
    finished. Never raises, except cancellation (which closes the socket): every request, HTTP
    or stream failure ends the message with `stop_reason="error"`, for the loop to judge."""
    secrets = request_secrets(options.api_key, headers)
    # Every error text of this message, from any path below or from the provider's state, is
    # scrubbed by the builder itself (the one redaction point).
    builder.keep_secret(*secrets)
    response: httpx.Response | None = None
    try:
        client = pool.client_for(url)
        # msgspec encodes the (possibly long) context several times faster than httpx's json.dumps.
        request = client.build_request(
            "POST",
            url,
            content=msgspec.json.encode(body),
            headers={"content-type": "application/json", **headers},
            timeout=request_timeout(options.idle_timeout),
        )
        async with open_stream(
            client,
            request,
            builder,
            max_retries=options.max_retries,
            secrets=secrets,
            base_delay_ms=options.retry_base_ms,
        ) as response:
            async with aclosing(aiter_sse(response, secrets)) as events:
                count = 0
                async for sse in events:
                    state.apply(sse.data)
                    if state.finished:
                        await _drain(events)
                        break
                    await builder.wait_for_room()  # a client far behind holds the stream here
                    count += 1
                    if count % EVENTS_PER_CHECKPOINT == 0:
                        await anyio.lowlevel.checkpoint()
    except STREAM_ERRORS as exc:
        received = response.num_bytes_downloaded if response is not None else None
        return builder.fail("error", failure_text(exc, secrets, url=display_url(url), received=received))
    return state.result()
