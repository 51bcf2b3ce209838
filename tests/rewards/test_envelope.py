"""The envelope (issue 31 item 1): an input's legitimate error is what the correct kernels (and
the reference in float32) make on it, and a kernel far above it is rejected even under the flat
tolerance."""

import doctest

import numpy as np
import pytest

import mutagym.rewards.envelope as envelope_module
from mutagym.rewards.envelope import DEFAULT_RULE, EnvelopeRule, InputEnvelope, ulp
from mutagym.rewards.generators import generate
from mutagym.rewards.judging import comparator_for, judge_kernel
from mutagym.rewards.validity import check_validity
from mutagym.runtime import compile
from mutagym.substrates.catalog import load_problem


def test_doctests():
    assert doctest.testmod(envelope_module).failed == 0


class TestUlp:
    @pytest.mark.parametrize("dtype, bits", [("float16", 11), ("bfloat16", 8), ("float32", 24), ("float64", 53)])
    def test_one_ulp_at_one_is_the_significand_step(self, dtype, bits):
        assert ulp(np.array([1.0, 1.5, -1.0]), dtype).tolist() == [2.0 ** (1 - bits)] * 3

    def test_zero_and_subnormals_share_the_lowest_binade(self):
        tiny = np.finfo(np.float32).tiny
        assert ulp(np.array([0.0, tiny / 4, tiny]), "float32").tolist() == [2.0 ** -149] * 3

    def test_integers_have_none(self):
        assert ulp(np.array([1.0]), "int64") is None


class TestEnvelopeRule:
    env = InputEnvelope(atol=1e-2, rtol=1e-2, used={"out": 1e-6})
    ref = np.array([1.0, 2.0, 0.0])

    def test_an_error_many_times_the_envelope_fails_under_the_flat_tolerance(self):
        rule = EnvelopeRule(multiple=16, ulps=16, least_share=0.0)
        out = (self.ref + [0.0, 1e-4, 0.0]).astype(np.float32)     # 1e-4 of a 3e-2 budget: flat passes
        judged = rule.judge(out, self.ref, self.env, "out")
        assert not judged.passed and judged.used > 1 and "times what this input allows" in judged.message

    def test_the_least_share_is_always_allowed(self):
        rule = EnvelopeRule(multiple=16, ulps=0, least_share=1e-2)
        out = (self.ref + [0.0, 1e-4, 0.0]).astype(np.float32)
        assert rule.judge(out, self.ref, self.env, "out").passed

    def test_an_exact_envelope_still_allows_its_floor_in_ulps(self):
        rule = EnvelopeRule(multiple=16, ulps=4, least_share=0.0)
        exact = InputEnvelope(1e-2, 1e-2, {"out": 0.0})
        ref = np.array([1.0, 2.0])
        assert rule.judge(np.float32(ref + [0, 3 * 2.0 ** -22]), ref, exact, "out").passed
        assert not rule.judge(np.float32(ref + [0, 8 * 2.0 ** -22]), ref, exact, "out").passed

    def test_an_output_without_an_envelope_or_of_integers_is_not_judged(self):
        rule = EnvelopeRule(multiple=1, ulps=0, least_share=0.0)
        assert rule.judge(np.array([5.0], np.float32), np.array([1.0]), self.env, "other").passed
        assert rule.judge(np.array([3], np.int64), np.array([1.0]), self.env, "out").passed

    def test_bad_settings_are_named(self):
        with pytest.raises(ValueError, match=r"multiple=0.5.*must be >= 1"):
            EnvelopeRule(multiple=0.5, ulps=0, least_share=0)
        with pytest.raises(ValueError, match=r"least_share=2"):
            EnvelopeRule(multiple=2, ulps=0, least_share=2)


def test_the_envelope_counts_the_reference_in_float32():
    """matmul's variants accumulate in fp64, its substrate and torch's float32 matmul do not: the
    envelope is at least the float32 reference's error, never only the most exact kernel's."""
    p = load_problem("matmul")
    g = generate(p, "sign_mixed", preset="official")
    c = comparator_for(p)
    [v] = check_validity(p, [g], c)
    refs = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims)
    plain = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims, precision="float32")
    assert v.valid
    assert v.envelope(p, c, refs).used["out"] >= c.tolerance_used(plain["out"].astype(np.float32), refs["out"]) > 0


