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
// last row) and the re-solve of one checkpointed chunk with the four-bit directions of its cells (phase 3).
// Recurrences, boundaries and the layout of the directions: docs/ALGORITHMS.md.
//
// Block pruning (local score passes that ask for it): a warp skips a batch of 32 steps when no
// path through its cells can reach the best score already found anywhere in the sweep. Its cells
// then take lower bounds (H = 0, E = F = -inf) instead of their values; every cell on an optimal
// path, and so the end cell and every traceback choice, keeps its exact value (the argument is
// in docs/GPU.md, "Block pruning").

#include "dp_cells.cuh"
#include "sweep_sync.cuh"

#define SWEEP_NEG_INF (-(1 << 30))  // scoring.NEG_INF: minus infinity of E and F

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

// Stores R four-bit directions (two a byte, packed in words: R / 2 bytes) with one vector store.
template <int R>
__device__ __forceinline__ void store_dirs(unsigned char* p, const unsigned int (&d)[(R + 7) / 8]) {
    if constexpr (R == 16) {
        *reinterpret_cast<uint2*>(p) = make_uint2(d[0], d[1]);
    } else if constexpr (R == 8) {
        *reinterpret_cast<unsigned int*>(p) = d[0];
    } else if constexpr (R == 4) {
        *reinterpret_cast<unsigned short*>(p) = (unsigned short)d[0];
    } else {
        *p = (unsigned char)d[0];
    }
}

template <bool B> struct Flag { static constexpr bool value = B; };

// One slab of a matrix split by columns across devices (pairwise/gpu.py, _SlabLink): the slab
// on the left streams its last column (H and E of every row) to this one through mapped host
// memory, a ready flag per strip. With each strip's rows goes the best score the slab on the left
// knew when the strip ended, which the strip on the right adds to its own device's pruning best
// (once per strip: sharing bests through host memory inside the batch loop made every sweep 15x
// slower, docs/GPU.md).
struct SlabLink {
    const int* ready_in;   // per strip: nonzero once the slab on the left wrote that strip's rows of
                           // left_h / left_e, or null (the first slab)
    int* ready_out;        // the same flags for the slab on the right, or null (the last slab)
    int* edge_h;           // this rectangle's last column for the slab on the right: H, then E,
    int* edge_e;           //   of rows 1 .. num_strips * S
    const int* best_in;    // per strip: the best score the slab on the left knew (pruning), or null
    int* best_out;         // the same for the slab on the right, or null
    const int* abort;      // nonzero: another slab failed; stop waiting (the results are discarded)
    int cols_after;        // columns of the matrix right of this rectangle (the pruning bound)
};

struct SweepArgs {
    const unsigned char* query;   // codes of the rectangle's rows, padded to num_strips * S
    const unsigned char* target;  // codes of the rectangle's columns (width)
    const int* sub;               // alpha x alpha substitution scores, sub[q * alpha + t]
    int alpha;
    int height, width;            // real rows and columns of the rectangle
    int gap_oe, gap_e;            // open + extend, extend
    const int* top_h;             // width + 1: H of the row above the rectangle, columns 0..width
    const int* top_f;             // width + 1: F of the row above ([0] unused)
    const int* left_h;            // H of the column left of the rectangle, rows 1..height, left_stride
    const int* left_e;            //   apart (rows below count as H = 0, E = -inf); E of that column
    int2* slots;                  // 2 * width handover rows (H, F)
    int* flags;                   // 2 * batches ready flags (strip index), -1 initially
    int* ticket;                  // strip ticket counter, 0 initially
    int num_strips;
    int2* row_ckpt;               // (H, F) at rows q * row_every, q = 1..num_row_ckpt, columns 0..width
    int row_every, num_row_ckpt;
    int2* col_ckpt;               // (H, E) at columns p * col_every, p = 1..num_col_ckpt, rows 0..num_strips*S
    int col_every, num_col_ckpt;
    int* last_row_h;              // H(last_row, j) for j = 1..width (index j), or null
    int last_row;
    int* best;                    // per strip (score, row, column) of the best cell (local), or null
    unsigned char* dirs;          // directions, four bits a cell (row r of a lane in byte r / 2, low
                                  // half first), layout [strip][step][lane][R / 2 bytes], or null
    int* prune_best;              // block pruning: the best score seen so far by any strip (0
                                  // initially), or null for no pruning (local sweeps only)
    unsigned long long* pruned;   // cells skipped by pruning, summed over strips
    int max_sub;                  // the largest substitution score: what one cell can add
    const SlabLink* link;         // the rectangle is one slab of a split matrix, or null
    int prune_goal;               // nonzero: *prune_best is a fixed goal, a lower bound of the value
                                  // a traceback needs at the bottom-right cell; the strips' own
                                  // best scores do not raise it (a traceback region's sweep)
    int top_stride, left_stride;  // ints between consecutive values of top_h / top_f and of
                                  // left_h / left_e (2 where they are views of (H, F) or (H, E)
                                  // checkpoint pairs; the streamed column of a slab: 1)
};

