// mg_wmma.h -- CUDA's warp matrix API (<mma.h>, nvcuda::wmma) for the mutagym CPU emulator.
//
// Shape 16x16x16 only: matrix_a / matrix_b of __half or __nv_bfloat16 (row_major or col_major),
// accumulators of float or __half. Other shapes (8x32x16, 32x8x16), tf32, integer and sub-byte
// types, and the alignment rules CUDA states for ldm and pointers (not checked here) are not
// emulated; an unsupported fragment is refused when compiled.
//
// Which lane holds which element of a fragment is opaque in CUDA; here it is fixed, the PTX ISA's
// mma.m16n8k16 register layout with two n8 halves side by side. For lane L, g = L / 4 and
// t = L % 4; element i (0..7) of a fragment is
//   matrix_a    (16 x 16, m x k): row g + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2)
//   matrix_b    (16 x 16, k x n): row 2t + (i & 1) + 8 * ((i >> 1) & 1), column g + 8 * (i >> 2)
//   accumulator (16 x 16, m x n): as matrix_a
// so num_elements is 8 for every fragment (CUDA's own num_elements differs by architecture).
//
// load_matrix_sync, store_matrix_sync and mma_sync are warp collectives: each is one
// __match_all_sync of the operation and its line over the full mask, so all 32 lanes of the warp
// must reach the same call (a warp of fewer threads, lanes that exited, or lanes at another
// collective are a sync_error, with the reason in the run's printed output), thread orders and the
// race detector apply as to any collective. Each lane reads (load) or writes (store) its own
// elements at the addresses the layout and ldm give, before the collective: element (r, c) is at
// ptr[r * ldm + c] for row_major / mem_row_major and at ptr[c * ldm + r] for col_major /
// mem_col_major. mma_sync multiplies exactly (a product of two halves or bfloat16s is exact in
// float) and accumulates in float32: d[r][c] = (sum over k = 0..15, in k order, of
// a[r][k] * b[k][c]) + c[r][c], rounded once to a __half accumulator's type. A GPU's order is
// unspecified. The operands meet in a per-warp staging area of the object's zeroed data, written
// and read inside one call (so it is no state across launches), between two collectives.
// fill_fragment and x[] are per lane, as in CUDA.
#pragma once

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace __mg_wmma {
template <class T> struct never { static constexpr bool value = false; };
static inline float to_float(float v) { return v; }
static inline float to_float(__half v) { return __half2float(v); }
static inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> static inline T from_float(float v);
template <> inline float from_float<float>(float v) { return v; }
template <> inline __half from_float<__half>(float v) { return __float2half(v); }
template <> inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

static inline unsigned lane() { return cooperative_groups::__mg_cg::lane(); }
static inline unsigned warp() { return cooperative_groups::__mg_cg::block_rank() / 32u; }
// Row and column of element i of lane L's fragment, in the fragment's own m x k, k x n or m x n.
static inline unsigned a_row(unsigned L, unsigned i) { return L / 4 + 8 * ((i >> 1) & 1); }
static inline unsigned a_col(unsigned L, unsigned i) { return 2 * (L % 4) + (i & 1) + 8 * (i >> 2); }
static inline unsigned b_row(unsigned L, unsigned i) { return 2 * (L % 4) + (i & 1) + 8 * ((i >> 1) & 1); }
static inline unsigned b_col(unsigned L, unsigned i) { return L / 4 + 8 * (i >> 2); }

enum op { LOAD = 1, STORE = 2, MMA = 3 };
// A kind the runner has no name for ("warp collective"), used only to stop the run.
static const int FAULT = 16;
static const char* const op_names[] = {"", "load_matrix_sync", "store_matrix_sync", "mma_sync"};

// The collective every operation ends with: all 32 lanes at the same operation and line, or the
// run stops as a sync_error (the runner names the collective; the printed line says why).
static inline void collective(int kind, int line) {
    unsigned long long tag = (unsigned long long)kind << 32 | (unsigned)line;
    unsigned long long all = __mg_warp_op(line, 0xffffffffu, __MG_MATCH_ALL, tag, 0, 32);
    if (all == 0xffffffffu) return;
    __mg_printf("nvcuda::wmma::%s (line %d) in warp %u: lanes 0x%08llx took part together, all 32 "
                "lanes of the warp must call it\n", op_names[kind], line, warp(), all);
    __mg_warp_op(line, 0u, FAULT, 0, 0, 32);   // a mask without the lane: a sync_error
}

// The operands of one mma_sync of each warp (at most 32 warps a block), as floats.
struct stage_t { float a[16][16], b[16][16]; };
static stage_t stage[32];
}  // namespace __mg_wmma

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
    static_assert(__mg_wmma::never<T>::value && M == 16 && N == 16 && K == 16,
                  "the CPU emulator has nvcuda::wmma fragments of shape 16x16x16 only: matrix_a / "
                  "matrix_b of half or __nv_bfloat16 with row_major or col_major, accumulator of float or half");
};

