"""``/healthz`` while the HTTP endpoint is abused: slow clients, then a burst of connections.

    python scripts/bench_http_abuse.py [--slow-clients 200] [--slow-secs 12] [--burst 700]
                                       [--idle]

A word count runs endlessly in this process (the loop is busy, as in production; with
``--idle`` nothing runs, which shows the endpoint's own cost) with the endpoint on
127.0.0.1. Clients run in processes of their own, over loopback:

1. ``--slow-clients`` connections each send a request head one byte per second and never
   finish it; a client the server drops reconnects at once (a slowloris keeps its
   pressure up) for ``--slow-secs`` seconds. Reported: how long the server let them hold a
   connection (median, max) and how many connections they made;
2. ``--burst`` connections opened at once, each sending ``GET /healthz``.

A prober process GETs ``/healthz`` on a new connection every 50 ms during each phase;
the worst and median times (connect to the end of the answer) are printed per phase
(target: worst under 1 s), with the machine's load average: on a shared machine the
figures say as much about the neighbours as about the endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlib import make_sentences, run_loop, word_count_topology

from connectors.memory import ListSpout
from engine import Config, LocalCluster

_PROBE = """
import json, socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
times, end = [], time.perf_counter() + secs
while time.perf_counter() < end:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.endswith(b"ok\\n"), answer
    times.append(time.perf_counter() - start)
    time.sleep(0.05)
print(json.dumps(times))
"""

_SLOW = """
import asyncio, json, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
HEAD = b"GET /healthz HTTP/1.1\\r\\nX-Padding: " + b"a" * 100_000

async def one(held, end):
    while time.perf_counter() < end:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        start = time.perf_counter()
        for i in range(len(HEAD)):
            writer.write(HEAD[i:i + 1])
            try:
                if await asyncio.wait_for(reader.read(1), 1.0) == b"":
                    break
            except asyncio.TimeoutError:
                if time.perf_counter() >= end:
                    break
            except ConnectionError:
                break
        held.append(time.perf_counter() - start)
        writer.close()

async def main():
    held, end = [], time.perf_counter() + secs
    await asyncio.gather(*(one(held, end) for _ in range(n)))
    print(json.dumps(held))

asyncio.run(main())
"""

_BURST = """
import json, selectors, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
REQUEST = b"GET /healthz HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n"
selector, answers = selectors.DefaultSelector(), {}
start = time.perf_counter()
for _ in range(n):  # every connect at once: non-blocking, no wait between them
    sock = socket.socket()
    sock.setblocking(False)
    sock.connect_ex(("127.0.0.1", port))
    selector.register(sock, selectors.EVENT_WRITE)
while selector.get_map() and time.perf_counter() - start < 60:
    for key, events in selector.select(1.0):
        sock = key.fileobj
        if events & selectors.EVENT_WRITE:
            sock.send(REQUEST)
            answers[sock] = b""
            selector.modify(sock, selectors.EVENT_READ)
            continue
        chunk = sock.recv(4096)
        answers[sock] += chunk
        if not chunk:
            selector.unregister(sock)
            sock.close()
ok = sum(a.endswith(b"ok\\n") for a in answers.values())
print(json.dumps([ok, time.perf_counter() - start]))
"""


async def _client(code: str, *args: object) -> Any:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code,
                                                *map(str, args),
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"client exited with {proc.returncode}")
    return json.loads(out)


def _times(label: str, times: list[float]) -> str:
    return (f"{label}: /healthz worst {max(times) * 1000:.0f} ms, median "
            f"{statistics.median(times) * 1000:.1f} ms over {len(times)} probes")


async def _abuse(slow_clients: int, slow_secs: float, burst: int, idle: bool) -> list[str]:
    spout = ListSpout([[s] for s in make_sentences(1000)], ["sentence"], repeat=10**9,
                      per_call=10)
    conf = Config({"topology.max.spout.pending": 5000})
    lines = [f"loop {'idle' if idle else 'running a word count'}; load average "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"]
    async with LocalCluster() as cluster:
        if not idle:
            await cluster.submit_topology("wc", conf, word_count_topology(spout, 1))
        server = await cluster.serve_http()
        try:
            held, probes = await asyncio.gather(
                _client(_SLOW, server.port, slow_clients, slow_secs),
                _client(_PROBE, server.port, slow_secs))
            lines.append(_times(f"{slow_clients} slow clients, {slow_secs:g} s", probes))
            lines.append(f"  slow connections held median {statistics.median(held):.1f} s, "
                         f"max {max(held):.1f} s ({len(held)} connections)")
            probe = asyncio.ensure_future(_client(_PROBE, server.port, 3.0))
            await asyncio.sleep(0.2)
            served, secs = await _client(_BURST, server.port, burst)
            lines.append(_times(f"burst of {burst} connections", await probe))
            lines.append(f"  burst: {served} of {burst} answered ok in {secs:.2f} s")
        finally:
            await server.close()
        if not idle:
            await cluster.kill_topology("wc")
    return lines


def main() -> None:
    """Parse arguments, run both phases, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow-clients", type=int, default=200)
    parser.add_argument("--slow-secs", type=float, default=12.0)
    parser.add_argument("--burst", type=int, default=700)
    parser.add_argument("--idle", action="store_true", help="no word count in the loop")
    args = parser.parse_args()
    for line in run_loop(_abuse(args.slow_clients, args.slow_secs, args.burst, args.idle)):
        print(line)


if __name__ == "__main__":
    main()
