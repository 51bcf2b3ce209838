"""C++ math overloads on top of C's <math.h> (mg_cmath.h): the calls CUDA code makes still mean
what they mean under nvcc, and the same text is accepted by NVRTC."""

import numpy as np

from mutagym.runtime.nvrtc import nvrtc_compile
from submission_text import compiled, launch, submission

OVERLOADS = submission("""
    #include <cmath>
    extern "C" __global__ void k(const float* x, float* out) {
        float v = x[0];
        out[0] = exp(v) - expf(v);                 // exp(float) is expf: exactly 0
        out[1] = abs(-v);                          // abs(float), not the int abs
        out[2] = std::sqrt(v);                     // std:: names after #include <cmath>
        out[3] = pow(v, 2);                        // (float, int): the float overload
        out[4] = (float)sqrt(9.0);                 // double stays double
        out[5] = isnan(v / 0.0f * 0.0f) ? 1.0f : 0.0f;
        out[6] = fmax(v, 3.0f);                    // fmax(float, float)
        out[7] = (float)abs(-7);
    }
""", launch("k", [1], [1], ["x", "out"]))


def test_overloads_match_cuda_semantics():
    r = compiled(OVERLOADS).run({"x": np.array([2.25], np.float32)}, {"out": ((8,), "float32")}, {})
    assert r.ok, r.message
    np.testing.assert_array_equal(r.outputs["out"], np.array([0, 2.25, 1.5, 2.25**2, 3, 1, 3, 7], np.float32))


def test_nvrtc_accepts_the_same_text():
    nvrtc_compile(OVERLOADS)
