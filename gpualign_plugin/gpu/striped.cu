// Striped sweep of the Gotoh (affine gap) recurrence over a rectangle of the DP matrix.
//
// One warp owns one strip of S = 32 * R consecutive rows; lane t holds rows t*R .. t*R+R-1 of the
// strip in registers and sweeps the target columns as a skewed wavefront (lane t is at column
// step - t + 1), receiving the H and F values of the row above from lane t-1 by warp shuffle.
// The strip's bottom row (H, F) is handed to the next strip through global memory in batches of
// 32 columns, each guarded by a ready flag (release/acquire). Warps take strips in increasing
// order from an atomic ticket, so a strip only ever waits on a strip with a lower ticket, held by
// a warp that is already running: the wait chain ends at strip 0, which waits on nothing. The
// argument does not depend on how many blocks are resident (see docs/GPU.md).
//
// The same kernel serves the scoring sweep (phase 1: optional row/column checkpoints, best cell,
// last row) and the re-solve of one checkpointed chunk with direction bytes (phase 3).
// Recurrences, boundaries and the direction-byte layout: docs/ALGORITHMS.md.

#include "gpualign_dp.cuh"

#define FULL_MASK 0xffffffffu

// Polling uses relaxed loads and one acquire fence after the flag is seen: an acquire load in
// the polling loop would invalidate the L1 cache at every poll.
__device__ __forceinline__ int load_relaxed(const int* p) {
    int v;
    asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

__device__ __forceinline__ void store_release(int* p, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Loads the R int8 substitution scores of a lane's rows against one target letter (R bytes of the
// query profile) as 32-bit words, with one vector load.
template <int R>
__device__ __forceinline__ void load_scores(const signed char* p, unsigned int (&w)[(R + 3) / 4]) {
    if constexpr (R == 16) {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
    } else if constexpr (R == 8) {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        w[0] = v.x; w[1] = v.y;
    } else if constexpr (R == 4) {
        w[0] = *reinterpret_cast<const unsigned int*>(p);
    } else {
        w[0] = *reinterpret_cast<const unsigned short*>(p);
    }
}

// Stores R direction bytes (packed in words) with one vector store.
template <int R>
__device__ __forceinline__ void store_dirs(unsigned char* p, const unsigned int (&d)[(R + 3) / 4]) {
    if constexpr (R == 16) {
        *reinterpret_cast<uint4*>(p) = make_uint4(d[0], d[1], d[2], d[3]);
    } else if constexpr (R == 8) {
        *reinterpret_cast<uint2*>(p) = make_uint2(d[0], d[1]);
    } else if constexpr (R == 4) {
        *reinterpret_cast<unsigned int*>(p) = d[0];
    } else {
        *reinterpret_cast<unsigned short*>(p) = (unsigned short)d[0];
    }
}

template <bool B> struct Flag { static constexpr bool value = B; };

struct SweepArgs {
    const unsigned char* query;   // codes of the rectangle's rows, padded to num_strips * S
    const unsigned char* target;  // codes of the rectangle's columns (width)
    const int* sub;               // alpha x alpha substitution scores, sub[q * alpha + t]
    int alpha;
    int height, width;            // real rows and columns of the rectangle
    int gap_oe, gap_e;            // open + extend, extend
    const int* top_h;             // width + 1: H of the row above the rectangle, columns 0..width
    const int* top_f;             // width + 1: F of the row above ([0] unused)
    const int* left_h;            // num_strips * S: H of the column left of the rectangle, rows 1..
    const int* left_e;            // num_strips * S: E of that column
    int2* slots;                  // 2 * width handover rows (H, F)
    int* flags;                   // 2 * batches ready flags (strip index), -1 initially
    int* ticket;                  // strip ticket counter, 0 initially
    int num_strips;
    int2* row_ckpt;               // (H, F) at rows q * row_every, q = 1..num_row_ckpt, columns 0..width
    int row_every, num_row_ckpt;
    int2* col_ckpt;               // (H, E) at columns p * col_every, p = 1..num_col_ckpt, rows 0..height
    int col_every, num_col_ckpt;
    int* last_row_h;              // H(last_row, j) for j = 1..width (index j), or null
    int last_row;
    int* best;                    // per strip (score, row, column) of the best cell (local), or null
    unsigned char* dirs;          // direction bytes, layout [strip][step][lane][R], or null
};

template <int R, bool LOCAL, bool DIRS>
__device__ __forceinline__ void sweep_strip(const SweepArgs& a, int k, signed char* prof,
                                            unsigned char* ring) {
    constexpr int S = 32 * R;
    constexpr int WORDS = (R + 3) / 4;
    const int lane = threadIdx.x & 31;
    const int width = a.width;
    const int batches = (width + 31) >> 5;
    const int row0 = k * S + lane * R;  // 0-based row (within the rectangle) of this lane's first row

    // Query profile of this strip: prof[letter * S + row] = sub[query[row], letter].
    __syncwarp();
    for (int x = lane; x < a.alpha * S; x += 32) {
        int letter = x / S, row = x - letter * S;
        prof[x] = (signed char)a.sub[a.query[k * S + row] * a.alpha + letter];
    }
    __syncwarp();

    // H is kept as HO = H - (open + extend), the value both gap recurrences start from; the
    // diagonal term then takes the open cost back with a three-input add.
    const int oe = a.gap_oe, ge = a.gap_e;
    int HO[R], E[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        HO[r] = a.left_h[row0 + r] - oe;
        E[r] = a.left_e[row0 + r];
    }
    int diag = ((row0 == 0) ? a.top_h[0] : a.left_h[row0 - 1]) - oe;
    int hb = 0, fb = 0;               // this lane's bottom row (HO, F) at its current column
    int batch_h = 0, batch_f = 0;     // lane 0's input batch, one column per lane
    int keep_h = 0, keep_f = 0;       // output batch being collected, one column per lane
    int best_v = 0, best_i = 0x7fffffff, best_j = 0;
    int next_ck = (a.col_ckpt != nullptr && a.col_every > 0) ? a.col_every : 0x7fffffff;
    const bool track = LOCAL && a.best != nullptr;
    int last_r = a.last_row_h != nullptr ? a.last_row - 1 - row0 : -1;
    const bool owns_last = last_r >= 0 && last_r < R;
    const bool hand_over = k + 1 < a.num_strips;
    const bool write_row_ckpt = a.row_ckpt != nullptr && hand_over && ((k + 1) * S) % a.row_every == 0
                                && ((k + 1) * S) / a.row_every <= a.num_row_ckpt;
    int2* row_ckpt_out = write_row_ckpt ? a.row_ckpt + (size_t)(((k + 1) * S) / a.row_every - 1) * (width + 1)
                                        : nullptr;
    const int2* slot_in = a.slots + (size_t)((k + 1) & 1) * width;
    int2* slot_out = a.slots + (size_t)(k & 1) * width;
    const int* flag_in = a.flags + ((k + 1) & 1) * batches;
    int* flag_out = a.flags + (k & 1) * batches;
    const size_t steps = (size_t)width + 31;
    unsigned char* dir_base = DIRS ? a.dirs + (size_t)k * steps * S + lane * R : nullptr;

    // One step of the skewed wavefront: lane t computes column s - t + 1 for its R rows.
    // BOUNDS is false in the middle steps, where every lane's column exists.
    auto step = [&](const int s, auto bounds) {
        const int j = s - lane + 1;  // this lane's column (1-based)
        // Every 32 steps: the next 32 target letters into the warp's 64-letter ring (lane t reads
        // column s - t + 1, at most 31 behind lane 0), and lane 0's input row above the strip.
        if ((s & 31) == 0 && s < width) {
            const int c = s >> 5;
            const int col = s + lane + 1;
            if (col <= width) ring[(col - 1) & 63] = a.target[col - 1];
            __syncwarp();
            if (k == 0) {
                if (col <= width) {
                    batch_h = a.top_h[col];
                    batch_f = a.top_f[col];
                }
            } else {
                if (lane == 0) {
                    while (load_relaxed(flag_in + c) != k - 1) {
                    }
                    fence_acquire();
                }
                __syncwarp();
                if (col <= width) {
                    int2 v = __ldcg(slot_in + col - 1);
                    batch_h = v.x;
                    batch_f = v.y;
                }
            }
        }
        int up_h = __shfl_up_sync(FULL_MASK, hb, 1);
        int up_f = __shfl_up_sync(FULL_MASK, fb, 1);
        const int from_batch_h = __shfl_sync(FULL_MASK, batch_h, s & 31);
        const int from_batch_f = __shfl_sync(FULL_MASK, batch_f, s & 31);
        if (lane == 0) {
            up_h = from_batch_h - oe;
            up_f = from_batch_f;
        }
        if (!decltype(bounds)::value || (j >= 1 && j <= width)) {
            unsigned int w[WORDS];
            load_scores<R>(prof + ring[(j - 1) & 63] * S + lane * R, w);
            int hu = up_h, fu = up_f, hd = diag;
            unsigned int dw[WORDS];
#pragma unroll
            for (int x = 0; x < WORDS; ++x) dw[x] = 0;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const int sc = (int)(signed char)(unsigned char)(w[r >> 2] >> (8 * (r & 3)));
                const int e = max(E[r] - ge, HO[r]);  // HO[r] = H(i, j-1) - o - e: the gap opens
                const int f = max(fu - ge, hu);       // hu = H(i-1, j) - o - e
                const int dg = hd + sc + oe;          // H(i-1, j-1) + s(a_i, b_j)
                const int h = LOCAL ? DP_MAX4_0(dg, e, f) : DP_MAX3(dg, e, f);
                if (DIRS) {
                    unsigned int d = (LOCAL && h == 0) ? 0u : (h == dg ? 1u : (h == e ? 2u : 3u));
                    d |= (e == HO[r] ? 4u : 0u) | (f == hu ? 8u : 0u);
                    dw[r >> 2] |= d << (8 * (r & 3));
                }
                hd = HO[r];
                HO[r] = h - oe;
                E[r] = e;
                hu = HO[r];
                fu = f;
            }
            diag = up_h;
            hb = hu;
            fb = fu;
            if (DIRS) store_dirs<R>(dir_base + (size_t)s * S, dw);
            if (track) {
                int col_max = HO[0];
#pragma unroll
                for (int r = 1; r < R; ++r) col_max = max(col_max, HO[r]);
                col_max += oe;
                if (col_max > 0 && col_max >= best_v) {
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        const int i = row0 + r + 1;
                        const int h = HO[r] + oe;
                        if (i <= a.height && (h > best_v || (h == best_v && i < best_i))) {
                            best_v = h;
                            best_i = i;
                            best_j = j;
                        }
                    }
                }
            }
            if (owns_last) {
                int v = HO[0];
#pragma unroll
                for (int r = 1; r < R; ++r)
                    if (r == last_r) v = HO[r];
                a.last_row_h[j] = v + oe;
            }
            if (j == next_ck) {
                int2* out = a.col_ckpt + (size_t)(j / a.col_every - 1) * (a.height + 1);
                if (j / a.col_every <= a.num_col_ckpt) {
#pragma unroll
                    for (int r = 0; r < R; ++r)
                        if (row0 + r + 1 <= a.height) out[row0 + r + 1] = make_int2(HO[r] + oe, E[r]);
                }
                next_ck += a.col_every;
            }
        }
        // Collect lane 31's bottom row and publish it 32 columns at a time.
        if (hand_over && s >= 31) {
            const int out_j = s - 30;
            const int out_h = __shfl_sync(FULL_MASK, hb, 31);
            const int out_f = __shfl_sync(FULL_MASK, fb, 31);
            if (lane == ((out_j - 1) & 31)) {
                keep_h = out_h + oe;
                keep_f = out_f;
            }
            if (((out_j - 1) & 31) == 31 || out_j == width) {
                const int col = ((out_j - 1) & ~31) + lane + 1;
                if (col <= width) {
                    slot_out[col - 1] = make_int2(keep_h, keep_f);
                    if (row_ckpt_out != nullptr) row_ckpt_out[col] = make_int2(keep_h, keep_f);
                }
                __threadfence();
                __syncwarp();
                if (lane == 0) store_release(flag_out + ((out_j - 1) >> 5), k);
            }
        }
    };
    const int ramp = min(31, width);
    int s = 0;
    for (; s < ramp; ++s) step(s, Flag<true>{});
#pragma unroll 2
    for (; s < width; ++s) step(s, Flag<false>{});
    for (; s < width + 31; ++s) step(s, Flag<true>{});

    if (track) {
        // Warp reduction of (score desc, row asc, column asc).
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            const int v = __shfl_xor_sync(FULL_MASK, best_v, off);
            const int i = __shfl_xor_sync(FULL_MASK, best_i, off);
            const int jj = __shfl_xor_sync(FULL_MASK, best_j, off);
            if (v > best_v || (v == best_v && (i < best_i || (i == best_i && jj < best_j)))) {
                best_v = v;
                best_i = i;
                best_j = jj;
            }
        }
        if (lane == 0) {
            a.best[3 * k] = best_v;
            a.best[3 * k + 1] = best_i;
            a.best[3 * k + 2] = best_j;
        }
    }
}

