// mg_cooperative_groups.h -- CUDA's cooperative groups (<cooperative_groups.h>, <cooperative_groups/
// reduce.h>, <cooperative_groups/scan.h>) for the mutagym CPU emulator.
//
// Every group operation is one of the emulator's own barriers or warp collectives (mutagym_cuda.h:
// __mg_syncthreads, __mg_warp_op), so thread orders, the mask checks (a lane outside its group's
// mask, or one that exited, is a sync_error) and the race detector's ordering rules (a barrier
// orders the block, a warp collective only its lanes) hold for group code exactly as for the
// intrinsics it stands for:
//   thread_block::sync()                 __syncthreads()
//   thread_block_tile<N> / coalesced_group: sync, shfl*, any, all, ballot, match_*   the _sync
//                                        collectives on the group's lane mask (tile width N)
//   coalesced_threads()                  __activemask()
//   cg::reduce, inclusive_scan, exclusive_scan   shuffles, in CUDA's order (a butterfly of
//                                        shfl_xor for reduce, shfl_up doubling for scans), so a
//                                        floating-point result is the one a GPU computes
// A group's sync() is a barrier site of its own caller's line (as each __syncthreads() is), so two
// different sync() lines reached by different threads are a divergent barrier.
//
// Not available, refused when compiled: grid_group::sync() (the emulator runs the blocks of a
// launch one at a time, so no block can wait for another; this_grid()'s ranks and sizes work),
// tiles wider than a warp (thread_block_tile<64> and up need CUDA's block_tile_memory), clusters,
// memcpy_async. Shuffles move any trivially copyable type, 8 bytes per collective.
#pragma once

namespace cooperative_groups {

// The line of a sync() call (its default argument is evaluated where sync() is called).
struct __mg_site {
    int line;
    explicit constexpr __mg_site(int l = __builtin_LINE()) : line(l) {}
};

namespace __mg_cg {
// Groups are made by this header's functions only: their constructors take a key no kernel can
// name (the checks refuse `__mg_` identifiers), as CUDA's are private.
struct key {};
template <class T> struct never { static constexpr bool value = false; };
template <class T> struct is_integral { static constexpr bool value = false; };
#define __MG_INTEGRAL(T) template <> struct is_integral<T> { static constexpr bool value = true; };
__MG_INTEGRAL(bool) __MG_INTEGRAL(char) __MG_INTEGRAL(signed char) __MG_INTEGRAL(unsigned char)
__MG_INTEGRAL(short) __MG_INTEGRAL(unsigned short) __MG_INTEGRAL(int) __MG_INTEGRAL(unsigned)
__MG_INTEGRAL(long) __MG_INTEGRAL(unsigned long) __MG_INTEGRAL(long long)
__MG_INTEGRAL(unsigned long long)
#undef __MG_INTEGRAL
template <class T, class U> struct same { static constexpr bool value = false; };
template <class T> struct same<T, T> { static constexpr bool value = true; };

static inline unsigned block_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
static inline unsigned lane() { return block_rank() % 32u; }
static inline unsigned lanes_below() { return (1u << lane()) - 1u; }
static inline void barrier(__mg_site s) { __mg_syncthreads(s.line, -s.line); }
static inline void warp_sync(unsigned mask) { __mg_warp_op(0, mask, __MG_WARP_SYNC, 0, 0, 32); }

// A shuffle of any trivially copyable value: one collective per 8 bytes.
template <class T>
static inline T shuffle(int kind, unsigned mask, T value, int arg, int width) {
    static_assert(__is_trivially_copyable(T), "cooperative groups shuffle trivially copyable types only");
    T out = value;
    for (unsigned k = 0; k < sizeof(T); k += 8) {
        unsigned n = sizeof(T) - k < 8 ? (unsigned)sizeof(T) - k : 8u;
        unsigned long long bits = 0;
        __builtin_memcpy(&bits, (const unsigned char*)&value + k, n);
        bits = __mg_warp_op(0, mask, kind, bits, arg, width);
        __builtin_memcpy((unsigned char*)&out + k, &bits, n);
    }
    return out;
}
template <class T> static inline unsigned long long match_bits(T value) {
    static_assert(is_integral<T>::value || __is_same(T, float) || __is_same(T, double),
                  "match_any / match_all take an integer or floating-point value");
    return __mg_bits(value);
}
// The lane of the rank-th member of mask (32 if there is none).
static inline unsigned lane_of_rank(unsigned mask, unsigned rank) {
    for (unsigned l = 0; l < 32; l++)
        if (mask >> l & 1u) {
            if (rank == 0) return l;
            rank--;
        }
    return 32u;
}
// The bits of lanes packed to group ranks: bit r is the lane of rank r.
static inline unsigned pack(unsigned mask, unsigned lanes) {
    unsigned out = 0, rank = 0;
    for (unsigned l = 0; l < 32; l++)
        if (mask >> l & 1u) out |= (lanes >> l & 1u) << rank++;
    return out;
}
}  // namespace __mg_cg

// ---------------------------------------------------------------- thread_group
// A group of any kind, as passed to `void f(thread_group g)`: the whole block, or a set of lanes
// of one warp (a tile or a coalesced group).
class thread_group {
  public:
    unsigned __mg_lanes;      // the warp's lanes in the group; 0 for the whole block
    unsigned __mg_meta_rank;
    unsigned __mg_meta_size;
    constexpr thread_group(__mg_cg::key, unsigned lanes, unsigned meta_rank, unsigned meta_size)
        : __mg_lanes(lanes), __mg_meta_rank(meta_rank), __mg_meta_size(meta_size) {}