// What a sweep produces besides the scores it hands on.
#define SWEEP_SCORE 0        // the end cell: per-strip best cells (local) or the last row
#define SWEEP_CHECKPOINTS 1  // the same, plus row and column checkpoints (alignment, phase 1)
#define SWEEP_DIRECTIONS 2   // the four-bit directions of every cell (re-solving a chunk, phase 3)

template <int R, bool LOCAL, int KIND>
__device__ __forceinline__ void sweep_strip(const SweepArgs& a, int k, signed char* prof,
                                            unsigned char* ring, int2* out_ring) {
    constexpr int S = 32 * R;
    constexpr int WORDS = (R + 3) / 4;
    constexpr bool DIRS = KIND == SWEEP_DIRECTIONS;
    constexpr bool TRACK = LOCAL && KIND != SWEEP_DIRECTIONS;
    constexpr bool LAST = !LOCAL && KIND != SWEEP_DIRECTIONS;
    constexpr bool PRUNE = TRACK;
    constexpr int UNROLL = R >= 16 ? 1 : 2;  // two steps at a time, where registers allow
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
    const SlabLink* link = a.link;
    int diag;
    if (link != nullptr && link->ready_in != nullptr) {
        // The column on the left comes from the slab on the left: this strip's rows, and the last
        // row of the strip above (lane 0's diagonal).
        if (lane == 0) {
            // Polls back off up to 64 us: thousands of waiting warps reading host memory in a
            // tight loop would flood the bus that the slab on the left writes through.
            unsigned int pause = 256;
            while ((load_relaxed_sys(link->ready_in + k) == 0 ||
                    (k > 0 && load_relaxed_sys(link->ready_in + k - 1) == 0)) &&
                   load_relaxed_sys(link->abort) == 0) {
                __nanosleep(pause);
                pause = min(pause * 2, 65536u);
            }
            fence_acquire_sys();
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < R; ++r) {
            HO[r] = load_relaxed_sys(a.left_h + row0 + r) - oe;
            E[r] = load_relaxed_sys(a.left_e + row0 + r);
        }
        diag = ((row0 == 0) ? a.top_h[0] : load_relaxed_sys(a.left_h + row0 - 1)) - oe;
        if (PRUNE && a.prune_best != nullptr && lane == 0)  // a score reached in this matrix: exact
            atomicMax(a.prune_best, load_relaxed_sys(link->best_in + k));
    } else {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const bool real = row0 + r < a.height;
            HO[r] = (real ? a.left_h[(size_t)(row0 + r) * a.left_stride] : 0) - oe;
            E[r] = real ? a.left_e[(size_t)(row0 + r) * a.left_stride] : SWEEP_NEG_INF;
        }
        diag = ((row0 == 0)                ? a.top_h[0]
                : row0 - 1 < a.height ? a.left_h[(size_t)(row0 - 1) * a.left_stride]
                                      : 0) - oe;
    }
    int hb = 0, fb = 0;               // this lane's bottom row (HO, F) at its current column
    int batch_h = 0, batch_f = 0;     // lane 0's input batch, one column per lane
    int best_v = 0, best_i = 0x7fffffff, best_j = 0;
    // Column checkpoints: the next column to save, the last one, and where this lane's rows go.
    const int last_ck = a.col_every * a.num_col_ckpt;
    int next_ck = KIND == SWEEP_CHECKPOINTS && a.num_col_ckpt > 0 ? a.col_every : 0x7fffffff;
    int2* col_ckpt_out = KIND == SWEEP_CHECKPOINTS ? a.col_ckpt + row0 + 1 : nullptr;
    const int last_r = LAST && a.last_row_h != nullptr ? a.last_row - 1 - row0 : -1;
    const bool owns_last = last_r >= 0 && last_r < R;
    const int real_rows = min(R, max(0, a.height - row0));  // rows of this lane inside the rectangle
    const bool hand_over = k + 1 < a.num_strips;
    const bool write_row_ckpt = KIND == SWEEP_CHECKPOINTS && a.row_ckpt != nullptr && hand_over &&
                                ((k + 1) * S) % a.row_every == 0 && ((k + 1) * S) / a.row_every <= a.num_row_ckpt;
    int2* row_ckpt_out = write_row_ckpt ? a.row_ckpt + (size_t)(((k + 1) * S) / a.row_every - 1) * (width + 1)
                                        : nullptr;
    const int2* slot_in = a.slots + (size_t)((k + 1) & 1) * width;
    int2* slot_out = a.slots + (size_t)(k & 1) * width;
    const int* flag_in = a.flags + ((k + 1) & 1) * batches;
    int* flag_out = a.flags + (k & 1) * batches;
    const size_t steps = (size_t)width + 31;
    unsigned char* dir_base = DIRS ? a.dirs + (size_t)k * steps * (S / 2) + lane * (R / 2) : nullptr;

    // At step s0 (a multiple of 32): the next 32 target letters into the warp's 64-letter ring
    // (lane t reads column s - t + 1, at most 31 behind lane 0), and lane 0's input, the row above
    // the strip, one column per lane: from the boundary row, or from the strip above once its
    // ready flag says the batch is there.
    auto fetch = [&](const int s0) {
        const int c = s0 >> 5;
        const int col = s0 + lane + 1;
        if (col <= width) ring[(col - 1) & 63] = a.target[col - 1];
        __syncwarp();
        if (k == 0) {
            if (col <= width) {
                batch_h = a.top_h[(size_t)col * a.top_stride];
                batch_f = a.top_f[(size_t)col * a.top_stride];
            }
        } else {
            if (lane == 0) {
                while (load_relaxed_gpu(flag_in + c) != k - 1) {
                }
                fence_acquire_gpu();
            }
            __syncwarp();
            if (col <= width) {
                const int2 v = __ldcg(slot_in + col - 1);
                batch_h = v.x;
                batch_f = v.y;
            }
        }
    };

    // Output batch c (columns 32c+1 .. 32c+32), collected by lane 31 in out_ring: one coalesced
    // store to the hand-over row (and the row checkpoint), then the ready flag.
    auto publish = [&](const int c) {
        __syncwarp();
        const int col = 32 * c + lane + 1;
        if (col <= width) {
            int2 v = out_ring[(col - 1) & 63];
            v.x += oe;
            slot_out[col - 1] = v;
            if (row_ckpt_out != nullptr) row_ckpt_out[col] = v;
        }
        __threadfence();
        __syncwarp();
        if (lane == 0) store_release_gpu(flag_out + c, k);
    };

    // One step of the skewed wavefront: lane t computes column s - t + 1 for its R rows.
    // BOUNDS is false in the middle batches, where every lane's column exists.
    auto step = [&](const int s, auto bounds) {
        const int j = s - lane + 1;  // this lane's column (1-based)
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
            unsigned int dw[(R + 7) / 8];
#pragma unroll
            for (int x = 0; x < (R + 7) / 8; ++x) dw[x] = 0;
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
                    dw[r >> 3] |= d << (4 * (r & 7));
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
            if (hand_over && lane == 31) out_ring[(j - 1) & 63] = make_int2(hb, fb);
            if constexpr (DIRS) store_dirs<R>(dir_base + (size_t)s * (S / 2), dw);
            if constexpr (TRACK) {
                // Best cell of the lane: this column's maximum, at its first row, when it beats
                // (score desc, row asc) the best so far. Rows past the rectangle (padding of the
                // last strip) are left out of the maximum where the lane holds any.
                int cm = HO[0];
#pragma unroll
                for (int r = 1; r < R; ++r) cm = max(cm, HO[r]);
                if (cm + oe > 0 && cm + oe >= best_v && real_rows > 0) {
                    if (real_rows < R) {
                        cm = HO[0];
#pragma unroll
                        for (int r = 1; r < R; ++r) cm = r < real_rows ? max(cm, HO[r]) : cm;
                    }
                    int first = R - 1;
#pragma unroll
                    for (int r = R - 2; r >= 0; --r) first = HO[r] == cm ? r : first;
                    const int i = row0 + first + 1;
                    if (cm + oe > best_v || (cm + oe == best_v && i < best_i)) {
                        best_v = cm + oe;
                        best_i = i;
                        best_j = j;
                    }
                }
            }
            if constexpr (LAST) {
                if (owns_last) {
                    int v = HO[0];
#pragma unroll
                    for (int r = 1; r < R; ++r)
                        if (r == last_r) v = HO[r];
                    a.last_row_h[j] = v + oe;
                }
            }
            if constexpr (KIND == SWEEP_CHECKPOINTS) {
                if (j == next_ck) {
#pragma unroll
                    for (int r = 0; r < R; ++r) col_ckpt_out[r] = make_int2(HO[r] + oe, E[r]);
                    col_ckpt_out += a.num_strips * S + 1;
                    next_ck = next_ck + a.col_every <= last_ck ? next_ck + a.col_every : 0x7fffffff;
                }
            }
        }
    };

    // Block pruning of the batch starting at step s0 (a middle batch: every lane's 32 columns
    // exist). Paths enter the warp's cells of the batch only through values it holds now: the
    // lanes' left column (HO), bottom rows (hb) and diagonals, and lane 0's input row (batch_h).
    // From a cell at or below row k*S and right of column s0 - 32 a path gains at most max_sub per
    // remaining row and column. When that bound stays below the best score found so far, no cell
    // of the batch lies on an optimal path: they take lower bounds and the steps are skipped.
    const bool pruning = PRUNE && a.prune_best != nullptr;
    const int cols_after = link != nullptr ? link->cols_after : 0;
    int shared_best = 0;       // the largest best score of this warp already sent to prune_best
    int pruned_batches = 0;
    auto share_best = [&]() {  // before publishing, so that a strip below sees it with the rows
        if (a.prune_goal) return;
        const int v = warp_max(best_v);
        if (v > shared_best) {
            if (lane == 0) atomicMax(a.prune_best, v);
            shared_best = v;
        }
    };
    auto prunable = [&](const int s0) -> bool {
        int border = max(hb, diag);
#pragma unroll
        for (int r = 0; r < R; ++r) border = max(border, HO[r]);
        border = warp_max(max(border + oe, batch_h));
        int seen = 0;
        if (lane == 0) seen = load_relaxed_gpu(a.prune_best);
        seen = __shfl_sync(FULL_MASK, seen, 0);
        const long long reach = (long long)max(border, 0) +
                                (long long)max(a.max_sub, 0) * min(a.height - k * S, width - s0 + 32 + cols_after);
        return reach < (a.prune_goal ? seen : max(seen, shared_best));
    };
    auto skip_batch = [&](const int s0) {
        const int above = __shfl_sync(FULL_MASK, batch_h, 31);  // H(k*S, s0 + 32): exact
#pragma unroll
        for (int r = 0; r < R; ++r) {
            HO[r] = -oe;
            E[r] = SWEEP_NEG_INF;
        }
        hb = -oe;
        fb = SWEEP_NEG_INF;
        diag = lane == 0 ? above - oe : -oe;
        if (hand_over) out_ring[(s0 - 31 + lane) & 63] = make_int2(-oe, SWEEP_NEG_INF);  // lane 31's columns
        if constexpr (KIND == SWEEP_CHECKPOINTS) {
            while (next_ck <= s0 - lane + 32) {
#pragma unroll
                for (int r = 0; r < R; ++r) col_ckpt_out[r] = make_int2(0, SWEEP_NEG_INF);
                col_ckpt_out += a.num_strips * S + 1;
                next_ck = next_ck + a.col_every <= last_ck ? next_ck + a.col_every : 0x7fffffff;
            }
        }
        ++pruned_batches;
    };

    // Batches of 32 steps. Output batch c is complete after step 32c + 62 and is published at the
    // start of batch c + 2, before lane 31 overwrites its slots of out_ring.
    int published = 0;
    for (int s0 = 0; s0 < width + 31; s0 += 32) {
        if (s0 < width) fetch(s0);
        if (pruning && s0 >= 64) share_best();
        if (hand_over && s0 >= 64) {
            publish((s0 >> 5) - 2);
            published = (s0 >> 5) - 1;
        }
        if (s0 >= 32 && s0 + 32 <= width) {
            if (pruning && prunable(s0)) {
                skip_batch(s0);
                continue;
            }
#pragma unroll UNROLL
            for (int u = 0; u < 32; ++u) step(s0 + u, Flag<false>{});
        } else {
            const int end = min(s0 + 32, width + 31);
#pragma unroll 1
            for (int s = s0; s < end; ++s) step(s, Flag<true>{});
        }
    }
    if (hand_over)
        for (int c = published; c < batches; ++c) publish(c);
    if (pruning && lane == 0 && pruned_batches > 0)
        atomicAdd(a.pruned, (unsigned long long)pruned_batches * 32 * max(0, min(S, a.height - k * S)));
    if (link != nullptr && link->ready_out != nullptr) {
        // Every lane ends at the last column: its rows and the best score known go to the slab on
        // the right, then the flag.
        if (pruning) {
            const int known = warp_max(best_v);
            if (lane == 0) link->best_out[k] = max(known, load_relaxed_gpu(a.prune_best));
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            link->edge_h[row0 + r] = HO[r] + oe;
            link->edge_e[row0 + r] = E[r];
        }
        __threadfence_system();
        __syncwarp();
        if (lane == 0) store_release_sys(link->ready_out + k, 1);
    }

    if constexpr (TRACK) {
        WARP_BEST_CELL(best_v, best_i, best_j)
        if (lane == 0 && a.best != nullptr) {  // sweeps of inner checkpoint regions keep no best cell
            a.best[3 * k] = best_v;
            a.best[3 * k + 1] = best_i;
            a.best[3 * k + 2] = best_j;
        }
    }
}