// Parameters in SweepArgs order (CuPy passes each argument by its own type; null pointers as 0).
template <int R, bool LOCAL, bool DIRS>
__global__ void __launch_bounds__(128)
striped_sweep(const unsigned char* query, const unsigned char* target, const int* sub, int alpha,
              int height, int width, int gap_oe, int gap_e, const int* top_h, const int* top_f,
              const int* left_h, const int* left_e, int2* slots, int* flags, int* ticket,
              int num_strips, int2* row_ckpt, int row_every, int num_row_ckpt, int2* col_ckpt,
              int col_every, int num_col_ckpt, int* last_row_h, int last_row, int* best,
              unsigned char* dirs) {
    const SweepArgs a{query,    target,     sub,          alpha,    height,       width,
                      gap_oe,   gap_e,      top_h,        top_f,    left_h,       left_e,
                      slots,    flags,      ticket,       num_strips, row_ckpt,   row_every,
                      num_row_ckpt, col_ckpt, col_every,  num_col_ckpt, last_row_h, last_row,
                      best,     dirs};
    // Dynamic shared memory: one query profile (alpha x 32R bytes) per warp, then one 64-letter
    // target ring per warp.
    extern __shared__ signed char shared_profile[];
    const int warp = threadIdx.x >> 5;
    signed char* prof = shared_profile + warp * (alpha * 32 * R);
    unsigned char* ring = reinterpret_cast<unsigned char*>(shared_profile) +
                          (blockDim.x >> 5) * (alpha * 32 * R) + warp * 64;
    const int lane = threadIdx.x & 31;
    while (true) {
        int k = 0;
        if (lane == 0) k = atomicAdd(ticket, 1);
        k = __shfl_sync(FULL_MASK, k, 0);
        if (k >= num_strips) break;
        sweep_strip<R, LOCAL, DIRS>(a, k, prof, ring);
    }
}
