"""Tuple ids: edges random, roots consecutive, all non-zero and signed 64-bit; a tuple's
tree pairs as ``roots``."""

from __future__ import annotations

import random
import struct

import pytest

from engine import tuples
from engine.tuples import ID_BATCH, Fields, IdSource, Source, Tuple

SRC = Source("s", 1, "default", Fields(["v"]))


def test_ids_are_non_zero_signed_64_bit_and_distinct() -> None:
    source = IdSource()
    ids = [source.take() for _ in range(5 * ID_BATCH + 3)]  # across several refills
    assert all(-(1 << 63) <= i < (1 << 63) and i != 0 for i in ids)
    assert min(ids) < -(1 << 62) and max(ids) > 1 << 62  # the sign bit and the top bits vary
    assert len(set(ids)) == len(ids)


def test_each_bit_of_the_ids_is_random() -> None:
    source = IdSource()
    ids = [source.take() for _ in range(4096)]
    for bit in range(64):
        ones = sum(1 for i in ids if struct.pack("<q", i)[bit // 8] >> (bit % 8) & 1)
        assert 1700 < ones < 2400, (bit, ones)  # 2048 expected; 11 standard deviations


def _splitmix64(state: int, n: int) -> list[int]:
    """The reference: SplitMix64's first ``n`` outputs from ``state``, as signed ints."""
    mask, out = (1 << 64) - 1, []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out.append((z - (1 << 64) if z >> 63 else z) or 1)
    return out


@pytest.mark.skipif(not tuples._COMPILED, reason="the compiled id source only")
def test_compiled_ids_are_splitmix64_of_a_random_counter() -> None:
    # Native arithmetic that wraps: every id matches the reference, sign and all bits.
    source = IdSource()
    start = source._state & ((1 << 64) - 1)  # type: ignore[attr-defined]
    assert [source.take() for _ in range(10_000)] == _splitmix64(start, 10_000)
    assert IdSource()._state != IdSource()._state  # type: ignore[attr-defined]


def test_roots_count_up_from_a_random_start_and_skip_zero() -> None:
    source = IdSource()
    first = source.root()
    assert [source.root() for _ in range(5)] == [first + i for i in range(1, 6)]
    assert -(1 << 61) <= first < (1 << 61)
    assert IdSource().root() != IdSource().root()
    source._root = -2  # type: ignore[attr-defined]
    assert [source.root(), source.root(), source.root()] == [-1, 1, 2]


def test_an_untracked_tuple_has_no_roots() -> None:
    assert Tuple(["x"], SRC, 3).roots is None


def test_roots_flatten_the_first_pair_and_the_others() -> None:
    one = Tuple(["x"], SRC, 3, 11, -5)
    assert one.roots == (11, -5)
    several = Tuple(["x"], SRC, 3, 11, -5, (12, 7, 13, 7))
    assert several.roots == (11, -5, 12, 7, 13, 7)


def test_a_users_random_seed_does_not_repeat_ids() -> None:
    takes = []
    for _ in range(2):
        random.seed(7)
        source = IdSource()
        takes.append([source.take() for _ in range(8)])
    assert takes[0] != takes[1]
