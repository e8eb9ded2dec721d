"""Checks shared by the reliability tests and ``bench/reliability.py``: a server that
accepts connections and never answers, and the moments a store's decisions book a node
beyond its capacity."""

from __future__ import annotations

import socket
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime

from slurm_mlsched.storage import open_store


@contextmanager
def silent_server() -> Iterator[int]:
    """A TCP port on 127.0.0.1 whose server accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


Usage = tuple[float, float, float]


def overbookings(url: str, capacity: Mapping[str, Usage]) -> list[tuple[str, list[float]]]:
    """Every (node, usage) at which the sum of the store's decisions' predicted usage of a
    node exceeds ``capacity`` (GPUs, CPUs, MiB), from each decision's reservations in wall
    time; ends sort before starts at the same moment."""
    events: dict[str, list[tuple[datetime, int, Usage]]] = defaultdict(list)
    store = open_store(url, grace_s=0)
    try:
        for row in store.history():
            rec = store.get(row.decision_id)
            for r in rec.decision.reservations(rec.request):
                use = r.usage.as_tuple()
                events[r.machine].append((rec.snapshot.slot_start(r.start_slot), 1, use))
                events[r.machine].append((rec.snapshot.slot_start(r.end_slot), -1, use))
    finally:
        store.close()
    over = []
    for node, evs in events.items():
        used = [0.0, 0.0, 0.0]
        for _, sign, amount in sorted(evs, key=lambda e: (e[0], e[1])):
            used = [u + sign * x for u, x in zip(used, amount, strict=True)]
            if any(u > c + 1e-6 for u, c in zip(used, capacity[node], strict=True)):
                over.append((node, list(used)))
    return over


def node_capacity(cluster_json: Mapping[str, object]) -> dict[str, Usage]:
    """Node -> (GPUs, CPUs, MiB) from ``mlsub cluster --json``."""
    nodes = cluster_json["nodes"]
    assert isinstance(nodes, list)
    return {
        n["name"]: (n["total"]["gpus"], n["total"]["cpus"], n["total"]["mem_mib"]) for n in nodes
    }
