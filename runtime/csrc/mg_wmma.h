// mg_wmma.h -- CUDA's warp matrix API (<mma.h>, nvcuda::wmma) for the mutagym CPU emulator.
//
// Shapes 16x16x16, 32x8x16 and 8x32x16 (m x n x k): matrix_a / matrix_b of __half or
// __nv_bfloat16 (row_major or col_major), accumulators of float or __half. tf32, integer and
// sub-byte types, and the alignment rules CUDA states for ldm and pointers (not checked here) are
// not emulated; an unsupported fragment is refused when compiled.
//
// Which lane holds which element of a fragment is opaque in CUDA; here it is fixed, the PTX ISA's
// mma.m16n8k16 register layout extended by its own 8x8 cores. A tile (matrix_a: m x k, matrix_b:
// k x n, accumulator: m x n) is a grid of 8x8 cores, numbered with the row block fastest (core q
// is row block q % (rows / 8), column block q / (rows / 8)); element i of a lane is in core i / 2.
// For lane L, g = L / 4 and t = L % 4; inside its core, element i is
//   matrix_a, accumulator: row g, column 2t + (i & 1)
//   matrix_b:              row 2t + (i & 1), column g
// so a lane has rows x columns / 32 elements (num_elements: 8 for every 16x16 tile and every
// accumulator, 16 and 4 for the 32x16 / 8x16 and 16x8 / 16x32 operands; CUDA's own counts differ
// by architecture). For 16x16x16 this is exactly mma.m16n8k16's layout with two n8 halves side by
// side: matrix_a element i at row g + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2).
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
// before the call's collective and read after it (so it is no state across launches).
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
}  // namespace wmma
}  // namespace nvcuda

// The internals, outside nvcuda (as CUDA's are not in its API).
namespace __mg_wmma {
using nvcuda::wmma::matrix_a;
using nvcuda::wmma::matrix_b;
using nvcuda::wmma::accumulator;
using nvcuda::wmma::row_major;
using nvcuda::wmma::col_major;
static inline float to_float(float v) { return v; }
static inline float to_float(__half v) { return __half2float(v); }
static inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> static inline T from_float(float v);
template <> inline float from_float<float>(float v) { return v; }
template <> inline __half from_float<__half>(float v) { return __float2half(v); }
template <> inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

static inline unsigned lane() { return cooperative_groups::__mg_cg::lane(); }
static inline unsigned warp() { return cooperative_groups::__mg_cg::block_rank() / 32u; }
// Row and column of element i of lane L in a tile of `rows` rows (the layout above).
static inline unsigned core_row(unsigned rows, unsigned i) { return 8 * ((i >> 1) % (rows / 8)); }
static inline unsigned core_col(unsigned rows, unsigned i) { return 8 * ((i >> 1) / (rows / 8)); }
static inline unsigned row_of(bool is_b, unsigned rows, unsigned L, unsigned i) {
    return core_row(rows, i) + (is_b ? 2 * (L % 4) + (i & 1) : L / 4);
}
static inline unsigned col_of(bool is_b, unsigned rows, unsigned L, unsigned i) {
    return core_col(rows, i) + (is_b ? L / 4 : 2 * (L % 4) + (i & 1));
}

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

// The operands of one mma_sync of each warp (at most 32 warps a block), as floats, row-major:
// a is m x 16 and b is 16 x n, at most 512 elements each. Two per warp, used in turn by each lane's
// calls (`turn`, per warp and lane): a lane's next call writes the other stage, and the one after
// can only write this one again once every lane has passed the next call's collective, so every
// lane has finished reading this one; no second collective is needed to protect it.
struct stage_t { float a[512], b[512]; };
static stage_t stage[32][2];
static unsigned char turn[32][32];

// The tile a fragment holds, and what CUDA's fragments may be.
template <class Use, int M, int N, int K> struct tile { static constexpr unsigned rows = 8, cols = 8; };
template <int M, int N, int K> struct tile<matrix_a, M, N, K> { static constexpr unsigned rows = M, cols = K; };
template <int M, int N, int K> struct tile<matrix_b, M, N, K> { static constexpr unsigned rows = K, cols = N; };
template <int M, int N, int K> struct tile<accumulator, M, N, K> { static constexpr unsigned rows = M, cols = N; };
template <int M, int N, int K> struct shape {
    static constexpr bool value = K == 16 && ((M == 16 && N == 16) || (M == 32 && N == 8) || (M == 8 && N == 32));
};
template <class Use, class T> struct element { static constexpr bool value = false; };
template <> struct element<matrix_a, __half> { static constexpr bool value = true; };
template <> struct element<matrix_a, __nv_bfloat16> { static constexpr bool value = true; };
template <> struct element<matrix_b, __half> { static constexpr bool value = true; };
template <> struct element<matrix_b, __nv_bfloat16> { static constexpr bool value = true; };
template <> struct element<accumulator, float> { static constexpr bool value = true; };
template <> struct element<accumulator, __half> { static constexpr bool value = true; };
template <class Use, class L> struct layout { static constexpr bool value = false; };
template <> struct layout<matrix_a, row_major> { static constexpr bool value = true; };
template <> struct layout<matrix_a, col_major> { static constexpr bool value = true; };
template <> struct layout<matrix_b, row_major> { static constexpr bool value = true; };
template <> struct layout<matrix_b, col_major> { static constexpr bool value = true; };
template <> struct layout<accumulator, void> { static constexpr bool value = true; };

// The address of element (r, c) of a tile at p with leading dimension ldm.
template <class T> static inline T& at(T* p, unsigned ldm, bool row_major_order, unsigned r, unsigned c) {
    return row_major_order ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}
typedef cooperative_groups::__mg_site site;   // the caller's line, never a converted argument
}  // namespace __mg_wmma