    unsigned long long num_threads() const {
        return __mg_lanes ? (unsigned long long)__popc(__mg_lanes) : __mg_cg::block_threads();
    }
    unsigned long long size() const { return num_threads(); }
    unsigned long long thread_rank() const {
        return __mg_lanes ? (unsigned long long)__popc(__mg_lanes & __mg_cg::lanes_below()) : __mg_cg::block_rank();
    }
    void sync(__mg_site s = __mg_site()) const {
        if (__mg_lanes) __mg_cg::warp_sync(__mg_lanes);
        else __mg_cg::barrier(s);
    }
};

// ---------------------------------------------------------------- thread_block
class thread_block : public thread_group {
  public:
    constexpr thread_block(__mg_cg::key k) : thread_group(k, 0u, 0u, 1u) {}
    static void sync(__mg_site s = __mg_site()) { __mg_cg::barrier(s); }
    static unsigned int size() { return __mg_cg::block_threads(); }
    static unsigned int num_threads() { return __mg_cg::block_threads(); }
    static unsigned int thread_rank() { return __mg_cg::block_rank(); }
    static dim3 group_index() { return dim3(blockIdx); }
    static dim3 thread_index() { return dim3(threadIdx); }
    static dim3 group_dim() { return blockDim; }
    static dim3 dim_threads() { return blockDim; }
};

static inline thread_block this_thread_block() { return thread_block(__mg_cg::key()); }

// ---------------------------------------------------------------- grid_group
class grid_group : public thread_group {
  public:
    constexpr grid_group(__mg_cg::key k) : thread_group(k, 0u, 0u, 1u) {}
    // Not a cooperative launch: is_valid() is false, as on a GPU launched without one.
    static bool is_valid() { return false; }
    template <class Never = void> void sync() const {
        static_assert(__mg_cg::never<Never>::value,
                      "grid_group::sync() (grid-wide synchronisation) is not supported: the CPU "
                      "emulator runs the blocks of a launch one at a time, so no block can wait for "
                      "another; split the kernel into two [[launch]] tables instead");
    }
    static unsigned long long num_blocks() {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
    }
    static unsigned long long block_rank() {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    static unsigned long long num_threads() { return num_blocks() * __mg_cg::block_threads(); }
    static unsigned long long size() { return num_threads(); }
    static unsigned long long thread_rank() {
        return block_rank() * __mg_cg::block_threads() + __mg_cg::block_rank();
    }
    static dim3 block_index() { return dim3(blockIdx); }
    static dim3 dim_blocks() { return gridDim; }
    static dim3 group_dim() { return gridDim; }
    static dim3 dim_threads() {
        return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
    }
    static dim3 thread_index() {
        return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                    blockIdx.z * blockDim.z + threadIdx.z);
    }
};

static inline grid_group this_grid() { return grid_group(__mg_cg::key()); }

// ---------------------------------------------------------------- coalesced_group
class coalesced_group : public thread_group {
  public:
    constexpr coalesced_group(__mg_cg::key k, unsigned lanes, unsigned meta_rank = 0u,
                              unsigned meta_size = 1u)
        : thread_group(k, lanes, meta_rank, meta_size) {}
    unsigned int num_threads() const { return (unsigned)__popc(__mg_lanes); }
    unsigned int size() const { return num_threads(); }
    unsigned int thread_rank() const { return (unsigned)__popc(__mg_lanes & __mg_cg::lanes_below()); }
    unsigned int meta_group_rank() const { return __mg_meta_rank; }
    unsigned int meta_group_size() const { return __mg_meta_size; }
    void sync(__mg_site = __mg_site()) const { __mg_cg::warp_sync(__mg_lanes); }

