"""The tolerance a 0.99 ratio needs and the share of the budget used are computed the cheap way
(a sampled selection; the |out - ref| of the verdict): the values must be exactly, bit for bit,
what the plain algorithms give (a full partition; a fresh |out - ref|) on every input."""

from dataclasses import replace

import numpy as np

from mutagym.rewards.comparator import Comparator, Reference, _kth_smallest, tolerance_needed
from mutagym.rewards.judging import judge_outputs


def plain_needed(out, ref, ratio):
    """The tolerance needed by a full partition of every element's need."""
    o, r = np.asarray(out, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        if np.any(~np.isfinite(o) & np.isfinite(r)):
            return float("inf")
        need = np.abs(o - r) / (np.abs(r) + 1.0)
        need = np.where(np.isfinite(r), need, np.where(o == r, 0.0, np.inf))
    k = max(int(np.ceil(ratio * need.size)), 1)
    return float(need.max()) if k == need.size else float(np.partition(need, k - 1)[k - 1])


def plain_used(out, ref, atol, rtol):
    o, r = np.asarray(out, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        used = np.abs(o - r) / np.maximum(atol + rtol * np.abs(r), np.finfo(np.float64).tiny)
    finite = np.isfinite(r) & np.isfinite(o)
    return float(used[finite].max()) if finite.any() else 0.0


def same(a: float, b: float) -> bool:
    return np.float64(a).tobytes() == np.float64(b).tobytes()


def random_pair(rng, n):
    """A reference and an output near it, with ties, constant stretches or NaN/Inf at times."""
    kind = rng.integers(0, 5)
    ref = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3)
    if kind == 1:
        ref = np.round(ref)                                     # many ties
    noise = rng.standard_normal(n) * 10 ** rng.uniform(-8, 0)
    if kind == 2:
        noise[:] = noise[0]                                     # every need nearly equal
    out = (ref + noise).astype(rng.choice([np.float16, np.float32, np.float64]))
    if kind == 3:
        out = ref.astype(out.dtype)                             # all equal: every need 0
    if kind == 4:
        out[rng.integers(0, n, max(1, n // 50))] = np.round(out[0], 1)   # a large tie at the top
    for array in (out, ref):
        if rng.random() < 0.2:
            array[rng.integers(0, n, 2)] = rng.choice((np.nan, np.inf, -np.inf), 2)
    if rng.random() < 0.1:
        ref[rng.integers(0, n)] = np.inf
        out[rng.integers(0, n)] = np.inf
    return out, ref


def test_sampled_selection_is_the_full_partition_bit_for_bit():
    rng = np.random.default_rng(3)
    sizes = [1, 2, 3, 99, 100, 101, 4095, 4096, 4097, 5000, 65536, 100_003, 1_000_000]
    sizes += [int(n) for n in rng.integers(1, 300_000, 60)]
    for trial, n in enumerate(sizes):
        out, ref = random_pair(rng, n)
        for ratio in (1.0, 0.99, 0.5):
            assert same(tolerance_needed(out, ref, ratio), plain_needed(out, ref, ratio)), (trial, n, ratio)


def test_the_sampled_path_is_taken_and_an_unlucky_sample_falls_back():
    rng = np.random.default_rng(5)
    values = rng.random(200_000)
    kept = values.copy()
    index = int(np.ceil(0.99 * values.size)) - 1
    want = np.partition(values, index)[index]
    mask = np.empty(values.size, bool)
    assert same(_kth_smallest(values, index, mask), want)
    assert values.tobytes() == kept.tobytes()                  # selected from the top only
    stride = values.size // 1024
    adverse = values.copy()                                    # the samples all among the largest
    adverse[::stride] = 2.0 + values[::stride]
    tied = np.where(np.arange(values.size) % stride == 0, 0.5, 1.0)   # or all at one tie
    tied[: values.size // 2] = 0.0
    for array in (adverse, tied):
        for index in (int(np.ceil(q * array.size)) - 1 for q in (0.99, 0.6, 0.5, 0.01)):
            assert same(_kth_smallest(array.copy(), index, mask), np.partition(array, index)[index]), index
    with_nan = values.copy()
    with_nan[rng.integers(0, values.size, 3000)] = np.nan      # NaN sorts last, in either algorithm
    for index in (values.size - 1, values.size - 3001, values.size - 4000, 100):
        got, want = _kth_smallest(with_nan.copy(), index, mask), np.partition(with_nan, index)[index]
        assert same(got, want) or (np.isnan(got) and np.isnan(want)), index


def test_measure_with_used_gives_the_plain_share_of_the_budget():
    rng = np.random.default_rng(9)
    for trial in range(300):
        n = int(rng.choice([1, 7, 400, 5000, 70_000]))
        out, ref = random_pair(rng, n)
        comparator = Comparator(atol=float(10 ** rng.uniform(-6, 0)), rtol=float(rng.choice([0.0, 1e-3, 1e-1])),
                                matched_ratio=float(rng.choice([1.0, 0.99, 0.5])))
        c, needs = comparator.measure(out, Reference(ref), (1.0, 0.99), used=True)
        assert needs == (plain_needed(out, ref, 1.0), plain_needed(out, ref, 0.99)), trial
        assert comparator.measure(out, ref, (1.0, 0.99))[0] == without_used(c), trial
        want = plain_used(out, ref, comparator.atol, comparator.rtol)
        assert same(comparator.tolerance_used(out, ref), want), trial
        assert (c.tolerance_used is None) if not c.passed else same(c.tolerance_used, want), trial
        _, (judged,), _ = judge_outputs({"y": out}, {"y": ref}, comparator, measure=True)
        assert judged.tolerance_used == c.tolerance_used and judged.tol_needed_p99 == needs[1], trial


def without_used(c):
    return replace(c, tolerance_used=None)


def test_an_empty_output_used_none_of_its_budget():
    c, needs = Comparator(1e-2, 1e-2).measure(np.zeros(0), np.zeros(0), (0.99,), used=True)
    assert c.passed and c.tolerance_used == 0.0 and needs == (0.0,)