namespace nvcuda {
namespace wmma {

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
    static_assert(__mg_wmma::shape<M, N, K>::value,
                  "the CPU emulator has nvcuda::wmma fragments of shapes 16x16x16, 32x8x16 and 8x32x16 only");
    static_assert(__mg_wmma::element<Use, T>::value,
                  "the CPU emulator has nvcuda::wmma matrix_a / matrix_b fragments of half or __nv_bfloat16 "
                  "and accumulators of float or half only");
    static_assert(__mg_wmma::layout<Use, Layout>::value,
                  "a matrix_a / matrix_b fragment needs row_major or col_major, an accumulator no layout");

  public:
    typedef T element_type;
    typedef T storage_element_type;
    static constexpr int num_elements =
        (int)(__mg_wmma::tile<Use, M, N, K>::rows * __mg_wmma::tile<Use, M, N, K>::cols / 32);
    T x[num_elements];
};

}  // namespace wmma
}  // namespace nvcuda

// mma_sync's staging and products, uninstrumented: the stage is the emulator's own per-warp scratch,
// ordered by the call's collective and by the turns of the two stages (see stage_t), so the race
// and state checks have nothing to find there, and checking its ~300 accesses per lane and call
// made a race-checked mma_sync 3.5 times slower. The fragments' loads and stores from and to device memory stay checked.
namespace __mg_wmma {
template <int M, int N, int K, class TAB, class LA, class LB>
__attribute__((no_sanitize_thread)) static void stage_operands(
        stage_t& st, const nvcuda::wmma::fragment<matrix_a, M, N, K, TAB, LA>& a,
        const nvcuda::wmma::fragment<matrix_b, M, N, K, TAB, LB>& b, unsigned lane) {
    for (unsigned i = 0; i < (unsigned)a.num_elements; ++i)
        st.a[row_of(false, M, lane, i) * K + col_of(false, M, lane, i)] = to_float(a.x[i]);
    for (unsigned i = 0; i < (unsigned)b.num_elements; ++i)
        st.b[row_of(true, K, lane, i) * N + col_of(true, K, lane, i)] = to_float(b.x[i]);
}
// This lane's stage for its next call, and the turn moved on for the call after it.
__attribute__((no_sanitize_thread)) static stage_t& next_stage(unsigned warp, unsigned lane) {
    const unsigned t = turn[warp][lane];
    turn[warp][lane] = (unsigned char)(t ^ 1u);
    return stage[warp][t];
}
// out[i] = (the sum over k, in k order, of a[r][k] * b[k][c]) + c[r][c], for element i of the lane.
template <int M, int N, int K, class TC>
__attribute__((no_sanitize_thread)) static void multiply(
        const stage_t& st, const nvcuda::wmma::fragment<accumulator, M, N, K, TC, void>& c, unsigned lane,
        float* out) {
    for (unsigned i = 0; i < (unsigned)c.num_elements; ++i) {
        const unsigned r = row_of(false, M, lane, i), col = col_of(false, M, lane, i);
        float acc = 0.0f;
        for (unsigned k = 0; k < (unsigned)K; ++k) acc += st.a[r * K + k] * st.b[k * N + col];
        out[i] = acc + to_float(c.x[i]);
    }
}
}  // namespace __mg_wmma