    template <class T> T shfl(T var, int srcRank) const {
        return __mg_cg::shuffle(__MG_SHFL_IDX, __mg_lanes, var,
                                (int)__mg_cg::lane_of_rank(__mg_lanes, (unsigned)srcRank), 32);
    }
    // The member delta ranks above (below); a thread with none reads its own value.
    template <class T> T shfl_down(T var, unsigned int delta) const {
        unsigned src = __mg_cg::lane_of_rank(__mg_lanes, thread_rank() + delta);
        return __mg_cg::shuffle(__MG_SHFL_IDX, __mg_lanes, var, (int)(src < 32u ? src : __mg_cg::lane()), 32);
    }
    template <class T> T shfl_up(T var, int delta) const {
        unsigned rank = thread_rank();
        unsigned src = (unsigned)delta <= rank ? __mg_cg::lane_of_rank(__mg_lanes, rank - (unsigned)delta) : 32u;
        return __mg_cg::shuffle(__MG_SHFL_IDX, __mg_lanes, var, (int)(src < 32u ? src : __mg_cg::lane()), 32);
    }
    int any(int predicate) const { return ballot(predicate) != 0; }
    int all(int predicate) const { return __ballot_sync(__mg_lanes, predicate) == __mg_lanes; }
    unsigned int ballot(int predicate) const {
        return __mg_cg::pack(__mg_lanes, __ballot_sync(__mg_lanes, predicate));
    }
    template <class T> unsigned int match_any(T val) const {
        return __mg_cg::pack(__mg_lanes, (unsigned)__mg_warp_op(0, __mg_lanes, __MG_MATCH_ANY,
                                                             __mg_cg::match_bits(val), 0, 32));
    }
    template <class T> unsigned int match_all(T val, int& pred) const {
        unsigned r = (unsigned)__mg_warp_op(0, __mg_lanes, __MG_MATCH_ALL, __mg_cg::match_bits(val), 0, 32);
        pred = r != 0;
        return __mg_cg::pack(__mg_lanes, r);
    }
};

static inline coalesced_group coalesced_threads() { return coalesced_group(__mg_cg::key(), __activemask()); }

// ---------------------------------------------------------------- thread_block_tile
namespace __mg_cg {
// What every tile of N lanes offers; thread_block_tile<N, Parent> adds only its type.
template <unsigned N>
class tile : public thread_group {
    static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32,
                  "thread_block_tile<N>: N must be 1, 2, 4, 8, 16 or 32 here (tiles wider than a "
                  "warp need CUDA's block_tile_memory, which the CPU emulator does not support)");

  protected:
    static unsigned tile_mask() {
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (lane() & ~(N - 1u));
    }

  public:
    tile(key k, unsigned meta_rank, unsigned meta_size) : thread_group(k, tile_mask(), meta_rank, meta_size) {}
    static unsigned int thread_rank() { return block_rank() & (N - 1u); }
    static constexpr unsigned int num_threads() { return N; }
    static constexpr unsigned int size() { return N; }
    unsigned int meta_group_rank() const { return __mg_meta_rank; }
    unsigned int meta_group_size() const { return __mg_meta_size; }
    static void sync(__mg_site = __mg_site()) { warp_sync(tile_mask()); }