def test_a_kernel_a_thousand_times_worse_than_the_correct_ones_is_rejected():
    """A softmax scaled by (1 + 2**-10) passes the flat 1e-2 tolerance on peaked rows and is
    rejected by the envelope there; the substrate passes its own envelope."""
    p = load_problem("softmax")
    source = p.kernel_sources()["substrate"]
    line = "outr[c] = expf(xr[c] - m) / s;"
    assert line in source
    wrong = compile(source.replace(line, "outr[c] = expf(xr[c] - m) / s * 1.0009765625f;"))
    g = generate(p, "peaked_logits", preset="official")
    c = comparator_for(p)
    [v] = check_validity(p, [g], c)
    refs = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims)
    env = (DEFAULT_RULE, v.envelope(p, c, refs))
    [flat] = judge_kernel(wrong, p, [g], c)["ascending"]
    [judged] = judge_kernel(wrong, p, [g], c, envelopes=[env])["ascending"]
    [own] = judge_kernel(compile(source), p, [g], c, envelopes=[env])["ascending"]
    assert flat.passed and not judged.passed and own.passed


class TestTimeEnvelope:
    """Issue 31 item 5: a case's time limit is a multiple of the slowest correct kernel's time on
    that input, between a floor and the jail's cap, instead of one flat limit."""

    def test_the_limit_follows_the_measured_time_between_floor_and_cap(self):
        rule = EnvelopeRule(multiple=1024, ulps=16, least_share=1e-4, time_multiple=8, time_floor_s=1, time_cap_s=60)
        timed = [rule.timeout_s(InputEnvelope(1e-2, 1e-2, {}, s)) for s in (0.01, 2.0, 30.0)]
        assert timed == [1.0, 16.0, 60.0]
        assert rule.timeout_s(InputEnvelope(1e-2, 1e-2, {})) is None

    def test_the_time_survives_the_pool_file_format(self):
        env = InputEnvelope(1e-2, 1e-2, {"out": 1e-3}, 0.25)
        assert InputEnvelope.from_dict(env.as_dict()) == env
        untimed = InputEnvelope(1e-2, 1e-2, {"out": 1e-3})
        assert "seconds" not in untimed.as_dict() and InputEnvelope.from_dict(untimed.as_dict()) == untimed

    def test_bad_time_settings_are_named(self):
        with pytest.raises(ValueError, match=r"time_floor_s=5.*0 < floor <= cap"):
            EnvelopeRule(multiple=2, ulps=0, least_share=0, time_floor_s=5, time_cap_s=1)

    def test_the_validity_gate_measures_the_slowest_correct_kernel(self):
        p = load_problem("softmax")
        g = generate(p, "normal", preset="official")
        c = comparator_for(p)
        [v] = check_validity(p, [g], c, schedules=("ascending", "descending"))
        refs = p.reference_outputs(g.inputs, p.scalar_values(), dims=g.dims)
        assert v.valid and v.seconds is not None and v.envelope(p, c, refs).seconds == v.seconds

    def test_a_kernel_that_hangs_is_stopped_at_its_inputs_time_limit(self):
        """With a flat limit of 300 s, a spinning kernel ends at the envelope's floor of 1 s."""
        import time
        p = load_problem("relu")
        source = p.kernel_sources()["substrate"]
        head, body = source.split("*/", 1)
        spin = compile(head + "*/" + body.replace(
            "const int tid =", "volatile int s = 0;\n    while (x[0] == x[0]) s = s + 1;\n    const int tid =", 1))
        g = generate(p, "normal", preset="official")
        rule = EnvelopeRule(multiple=1024, ulps=16, least_share=1e-4, time_multiple=4, time_floor_s=1, time_cap_s=2)
        env = (rule, InputEnvelope(1e-2, 1e-2, {"out": 0.0}, 0.01))
        started = time.monotonic()
        [judged] = judge_kernel(spin, p, [g], comparator_for(p), timeout_s=300.0, envelopes=[env])["ascending"]
        assert judged.outcome == "timeout" and judged.seconds >= 1.0
        assert time.monotonic() - started < 60