// Parameters in SweepArgs order (CuPy passes each argument by its own type; null pointers as 0).
template <int R, bool LOCAL, int KIND>
__global__ void __launch_bounds__(128, 4)
striped_sweep(const unsigned char* query, const unsigned char* target, const int* sub, int alpha,
              int height, int width, int gap_oe, int gap_e, const int* top_h, const int* top_f,
              const int* left_h, const int* left_e, int2* slots, int* flags, int* ticket,
              int num_strips, int2* row_ckpt, int row_every, int num_row_ckpt, int2* col_ckpt,
              int col_every, int num_col_ckpt, int* last_row_h, int last_row, int* best,
              unsigned char* dirs, int* prune_best, unsigned long long* pruned, int max_sub,
              const SlabLink* link, int prune_goal, int top_stride, int left_stride) {
    const SweepArgs a{query,    target,     sub,          alpha,    height,       width,
                      gap_oe,   gap_e,      top_h,        top_f,    left_h,       left_e,
                      slots,    flags,      ticket,       num_strips, row_ckpt,   row_every,
                      num_row_ckpt, col_ckpt, col_every,  num_col_ckpt, last_row_h, last_row,
                      best,     dirs,       prune_best,   pruned,   max_sub,      link,
                      prune_goal, top_stride, left_stride};
    // Dynamic shared memory: one query profile (alpha x 32R bytes) per warp, then per warp a
    // 64-letter target ring and a 64-column ring of lane 31's bottom row (H - o - e, F).
    extern __shared__ signed char shared_profile[];
    const int warp = threadIdx.x >> 5;
    signed char* prof = shared_profile + warp * (alpha * 32 * R);
    unsigned char* rings = reinterpret_cast<unsigned char*>(shared_profile) +
                           (blockDim.x >> 5) * (alpha * 32 * R) + warp * (64 + 64 * sizeof(int2));
    int2* out_ring = reinterpret_cast<int2*>(rings + 64);
    const int lane = threadIdx.x & 31;
    while (true) {
        int k = 0;
        if (lane == 0) k = atomicAdd(ticket, 1);
        k = __shfl_sync(FULL_MASK, k, 0);
        if (k >= num_strips) break;
        sweep_strip<R, LOCAL, KIND>(a, k, prof, rings, out_ring);
    }
}