    template <class T> T shfl(T var, int srcRank) const {
        return shuffle(__MG_SHFL_IDX, tile_mask(), var, srcRank, (int)N);
    }
    template <class T> T shfl_down(T var, unsigned int delta) const {
        return shuffle(__MG_SHFL_DOWN, tile_mask(), var, (int)delta, (int)N);
    }
    template <class T> T shfl_up(T var, unsigned int delta) const {
        return shuffle(__MG_SHFL_UP, tile_mask(), var, (int)delta, (int)N);
    }
    template <class T> T shfl_xor(T var, unsigned int laneMask) const {
        return shuffle(__MG_SHFL_XOR, tile_mask(), var, (int)laneMask, (int)N);
    }
    int any(int predicate) const { return __ballot_sync(tile_mask(), predicate) != 0; }
    int all(int predicate) const { return __ballot_sync(tile_mask(), predicate) == tile_mask(); }
    unsigned int ballot(int predicate) const {
        return __ballot_sync(tile_mask(), predicate) >> (lane() & ~(N - 1u));
    }
    template <class T> unsigned int match_any(T val) const {
        return (unsigned)__mg_warp_op(0, tile_mask(), __MG_MATCH_ANY, match_bits(val), 0, 32)
               >> (lane() & ~(N - 1u));
    }
    template <class T> unsigned int match_all(T val, int& pred) const {
        unsigned r = (unsigned)__mg_warp_op(0, tile_mask(), __MG_MATCH_ALL, match_bits(val), 0, 32);
        pred = r != 0;
        return r >> (lane() & ~(N - 1u));
    }
};

// The rank in, and the size of, a parent group that tiles are cut from.
template <class Parent> struct parent_of {
    static_assert(never<Parent>::value, "tiled_partition<N>() takes a thread_block or a thread_block_tile");
    static unsigned rank() { return 0; }
    static unsigned size() { return 1; }
};
template <> struct parent_of<thread_block> {
    static unsigned rank() { return block_rank(); }
    static unsigned size() { return block_threads(); }
};
}  // namespace __mg_cg

template <unsigned int Size, class ParentT = void> class thread_block_tile;

template <unsigned int Size, class ParentT>
class thread_block_tile : public __mg_cg::tile<Size> {
  public:
    thread_block_tile(__mg_cg::key k)
        : __mg_cg::tile<Size>(k, __mg_cg::parent_of<ParentT>::rank() / Size,
                              (__mg_cg::parent_of<ParentT>::size() + Size - 1u) / Size) {}
};

template <unsigned int Size>
class thread_block_tile<Size, void> : public __mg_cg::tile<Size> {
  public:
    thread_block_tile(__mg_cg::key k, unsigned meta_rank, unsigned meta_size)
        : __mg_cg::tile<Size>(k, meta_rank, meta_size) {}
    template <class ParentT>
    thread_block_tile(const thread_block_tile<Size, ParentT>& t) : __mg_cg::tile<Size>(t) {}
};

namespace __mg_cg {
template <unsigned M, class P> struct parent_of<thread_block_tile<M, P>> {
    static unsigned rank() { return block_rank() & (M - 1u); }
    static unsigned size() { return M; }
};
}  // namespace __mg_cg

template <unsigned int Size, class ParentT>
static inline thread_block_tile<Size, ParentT> tiled_partition(const ParentT&) {
    return thread_block_tile<Size, ParentT>(__mg_cg::key());
}

static inline thread_block_tile<1, void> this_thread() {
    return thread_block_tile<1, void>(__mg_cg::key(), __mg_cg::block_rank(), __mg_cg::block_threads());
}

// tiled_partition(parent, tilesz): tiles of a run-time size, a power of two <= 32 (else a trap):
// a block is cut by thread ranks, a warp's group by its members' ranks; a group no larger than
// tilesz is its own tile.
static inline thread_group tiled_partition(const thread_group& parent, unsigned int tilesz) {
    if (tilesz == 0u || tilesz > 32u || (tilesz & (tilesz - 1u))) __builtin_trap();
    unsigned count = (unsigned)parent.num_threads();
    unsigned base = (unsigned)parent.thread_rank() & ~(tilesz - 1u);
    unsigned lanes = tilesz == 32u ? 0xffffffffu : ((1u << tilesz) - 1u) << (__mg_cg::lane() & ~(tilesz - 1u));
    if (parent.__mg_lanes && count <= tilesz) return parent;
    if (parent.__mg_lanes) {
        lanes = 0;
        for (unsigned r = base; r < base + tilesz; r++) {
            unsigned l = __mg_cg::lane_of_rank(parent.__mg_lanes, r);
            if (l < 32u) lanes |= 1u << l;
        }
    }
    return thread_group(__mg_cg::key(), lanes, base / tilesz, (count + tilesz - 1u) / tilesz);
}
static inline thread_group tiled_partition(const thread_block& parent, unsigned int tilesz) {
    return tiled_partition(static_cast<const thread_group&>(parent), tilesz);
}
static inline coalesced_group tiled_partition(const coalesced_group& parent, unsigned int tilesz) {
    thread_group t = tiled_partition(static_cast<const thread_group&>(parent), tilesz);
    return coalesced_group(__mg_cg::key(), t.__mg_lanes, t.__mg_meta_rank, t.__mg_meta_size);
}

