#!/usr/bin/env python3
"""Minimal Kafka wire-protocol client (Python standard library only) for tools/peers/kafka.sh.

Defines two commands:
  metadata HOST:PORT               -> prints "NODE_ID HOST:PORT" per broker; exit 0 iff >= 1 broker
  create-topic HOST:PORT NAME [PARTITIONS] [REPLICATION]
                                   -> creates a topic; exit 0 if created or it already exists

Why hand-rolled: the readiness check and topic creation must not depend on kcat or python3-kafka
being installed (kcat cannot create topics at all). Only non-flexible request versions that
Kafka 3.x and 4.x both accept are used (KIP-896 removed Metadata v0-v3, CreateTopics v0-v1 in 4.0):
Metadata v4 and CreateTopics v2.
"""
import socket
import struct
import sys

CLIENT_ID = b"colony-peer-probe"


def _str(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def _request(addr: str, api_key: int, api_version: int, body: bytes, timeout: float = 5.0) -> bytes:
    host, port = addr.rsplit(":", 1)
    header = struct.pack(">hhi", api_key, api_version, 1) + _str(CLIENT_ID)
    msg = header + body
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        resp = _recv_exact(s, size)
    (corr,) = struct.unpack(">i", resp[:4])
    if corr != 1:
        raise RuntimeError(f"unexpected correlation id {corr}")
    return resp[4:]


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise RuntimeError("connection closed by broker")
        buf += chunk
    return buf


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def int16(self) -> int:
        (v,) = struct.unpack_from(">h", self.data, self.pos)
        self.pos += 2
        return v

    def int32(self) -> int:
        (v,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return v

    def nstring(self):
        n = self.int16()
        if n < 0:
            return None
        v = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return v


def metadata(addr: str) -> list:
    # Metadata v4: topics = empty array (brokers only), allow_auto_topic_creation = false.
    r = _Reader(_request(addr, 3, 4, struct.pack(">i", 0) + b"\x00"))
    r.int32()  # throttle_time_ms
    brokers = []
    for _ in range(r.int32()):
        node, host, port = r.int32(), r.nstring(), r.int32()
        r.nstring()  # rack
        brokers.append((node, f"{host}:{port}"))
    return brokers


def create_topic(addr: str, name: str, partitions: int, replication: int) -> None:
    topic = (_str(name.encode()) + struct.pack(">ih", partitions, replication)
             + struct.pack(">i", 0)    # manual assignments: none
             + struct.pack(">i", 0))   # configs: none
    body = struct.pack(">i", 1) + topic + struct.pack(">i", 30000) + b"\x00"  # timeout, validate_only
    r = _Reader(_request(addr, 19, 2, body, timeout=35.0))
    r.int32()  # throttle_time_ms
    for _ in range(r.int32()):
        tname, err, msg = r.nstring(), r.int16(), r.nstring()
        if err not in (0, 36):  # 36 = TOPIC_ALREADY_EXISTS
            raise RuntimeError(f"CreateTopics {tname}: error {err}: {msg}")


def main(argv: list) -> int:
    try:
        if len(argv) == 3 and argv[1] == "metadata":
            brokers = metadata(argv[2])
            for node, ep in brokers:
                print(node, ep)
            return 0 if brokers else 1
        if 4 <= len(argv) <= 6 and argv[1] == "create-topic":
            parts = int(argv[4]) if len(argv) > 4 else 1
            repl = int(argv[5]) if len(argv) > 5 else 1
            create_topic(argv[2], argv[3], parts, repl)
            return 0
    except (OSError, RuntimeError, struct.error, ValueError, UnicodeDecodeError) as e:
        print(f"kafka_probe: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
