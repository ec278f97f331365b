#!/usr/bin/env python3
"""A Colony subscriber in Python: reads a Colony topic from Kafka and decodes every record
with code generated from the published schema (flatc --python messages/colony.fbs).

  flatc --python -o gen messages/colony.fbs
  PYTHONPATH=gen PYENV_VERSION=system python3 subscriber.py BOOTSTRAP TOPIC [FROM] [COUNT]

Prints one JSON line per event: {"offset", "entity", "type", "name"}. Needs Debian's
python3-kafka (kafka-python) and python3-flatbuffers. Used by tests/kafka/subscribers_test.sh
and shown in docs/subscribing.md.
"""
import importlib
import json
import sys

from kafka import KafkaConsumer, TopicPartition

from colony.wire.Envelope import Envelope
from colony.wire.Payload import Payload

KINDS = {0: "unknown", 1: "node", 2: "pod", 3: "quota", 4: "job", 5: "cluster"}
PAYLOAD_NAMES = {v: k for k, v in vars(Payload).items() if not k.startswith("_")}


def decode(value: bytes, offset: int) -> dict:
    where = f"{TOPIC}/0@{offset}"
    if not Envelope.EnvelopeBufferHasIdentifier(value, 0):
        raise ValueError(f"{where}: not a Colony envelope (file identifier is not CLNY)")
    env = Envelope.GetRootAs(value, 0)
    if env.Offset() != offset:  # the log writes the Kafka offset into every envelope
        raise ValueError(f"{where}: envelope says offset {env.Offset()}")
    type_name = PAYLOAD_NAMES.get(env.PayloadType(), "unknown")
    name = None
    table = env.Payload()
    if table is not None and type_name != "unknown":
        cls = getattr(importlib.import_module("colony.wire." + type_name), type_name)
        payload = cls()
        payload.Init(table.Bytes, table.Pos)
        for field in ("Name", "Pod"):  # most payloads name their entity one of these ways
            if hasattr(payload, field):
                name = getattr(payload, field)().decode()
                break
    key = env.EntityKey().decode() if env.EntityKey() is not None else ""
    return {"offset": offset, "entity": f"{KINDS.get(env.EntityKind(), 'unknown')}/{key}",
            "type": type_name, "name": name}


if __name__ == "__main__":
    BOOTSTRAP, TOPIC = sys.argv[1], sys.argv[2]
    start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    count = int(sys.argv[4]) if len(sys.argv) > 4 else None
    # assign + seek: a reader at any offset, no consumer group.
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, enable_auto_commit=False,
                             consumer_timeout_ms=30000)
    tp = TopicPartition(TOPIC, 0)  # the ordering partition
    consumer.assign([tp])
    consumer.seek(tp, start)
    seen = 0
    for record in consumer:
        print(json.dumps(decode(record.value, record.offset)), flush=True)
        seen += 1
        if count is not None and seen >= count:
            break
    consumer.close()
    if count is not None and seen < count:
        sys.exit(f"subscriber: only {seen} of {count} events within 30 s")