// The members of a warp's group (a tile or a coalesced group) with the same label, or on the same
// side of a predicate, as a coalesced group.
template <class G> static inline coalesced_group labeled_partition(const G& parent, int label) {
    return coalesced_group(__mg_cg::key(), __match_any_sync(parent.__mg_lanes, label));
}
template <class G> static inline coalesced_group labeled_partition(const G& parent, unsigned int label) {
    return coalesced_group(__mg_cg::key(), __match_any_sync(parent.__mg_lanes, label));
}
template <class G> static inline coalesced_group binary_partition(const G& parent, bool pred) {
    unsigned yes = __ballot_sync(parent.__mg_lanes, pred);
    return coalesced_group(__mg_cg::key(), pred ? yes : parent.__mg_lanes & ~yes);
}

// ---------------------------------------------------------------- free functions
template <class G> static inline void sync(const G& g, __mg_site s = __mg_site()) { g.sync(s); }
template <class G> static inline auto thread_rank(const G& g) -> decltype(g.thread_rank()) {
    return g.thread_rank();
}
template <class G> static inline auto group_size(const G& g) -> decltype(g.num_threads()) {
    return g.num_threads();
}

// ---------------------------------------------------------------- reduce.h, scan.h
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return (b < a) ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return (a < b) ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

namespace __mg_cg {
template <class G> struct warp_group { static constexpr bool value = false; };
template <unsigned N, class P> struct warp_group<thread_block_tile<N, P>> { static constexpr bool value = true; };
template <> struct warp_group<coalesced_group> { static constexpr bool value = true; };

// Hillis-Steele over ranks: step i adds the value i ranks below (CUDA's order).
template <class G, class T, class Op>
static inline T inclusive(const G& g, T value, Op& op) {
    static_assert(warp_group<G>::value, "cooperative_groups scans and reductions take a "
                  "thread_block_tile or a coalesced_group (not a whole thread_block)");
    unsigned rank = (unsigned)g.thread_rank(), count = (unsigned)g.num_threads();
    for (unsigned i = 1; i < count; i <<= 1) {
        T below = g.shfl_up(value, i);
        if (i <= rank) value = op(value, below);
    }
    return value;
}
template <unsigned N, class P, class T, class Op>
static inline T reduced(const thread_block_tile<N, P>& g, T value, Op& op) {
    for (unsigned m = N >> 1; m > 0; m >>= 1) value = op(value, g.shfl_xor(value, m));
    return value;
}
template <class T, class Op>
static inline T reduced(const coalesced_group& g, T value, Op& op) {
    if (g.num_threads() == 32u) {
        for (unsigned m = 16; m > 0; m >>= 1) value = op(value, g.shfl(value, (int)(g.thread_rank() ^ m)));
        return value;
    }
    return g.shfl(inclusive(g, value, op), (int)g.num_threads() - 1);
}
}  // namespace __mg_cg

template <class G, class T, class Op>
static inline auto reduce(const G& group, T value, Op op) -> decltype(op(value, value)) {
    static_assert(__mg_cg::warp_group<G>::value, "cooperative_groups::reduce takes a "
                  "thread_block_tile or a coalesced_group (not a whole thread_block)");
    return __mg_cg::reduced(group, value, op);
}

template <class G, class T, class Op>
static inline auto inclusive_scan(const G& group, T value, Op op) -> decltype(op(value, value)) {
    return __mg_cg::inclusive(group, value, op);
}
template <class G, class T>
static inline T inclusive_scan(const G& group, T value) {
    plus<T> op;
    return __mg_cg::inclusive(group, value, op);
}
// Exclusive: the inclusive result of the rank below; rank 0 gets T{} (an integer sum subtracts
// the thread's own value instead, as CUDA does).
template <class G, class T, class Op>
static inline auto exclusive_scan(const G& group, T value, Op op) -> decltype(op(value, value)) {
    T inc = __mg_cg::inclusive(group, value, op);
    if (__mg_cg::same<Op, plus<T>>::value && __mg_cg::is_integral<T>::value) return inc - value;
    T below = group.shfl_up(inc, 1);
    return group.thread_rank() == 0 ? T{} : below;
}
template <class G, class T>
static inline T exclusive_scan(const G& group, T value) { return exclusive_scan(group, value, plus<T>()); }

}  // namespace cooperative_groups