// Many local score problems in one launch: pair p is query rows query + query_at[p] (heights[p]
// real rows, padded to whole strips) against target columns target + target_at[p] (widths[p]).
// One ticket runs over all pairs' strips (pair 0's strips, then pair 1's, ...); a warp maps its
// ticket to (pair, strip) and sweeps that strip exactly as striped_sweep does. A strip still waits
// only on the strip above it in its own pair, whose ticket is lower, so the deadlock argument of
// striped_sweep holds unchanged. Pair p's strips write their best cells at best + 3 * first_strip[p].
// Block pruning, when prune_best is not null, runs per pair: pair p's best so far is prune_best[p].
template <int R>
__global__ void __launch_bounds__(128, 4)
striped_score_pairs(const unsigned char* queries, const long long* query_at, const int* heights,
                    const unsigned char* targets, const long long* target_at, const int* widths,
                    const int* sub, int alpha, int gap_oe, int gap_e, const int* top_h,
                    const int* top_f, const int* left_h, const int* left_e, int2* slots,
                    const long long* slot_at, int* flags, const long long* flag_at,
                    const int* first_strip, int num_pairs, int* ticket, int* best, int* prune_best,
                    unsigned long long* pruned, int max_sub) {
    extern __shared__ signed char shared_profile[];
    const int warp = threadIdx.x >> 5;
    signed char* prof = shared_profile + warp * (alpha * 32 * R);
    unsigned char* rings = reinterpret_cast<unsigned char*>(shared_profile) +
                           (blockDim.x >> 5) * (alpha * 32 * R) + warp * (64 + 64 * sizeof(int2));
    int2* out_ring = reinterpret_cast<int2*>(rings + 64);
    const int lane = threadIdx.x & 31;
    const int total = first_strip[num_pairs];
    while (true) {
        int g = 0;
        if (lane == 0) g = atomicAdd(ticket, 1);
        g = __shfl_sync(FULL_MASK, g, 0);
        if (g >= total) break;
        int lo = 0, hi = num_pairs - 1;  // the pair of ticket g: the last p with first_strip[p] <= g
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (first_strip[mid] <= g) lo = mid;
            else hi = mid - 1;
        }
        const SweepArgs a{queries + query_at[lo], targets + target_at[lo], sub, alpha,
                          heights[lo], widths[lo], gap_oe, gap_e, top_h, top_f, left_h, left_e,
                          slots + slot_at[lo], flags + flag_at[lo], ticket,
                          first_strip[lo + 1] - first_strip[lo], nullptr, 1, 0, nullptr, 1, 0,
                          nullptr, 0, best + 3 * (size_t)first_strip[lo], nullptr,
                          prune_best != nullptr ? prune_best + lo : nullptr, pruned, max_sub, nullptr, 0,
                          1, 1};
        sweep_strip<R, true, SWEEP_SCORE>(a, g - first_strip[lo], prof, rings, out_ring);
    }
}