// The storage every supported fragment has: 8 elements a lane (see the layout above).
template <class T> struct __mg_fragment_base {
    typedef T element_type;
    typedef T storage_element_type;
    static constexpr int num_elements = 8;
    T x[8];
};
template <class L> struct __mg_operand_layout { static constexpr bool value = false; };
template <> struct __mg_operand_layout<row_major> { static constexpr bool value = true; };
template <> struct __mg_operand_layout<col_major> { static constexpr bool value = true; };

template <class L> class fragment<matrix_a, 16, 16, 16, __half, L> : public __mg_fragment_base<__half> {
    static_assert(__mg_operand_layout<L>::value, "a matrix_a fragment needs row_major or col_major");
};
template <class L> class fragment<matrix_a, 16, 16, 16, __nv_bfloat16, L> : public __mg_fragment_base<__nv_bfloat16> {
    static_assert(__mg_operand_layout<L>::value, "a matrix_a fragment needs row_major or col_major");
};
template <class L> class fragment<matrix_b, 16, 16, 16, __half, L> : public __mg_fragment_base<__half> {
    static_assert(__mg_operand_layout<L>::value, "a matrix_b fragment needs row_major or col_major");
};
template <class L> class fragment<matrix_b, 16, 16, 16, __nv_bfloat16, L> : public __mg_fragment_base<__nv_bfloat16> {
    static_assert(__mg_operand_layout<L>::value, "a matrix_b fragment needs row_major or col_major");
};
template <> class fragment<accumulator, 16, 16, 16, float, void> : public __mg_fragment_base<float> {};
template <> class fragment<accumulator, 16, 16, 16, __half, void> : public __mg_fragment_base<__half> {};

template <class Use, class T, class L, class V>
static inline void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, const V& v) {
    for (int i = 0; i < 8; ++i) f.x[i] = v;
}

// matrix_a / matrix_b from memory laid out as the fragment's Layout says.
template <class Use, class T, class L>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm,
                                    int line = __builtin_LINE()) {
    static_assert(!__is_same(Use, accumulator), "load_matrix_sync of an accumulator takes a layout_t");
    const unsigned L0 = __mg_wmma::lane();
    const bool is_a = __is_same(Use, matrix_a);
    for (unsigned i = 0; i < 8; ++i) {
        unsigned r = is_a ? __mg_wmma::a_row(L0, i) : __mg_wmma::b_row(L0, i);
        unsigned c = is_a ? __mg_wmma::a_col(L0, i) : __mg_wmma::b_col(L0, i);
        f.x[i] = __is_same(L, row_major) ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
    __mg_wmma::collective(__mg_wmma::LOAD, line);
}

template <class T>
static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, T, void>& f, const T* p,
                                    unsigned ldm, layout_t layout, int line = __builtin_LINE()) {
    const unsigned L0 = __mg_wmma::lane();
    for (unsigned i = 0; i < 8; ++i) {
        unsigned r = __mg_wmma::a_row(L0, i), c = __mg_wmma::a_col(L0, i);
        f.x[i] = layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
    __mg_wmma::collective(__mg_wmma::LOAD, line);
}

template <class T>
static inline void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T, void>& f,
                                     unsigned ldm, layout_t layout, int line = __builtin_LINE()) {
    const unsigned L0 = __mg_wmma::lane();
    for (unsigned i = 0; i < 8; ++i) {
        unsigned r = __mg_wmma::a_row(L0, i), c = __mg_wmma::a_col(L0, i);
        (layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r]) = f.x[i];
    }
    __mg_wmma::collective(__mg_wmma::STORE, line);
}

template <class TD, class TAB, class LA, class LB, class TC>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, TD, void>& d,
                            const fragment<matrix_a, 16, 16, 16, TAB, LA>& a,
                            const fragment<matrix_b, 16, 16, 16, TAB, LB>& b,
                            const fragment<accumulator, 16, 16, 16, TC, void>& c,
                            bool satf = false, int line = __builtin_LINE()) {
    (void)satf;   // saturation is deprecated in CUDA and ignored by sm_70 and later
    __mg_wmma::stage_t& s = __mg_wmma::stage[__mg_wmma::warp()];
    const unsigned L0 = __mg_wmma::lane();
    for (unsigned i = 0; i < 8; ++i) {
        s.a[__mg_wmma::a_row(L0, i)][__mg_wmma::a_col(L0, i)] = __mg_wmma::to_float(a.x[i]);
        s.b[__mg_wmma::b_row(L0, i)][__mg_wmma::b_col(L0, i)] = __mg_wmma::to_float(b.x[i]);
    }
    __mg_wmma::collective(__mg_wmma::MMA, line);
    float out[8];
    for (unsigned i = 0; i < 8; ++i) {
        unsigned r = __mg_wmma::a_row(L0, i), col = __mg_wmma::a_col(L0, i);
        float acc = 0.0f;
        for (unsigned k = 0; k < 16; ++k) acc += s.a[r][k] * s.b[k][col];
        out[i] = acc + __mg_wmma::to_float(c.x[i]);
    }
    __mg_wmma::collective(__mg_wmma::MMA, line);   // no lane's next mma_sync overwrites the stage early
    for (unsigned i = 0; i < 8; ++i) d.x[i] = __mg_wmma::from_float<TD>(out[i]);
}

}  // namespace wmma
}  // namespace nvcuda
