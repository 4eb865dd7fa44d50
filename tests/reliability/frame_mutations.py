"""Broken LSP frames: the ones an attack on the daemon found, and random mutations of valid ones.

One mutation is applied to one frame of a stream; whatever the daemon makes of that frame, every
valid frame after it must still be served.
"""

from __future__ import annotations

import random

import msgspec

from pi_rpc.modes.framing import encode_lsp


def request(msg_id: int) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": msg_id, "method": "state"})


def frame(msg_id: int) -> bytes:
    return encode_lsp(request(msg_id))


def _header(value: bytes, body: bytes) -> bytes:
    return b"Content-Length: " + value + b"\r\n\r\n" + body


# What goes between two valid frames (protocol/PROTOCOL.md, "Framing"): each must cost nothing
# after it.
BETWEEN_FRAMES: dict[str, bytes] = {
    "stray LF": b"\n",
    "hello": b"hello",
    "negative length": _header(b"-5", b"{}{}{"),
    "plus sign": _header(b"+5", b"{}{}{"),
    "hex length": _header(b"0x10", b"{}" * 8),
    "too-short length": _header(b"3", request(900)),
    "too-long length": _header(b"%d" % (len(request(901)) + 7), request(901)),
    "bare JSON body": request(902),
    "space before colon": b"Content-Length : 2\r\n\r\n{}",
    "NUL in a header": b"Content-Length: 2\r\nX-A: \x00\r\n\r\n{}",
    "duplicate header": b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    "trailing LF after a body": encode_lsp(b"[]") + b"\n",
    "CRLF junk": b"\r\n\r\n",
    "huge length": _header(b"999999999999", b"{}"),
}


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random edit of a valid frame: bytes inserted, deleted or replaced, or its length changed."""
    kind = rng.randrange(5)
    at = rng.randrange(len(data) + 1)
    if kind == 0:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return data[:at] + junk + data[at:]
    if kind == 1:
        return data[:at] + data[at + rng.randint(1, 8) :]
    if kind == 2 and at < len(data):
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
    if kind == 3:  # a control byte, the usual corruption in a header
        return data[:at] + rng.choice([b"\n", b"\r", b"\r\n", b"\x00", b" ", b":"]) + data[at:]
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.split(b":")[1]) + rng.choice([-20, -5, -1, 1, 3, 17, 40, 10**12])
    return _header(b"%d" % max(length, 0), body)
