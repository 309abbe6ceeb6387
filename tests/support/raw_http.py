"""HTTP/1.1 spoken by hand over a socket, for what a well-behaved client cannot send: raw
request paths, oversized or half-sent headers, stalled bodies.

>>> reply = exchange(url, b"GET /v1/..%2fadmin HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
>>> reply.status, reply.json
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from waits import HUNG_AFTER_SECONDS

READ_SIZE = 65536


@dataclass(frozen=True)
class RawReply:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def connect(url: str) -> socket.socket:
    """A connected socket to the server at `url` ("http://127.0.0.1:PORT")."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), HUNG_AFTER_SECONDS)
    sock.settimeout(HUNG_AFTER_SECONDS)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or resets it)."""
    received = bytearray()
    try:
        while chunk := sock.recv(READ_SIZE):
            received += chunk
    except ConnectionResetError:
        pass
    return bytes(received)


def exchange(url: str, request: bytes) -> RawReply:
    """Send `request` as is (it should ask for `Connection: close`), read the one reply."""
    with connect(url) as sock:
        sock.sendall(request)
        return parse_reply(read_until_closed(sock))


def parse_reply(raw: bytes) -> RawReply:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunked(body)
    return RawReply(int(status_line.split()[1]), headers, body)


def _dechunked(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return bytes(out)


def get(path: bytes, *headers: bytes) -> bytes:
    """A GET request line and headers, asking the server to close after answering."""
    lines = [b"GET " + path + b" HTTP/1.1", b"Host: proxy", *headers, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"
