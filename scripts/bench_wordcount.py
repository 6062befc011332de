"""Word count words/s with ackers on and off, and complete latency p50/p99.

    python scripts/bench_wordcount.py [--sentences 100000]
"""

from __future__ import annotations

import argparse

from benchlib import complete_latency, engine_words_per_sec, make_sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sentences = make_sentences(args.sentences)
    acked = engine_words_per_sec(sentences, ackers=1, runs=args.runs)
    unacked = engine_words_per_sec(sentences, ackers=0, runs=args.runs)
    rate = acked / 10 / 2
    latency = complete_latency(sentences, rate)
    print(f"word count, {args.sentences:,} sentences x 10 words, best of {args.runs}")
    print(f"  ackers on   {acked:>12,.0f} words/s")
    print(f"  ackers off  {unacked:>12,.0f} words/s   (on/off cost x{unacked / acked:.2f})")
    print(f"  complete latency at {rate:,.0f} sentences/s (half the maximum): "
          f"p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms "
          f"({latency['samples']:,} samples)")


if __name__ == "__main__":
    main()