namespace nvcuda {
namespace wmma {

template <class Use, int M, int N, int K, class T, class L, class V>
static inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& v) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// matrix_a / matrix_b from memory laid out as the fragment's Layout says.
template <class Use, int M, int N, int K, class T, class L>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const T* p, unsigned ldm,
                                    __mg_wmma::site s = __mg_wmma::site()) {
    static_assert(!__is_same(Use, accumulator), "load_matrix_sync of an accumulator takes a layout_t");
    const unsigned lane = __mg_wmma::lane(), rows = __mg_wmma::tile<Use, M, N, K>::rows;
    const bool is_b = __is_same(Use, matrix_b);
    for (unsigned i = 0; i < (unsigned)f.num_elements; ++i)
        f.x[i] = __mg_wmma::at(p, ldm, __is_same(L, row_major), __mg_wmma::row_of(is_b, rows, lane, i),
                               __mg_wmma::col_of(is_b, rows, lane, i));
    __mg_wmma::collective(__mg_wmma::LOAD, s.line);
}

template <int M, int N, int K, class T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const T* p, unsigned ldm,
                                    layout_t layout, __mg_wmma::site s = __mg_wmma::site()) {
    const unsigned lane = __mg_wmma::lane();
    for (unsigned i = 0; i < (unsigned)f.num_elements; ++i)
        f.x[i] = __mg_wmma::at(p, ldm, layout == mem_row_major, __mg_wmma::row_of(false, M, lane, i),
                               __mg_wmma::col_of(false, M, lane, i));
    __mg_wmma::collective(__mg_wmma::LOAD, s.line);
}

template <int M, int N, int K, class T>
static inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T, void>& f, unsigned ldm,
                                     layout_t layout, __mg_wmma::site s = __mg_wmma::site()) {
    const unsigned lane = __mg_wmma::lane();
    for (unsigned i = 0; i < (unsigned)f.num_elements; ++i)
        __mg_wmma::at(p, ldm, layout == mem_row_major, __mg_wmma::row_of(false, M, lane, i),
                      __mg_wmma::col_of(false, M, lane, i)) = f.x[i];
    __mg_wmma::collective(__mg_wmma::STORE, s.line);
}

template <int M, int N, int K, class TD, class TAB, class LA, class LB, class TC>
static inline void mma_sync(fragment<accumulator, M, N, K, TD, void>& d,
                            const fragment<matrix_a, M, N, K, TAB, LA>& a,
                            const fragment<matrix_b, M, N, K, TAB, LB>& b,
                            const fragment<accumulator, M, N, K, TC, void>& c,
                            bool satf = false, __mg_wmma::site s = __mg_wmma::site()) {
    (void)satf;   // saturation is deprecated in CUDA and ignored by sm_70 and later
    const unsigned lane = __mg_wmma::lane();
    __mg_wmma::stage_t& st = __mg_wmma::next_stage(__mg_wmma::warp(), lane);
    __mg_wmma::stage_operands(st, a, b, lane);
    __mg_wmma::collective(__mg_wmma::MMA, s.line);
    float out[fragment<accumulator, M, N, K, TD, void>::num_elements];
    __mg_wmma::multiply(st, c, lane, out);
    for (unsigned i = 0; i < (unsigned)d.num_elements; ++i) d.x[i] = __mg_wmma::from_float<TD>(out[i]);
}

}  // namespace wmma
}  // namespace nvcuda
