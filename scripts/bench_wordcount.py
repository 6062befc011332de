"""Word count words/s with ackers on and off, and complete latency p50/p99.

    python scripts/bench_wordcount.py [--sentences 100000]
"""

from __future__ import annotations

import argparse

from benchlib import acked_and_unacked, complete_latency, hot_path, make_sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sentences = make_sentences(args.sentences)
    both = acked_and_unacked(args.sentences, args.runs)
    acked, unacked = both["acked"], both["unacked"]
    rate = acked / 10 / 2
    latency = complete_latency(sentences, rate)
    print(f"word count, {args.sentences:,} sentences x 10 words, best of {args.runs} "
          f"(each run a fresh process, modes interleaved; hot path {hot_path()})")
    print(f"  ackers on   {acked:>12,.0f} words/s")
    print(f"  ackers off  {unacked:>12,.0f} words/s")
    print(f"  cost of acking: x{both['cost']:.2f} (median of the pairs' off/on ratios; "
          f"pairs: {', '.join(f'{on:,.0f}/{off:,.0f}' for on, off in both['pairs'])})")
    print(f"  complete latency at {rate:,.0f} sentences/s (half the maximum): "
          f"p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms "
          f"({latency['samples']:,} samples)")


if __name__ == "__main__":
    main()
