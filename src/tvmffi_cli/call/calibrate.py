"""How many calls a timed round of `tvmffi bench` makes (host and CUDA timing alike)."""

from __future__ import annotations

from typing import Callable, List

# timed(calls, rounds) -> the nanoseconds of each round
Timer = Callable[[int, int], List[int]]

DEFAULT_ROUNDS = 10
DEFAULT_TARGET_ROUND_NS = 20_000_000  # 20 ms per round when calibrating
MAX_CALLS_PER_ROUND = 1 << 34


def calibrate(timed: Timer, target_ns: int) -> int:
    """Calls per round so that one round takes about target_ns. Early rounds
    run cold (page faults, lazy binding, a CPU clocking up), so the estimate
    is checked against a full-size round and rescaled until it holds."""
    calls = 1
    while True:
        ns = timed(calls, 1)[0]
        if ns >= target_ns // 10 or calls >= MAX_CALLS_PER_ROUND:
            break
        calls = min(calls * (10 if ns < target_ns // 100 else 2), MAX_CALLS_PER_ROUND)
    for _ in range(3):
        per_call = max(ns / calls, 0.01)
        want = int(min(max(target_ns / per_call, 1), MAX_CALLS_PER_ROUND))
        if want == calls:
            break
        calls = want
        ns = timed(calls, 1)[0]
        if target_ns // 2 <= ns <= target_ns * 2:
            break
    return calls
