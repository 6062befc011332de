"""The engine beside bytewax, in one run on the same data, with the acker's own costs.

    python scripts/bench.py [--sentences 200000] [--json bench-results/bench.json] [--plot]

1. the engine's word count (spout → split → count, fields grouping), ackers on and off;
2. bytewax 0.21.1's word count (flat_map → stateful_flat_map, which counts and, like the
   engine's count bolt, emits nothing) on the same sentences;
3. acker memory: bytes per pending tree at 1,000,000 pending (tracemalloc);
4. acker timeouts: CPU to schedule and expire 1,000,000 trees, and through the engine,
   how late each timed-out tree's fail lands;
5. complete latency p50/p99 at half the measured maximum load.
``--plot`` adds a PNG of acked words/s against executors per bolt (1, 2, 4, 8).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path
from typing import Any

from benchlib import (
    acked_and_unacked,
    acker_bytes_per_tree,
    bytewax_words_per_sec,
    complete_latency,
    engine_words_per_sec,
    hot_path,
    make_sentences,
    timeout_lateness,
    wheel_expiry_cpu,
)

TARGETS = {
    "engine_vs_bytewax": (">=", 2.0),
    "acked_cost": ("<=", 1.6),
    "acker_bytes_per_tree": ("<=", 150),
    "expire_cpu_secs": ("<", 2.0),
    "max_late_secs": ("<", 1.0),
    "p99_ms": ("<", 20.0),
}


def _verdict(name: str, value: float) -> str:
    op, bound = TARGETS[name]
    ok = {"<=": value <= bound, ">=": value >= bound, "<": value < bound}[op]
    return f"{'ok ' if ok else 'MISS'} (target {op} {bound})"


def run(args: argparse.Namespace) -> dict[str, Any]:
    sentences = make_sentences(args.sentences)
    r: dict[str, Any] = {"machine": platform.platform(), "sentences": args.sentences,
                         "runs": args.runs, "hot_path": hot_path()}
    both = acked_and_unacked(args.sentences, args.runs)
    r["engine_acked_words_per_sec"] = both["acked"]
    r["engine_unacked_words_per_sec"] = both["unacked"]
    r["acked_unacked_pairs"] = both["pairs"]
    # Each run of either system in a fresh process, sources at their defaults: the engine's
    # ListSpout emits one sentence per next_tuple call, bytewax's TestingSource one item
    # per batch. bytewax with input batches of 100, which it runs much faster, as well.
    r["bytewax_words_per_sec"] = bytewax_words_per_sec(sentences, 1, runs=args.runs)
    r["bytewax_batched_words_per_sec"] = bytewax_words_per_sec(sentences, 100, runs=args.runs)
    r["engine_vs_bytewax"] = r["engine_acked_words_per_sec"] / r["bytewax_words_per_sec"]
    r["engine_vs_bytewax_batched"] = (r["engine_acked_words_per_sec"]
                                      / r["bytewax_batched_words_per_sec"])
    r["acked_cost"] = both["cost"]
    r["acker_bytes_per_tree"] = acker_bytes_per_tree(args.pending)
    r.update(wheel_expiry_cpu(args.pending))
    r.update({f"timeouts_{k}": v for k, v in timeout_lateness(args.timeout_trees).items()})
    r["max_late_secs"] = r["timeouts_max_late_secs"]
    rate = r["engine_acked_words_per_sec"] / 10 / 2
    lat = complete_latency(sentences, rate, duration=args.latency_secs)
    r["latency_offered_sentences_per_sec"] = rate
    r["p50_ms"], r["p99_ms"] = lat["p50_ms"], lat["p99_ms"]
    if args.plot:
        r["parallelism"] = {p: engine_words_per_sec(sentences, 1, p, runs=1)
                            for p in (1, 2, 4, 8)}
    return r


def table(r: dict[str, Any]) -> str:
    rows = [
        ("engine hot path", r["hot_path"], ""),
        ("engine word count, ackers on", f"{r['engine_acked_words_per_sec']:,.0f} words/s", ""),
        ("engine word count, ackers off", f"{r['engine_unacked_words_per_sec']:,.0f} words/s",
         ""),
        ("bytewax 0.21.1 word count", f"{r['bytewax_words_per_sec']:,.0f} words/s", ""),
        ("bytewax, input batches of 100", f"{r['bytewax_batched_words_per_sec']:,.0f} words/s",
         f"(engine acked / this: x{r['engine_vs_bytewax_batched']:.2f})"),
        ("engine (acked) / bytewax", f"x{r['engine_vs_bytewax']:.2f}",
         _verdict("engine_vs_bytewax", r["engine_vs_bytewax"])),
        ("ackers off / ackers on (median of pairs)", f"x{r['acked_cost']:.2f}",
         _verdict("acked_cost", r["acked_cost"])),
        ("acker memory per pending tree", f"{r['acker_bytes_per_tree']:.1f} bytes",
         _verdict("acker_bytes_per_tree", r["acker_bytes_per_tree"])),
        ("schedule 1M trees (CPU)", f"{r['schedule_cpu_secs']:.2f} s", ""),
        ("expire 1M trees (CPU)", f"{r['expire_cpu_secs']:.2f} s",
         _verdict("expire_cpu_secs", r["expire_cpu_secs"])),
        (f"{r['timeouts_trees']:,} timeouts via the engine, latest fail past timeout",
         f"{r['max_late_secs']:.3f} s", _verdict("max_late_secs", r["max_late_secs"])),
        (f"complete latency at {r['latency_offered_sentences_per_sec']:,.0f} sentences/s",
         f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms", _verdict("p99_ms", r["p99_ms"])),
    ]
    width = max(len(a) for a, _, _ in rows)
    lines = [f"{a:<{width}}  {b:>26}  {c}" for a, b, c in rows]
    for p, wps in (r.get("parallelism") or {}).items():
        lines.append(f"{f'acked word count, {p} executors per bolt':<{width}}  "
                     f"{wps:>20,.0f} words/s")
    return "\n".join(lines)


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(r["parallelism"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [r["parallelism"][x] for x in xs], marker="o", label="engine, ackers on")
    ax.axhline(r["bytewax_words_per_sec"], color="grey", linestyle="--", label="bytewax")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("executors per bolt (one event loop)")
    ax.set_ylabel("words/s")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.set_title("word count throughput against parallelism")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--timeout-trees", type=int, default=1_000_000)
    parser.add_argument("--latency-secs", type=float, default=10.0)
    parser.add_argument("--json", type=Path, default=Path("bench-results/bench.json"))
    parser.add_argument("--plot", action="store_true")
    args = parser.parse_args()
    results = run(args)
    print(table(results))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2, default=str))
    print(f"figures written to {args.json}")
    if args.plot:
        png = args.json.with_suffix(".png")
        plot(results, png)
        print(f"plot written to {png}")


if __name__ == "__main__":
    main()
