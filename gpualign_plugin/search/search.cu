// Database search score pass, inter-task: one thread per (query, target) pair.
//
// The targets are the CPU engine's interleaved batches (search/cpu.py: sorted by
// length, LANES targets per batch, residue j of lane l at codes[offset + j * LANES + l], padded
// with the pad code to the batch's longest). A block of LANES threads scores one work item, a
// (query, batch) pair: thread l computes the best local Smith-Waterman-Gotoh score of the query
// against lane l's target (docs/ALGORITHMS.md, "Database search"), so a warp's loads of target
// residues and of the hand-over row are contiguous (coalesced).
//
// Register blocking: a thread holds R consecutive query rows (H and E of its current column) in
// registers and sweeps its whole target; the bottom row of the R rows (H, F) per column goes to
// the block's scratch slot and is read back by the next R rows. Global traffic is 16 bytes per
// R cells. The query profile (score of every letter, pad included, against TILE query rows) is
// in shared memory, rebuilt per tile of TILE rows.
//
// Persistent blocks: the grid is at most what is resident at once, each block owns one scratch
// slot (slot_stride int2 per block) and takes items in the given order from an atomic counter;
// the host orders items by cells, largest first, so long lanes start first.
//
// Padding (query rows past the end within the last R-row block, pad residues of short lanes) scores
// pad_score, far below any real score: a padding cell is reached from a real cell only through a
// gap or a padding substitution, both of which cost, so it never raises a lane's best above its
// true score (the argument of the CPU kernel). Exact 32-bit arithmetic: the host has checked the
// scheme's score bound against 32-bit overflow; H >= 0, and E, F >= neg_inf - gap_e.

#include "dp_cells.cuh"
#include "sweep_sync.cuh"

#define SEARCH_TILE 128  // query rows per shared-memory profile tile (a multiple of R)

template <int R>
__global__ void search_inter(const unsigned char* __restrict__ codes,
                             const long long* __restrict__ batch_offsets,
                             const int* __restrict__ batch_widths,
                             const unsigned char* __restrict__ queries,
                             const long long* __restrict__ query_offsets,
                             const int* __restrict__ sub_ext,  // alpha x (alpha + 1): scores, pad column
                             int letters,                      // alpha + 1 (codes 0..alpha, alpha = pad)
                             int gap_oe, int gap_e, int pad_score, int neg_inf,
                             const int* __restrict__ item_query, const int* __restrict__ item_batch,
                             int n_items, int* next_item,
                             int2* scratch, long long slot_stride,  // per block: max width * LANES
                             int* out, long long out_stride) {      // out[q * out_stride + b * LANES + l]
    static_assert(SEARCH_TILE % R == 0, "the profile tile must hold whole R-row blocks");
    extern __shared__ int prof[];  // prof[letter * SEARCH_TILE + row of the tile]
    __shared__ int item_shared;
    const int lanes = blockDim.x;
    const int lane = threadIdx.x;
    int2* slot = scratch + (size_t)blockIdx.x * (size_t)slot_stride + lane;

    for (;;) {
        __syncthreads();  // every thread is done with the previous item's profile and item number
        if (lane == 0) item_shared = atomicAdd(next_item, 1);
        __syncthreads();
        const int item = item_shared;
        if (item >= n_items) return;
        const int q = item_query[item];
        const int b = item_batch[item];
        const unsigned char* query = queries + query_offsets[q];
        const int m = (int)(query_offsets[q + 1] - query_offsets[q]);
        const int width = batch_widths[b];
        const unsigned char* column = codes + batch_offsets[b] + lane;
        int best = 0;

        for (int t0 = 0; t0 < m; t0 += SEARCH_TILE) {
            __syncthreads();  // the previous tile's profile is no longer read
            for (int x = lane; x < letters * SEARCH_TILE; x += lanes) {
                const int letter = x / SEARCH_TILE;
                const int i = t0 + (x - letter * SEARCH_TILE);
                prof[x] = i < m ? sub_ext[query[i] * letters + letter] : pad_score;
            }
            __syncthreads();
            const int rows = min(SEARCH_TILE, m - t0);
            for (int r0 = 0; r0 < rows; r0 += R) {
                const bool first = t0 + r0 == 0;     // the row above is row 0 (H 0, F -inf)
                const bool last = t0 + r0 + R >= m;  // no rows below: no hand-over row to write
                int H[R], E[R];                      // H(i, j-1), E(i, j-1) of this block's rows
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    H[r] = 0;  // column 0 of local alignment
                    E[r] = neg_inf;
                }
                int diag = 0;  // H(first row - 1, j - 1)
                for (int j = 0; j < width; ++j) {
                    const int letter = column[(size_t)j * lanes];
                    int up_h = 0, up_f = neg_inf;  // H, F of the row above this block at column j
                    if (!first) {
                        const int2 v = slot[(size_t)j * lanes];
                        up_h = v.x;
                        up_f = v.y;
                    }
                    const int* score = prof + letter * SEARCH_TILE + r0;
                    int h_above = up_h, f = up_f;
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        const int e = max(H[r] - gap_oe, E[r] - gap_e);
                        f = max(h_above - gap_oe, f - gap_e);
                        const int h = DP_MAX4_0(diag + score[r], e, f);
                        diag = H[r];
                        H[r] = h;
                        E[r] = e;
                        h_above = h;
                        best = max(best, h);
                    }
                    if (!last) slot[(size_t)j * lanes] = make_int2(h_above, f);
                    diag = up_h;
                }
            }
        }
        out[(size_t)q * (size_t)out_stride + (size_t)b * lanes + lane] = best;
    }
}

// ---------------------------------------------------------------------------------------------
// 16-bit inter-task kernel: two targets per thread, packed in the halves of 32-bit registers
// (lanes 2t and 2t+1 of the batch in thread t), every cell update a few Hopper DPX instructions
// on both halves at once (__viaddmax_s16x2: max(a + b, c); __vimax_s16x2_relu: max(a, b, 0);
// __vimax3_s16x2). One warp per work item; the same register blocking, hand-over row and
// persistent item queue as search_inter.
//
// Values are kept shifted so that a cell costs five DPX/SIMD operations and one byte permute:
// registers hold Ho = H - (open + extend) instead of H, and the shared profile holds
// sub + (open + extend), so that
//   E(i,j) = max(E(i,j-1) - extend, Ho(i,j-1))          one __viaddmax
//   F(i,j) = max(F(i-1,j) - extend, Ho(i-1,j))          one __viaddmax
//   H(i,j) = max(Ho(i-1,j-1) + profile, E, F, 0)         one __viaddmax, one __vimax_relu
//   Ho(i,j) = H(i,j) - (open + extend)                  one __vadd2
// E and F start at -(open + extend), which gives E(i,1) and F(1,j) their true value
// -(open + extend) (column and row 0 of local alignment hold H = 0).
//
// Exact overflow detection. Let limit = 32767 - max(0, largest substitution score). If every
// cell's true H is below limit, every intermediate value lies in [-(2000 + 16384), 32767] (the
// host checks |scores| and gap costs <= 1000; padding scores pad16 = -16384), so nothing wraps
// and every value is exact. Otherwise take the first cell, in dependency order, whose true H
// reaches limit: its inputs are exact, so it is computed exactly and enters the running
// maximum, which only grows. Hence a lane whose reported best is below limit is exact, and a
// lane whose best reaches limit is written as -1: the host rescores its item in 32 bits.

#define SEARCH16_TILE 64                     // query rows per profile tile (a multiple of R)
#define SEARCH16_STRIDE (SEARCH16_TILE + 8)  // shorts per profile row: rows of different letters
                                             // start 16 bytes apart modulo 128, spreading 16-byte
                                             // loads of a quarter-warp over the banks
#define SEARCH16_PUBLISH 32                  // columns between two progress reports of a chained task

__device__ __forceinline__ unsigned search_pack16(int v) {
    return ((unsigned)v & 0xffffu) * 0x10001u;
}

// Lane 0 waits until the previous task of the chain reports more than j columns of its bottom row
// written; every lane gets the count it saw.
__device__ __forceinline__ int search_wait_rows(const int* progress, int j, int t) {
    int seen = 0;
    if (t == 0) {
        while ((seen = load_relaxed_gpu(progress)) <= j) __nanosleep(64);
        fence_acquire_gpu();
    }
    __syncwarp();
    return __shfl_sync(FULL_MASK, seen, 0);
}

// Report `columns` columns of this task's bottom row (and, with the last report, its best) written.
__device__ __forceinline__ void search_publish_rows(int* progress, int columns, int t) {
    __threadfence();
    __syncwarp();
    if (t == 0) store_release_gpu(progress, columns);
}

// One sweep of R query rows (the profile's rows from prof_rows) over both targets of a thread
// (column: their residues, 32 apart), from column 0 to width - 1; returns the running best with
// these cells'. The row above comes from row_in (none for the first rows of the query), the
// bottom row goes to row_out (none for the last rows): the block's own slot for a whole item;
// for a chained task (CHAINED) the previous task's ring row, awaited through progress_in, and its
// own ring row, reported through progress_out.
template <int R, bool CHAINED>
__device__ __forceinline__ unsigned search16_sweep(const unsigned short* column, int width,
                                                   const short* prof_rows, bool first, bool last,
                                                   const uint2* row_in, uint2* row_out,
                                                   const int* progress_in, int* progress_out,
                                                   unsigned noe2, unsigned ne2, unsigned best, int t) {
    unsigned Ho[R], E[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        Ho[r] = noe2;
        E[r] = noe2;
    }
    unsigned diag = noe2;  // Ho(first row - 1, j - 1)
    int ready = 0;         // columns of row_in known to be written (CHAINED)
    for (int j = 0; j < width; ++j) {
        const unsigned ab = column[(size_t)j * 32];
        unsigned up_ho = noe2, up_f = noe2;
        if (!first) {
            uint2 v;
            if (CHAINED) {
                if (j == ready) ready = search_wait_rows(progress_in, j, t);
                v = __ldcg(row_in + (size_t)j * 32);
            } else {
                v = row_in[(size_t)j * 32];
            }
            up_ho = v.x;
            up_f = v.y;
        }
        const uint4* pa = reinterpret_cast<const uint4*>(prof_rows + (ab & 0xffu) * SEARCH16_STRIDE);
        const uint4* pb = reinterpret_cast<const uint4*>(prof_rows + (ab >> 8) * SEARCH16_STRIDE);
        unsigned ho_above = up_ho, f = up_f;
#pragma unroll
        for (int k = 0; k < R / 8; ++k) {
            const uint4 A = pa[k];
            const uint4 B = pb[k];
            const unsigned aw[4] = {A.x, A.y, A.z, A.w};
            const unsigned bw[4] = {B.x, B.y, B.z, B.w};
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                unsigned pair[2];
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int r = 8 * k + 2 * w + half;
                    const unsigned s = __byte_perm(aw[w], bw[w], half ? 0x7632 : 0x5410);
                    const unsigned e = __viaddmax_s16x2(E[r], ne2, Ho[r]);
                    f = __viaddmax_s16x2(f, ne2, ho_above);
                    const unsigned h = __vimax_s16x2_relu(__viaddmax_s16x2(diag, s, e), f);
                    const unsigned ho = __vadd2(h, noe2);
                    diag = Ho[r];
                    Ho[r] = ho;
                    E[r] = e;
                    ho_above = ho;
                    pair[half] = ho;
                }
                best = __vimax3_s16x2(best, pair[0], pair[1]);
            }
        }
        if (!last) {
            if (CHAINED) {
                __stcg(row_out + (size_t)j * 32, make_uint2(ho_above, f));
                if ((j + 1) % SEARCH16_PUBLISH == 0 && j + 1 < width) search_publish_rows(progress_out, j + 1, t);
            } else {
                row_out[(size_t)j * 32] = make_uint2(ho_above, f);
            }
        }
        diag = up_ho;
    }
    return best;
}

// Chained tasks (long items). An item of many cells on one warp would run long after the rest of
// the GPU has finished (its time, not the cells, then sets the launch's length), so the host cuts
// such an item into a chain of tasks of R query rows each (task_chain >= 0, task_row the first
// row), consecutive in the task order. A task takes its top row from the previous task's bottom
// row, column by column, as that task reports progress (every SEARCH16_PUBLISH columns), through
// a ring of two rows per chain (chain_rows + chain_row_offsets[chain]: 2 x width x 32 uint2);
// task k + 2 overwrites column j of the row task k wrote only after task k + 1 has finished column
// j, which it needs. Its best so far goes to task_best with its last report, and the chain's last
// task writes the lanes' scores. A task waits only for one claimed before it, which a running
// warp holds, so the persistent grid cannot deadlock however few blocks are resident.
template <int R>
__global__ void __launch_bounds__(32) search_inter16(
        const unsigned char* __restrict__ codes,
        const long long* __restrict__ batch_offsets,
        const int* __restrict__ batch_widths,
        const unsigned char* __restrict__ queries,
        const long long* __restrict__ query_offsets,
        const short* __restrict__ profile_ext,  // alpha x (alpha + 1): sub + open + extend, pad column pad16
        int letters,                            // alpha + 1 (codes 0..alpha, alpha = pad)
        int gap_oe, int gap_e, int pad16, int limit,
        const int* __restrict__ task_query, const int* __restrict__ task_batch,
        const int* __restrict__ task_row,       // first query row of the task (0 for a whole item)
        const int* __restrict__ task_chain,     // -1: a whole item; else the task's chain
        int n_tasks, int* next_task,
        uint2* scratch, long long slot_stride,  // per block: max width * 32 uint2
        uint2* chain_rows, const long long* __restrict__ chain_row_offsets,
        int* task_progress,                     // columns of each chained task's bottom row written (0 at launch)
        unsigned* task_best,                    // 32 per task: a chained task's best, for the next one
        int* out, long long out_stride) {       // out[q * out_stride + b * 64 + l]
    static_assert(R % 8 == 0 && SEARCH16_TILE % R == 0, "R must be a multiple of 8 dividing the tile");
    extern __shared__ __align__(16) short prof16[];  // prof16[letter * SEARCH16_STRIDE + row of the tile]
    const int t = threadIdx.x;
    uint2* slot = scratch + (size_t)blockIdx.x * (size_t)slot_stride + t;
    const unsigned noe2 = search_pack16(-gap_oe);
    const unsigned ne2 = search_pack16(-gap_e);

    for (;;) {
        int task = 0;
        if (t == 0) task = atomicAdd(next_task, 1);
        task = __shfl_sync(FULL_MASK, task, 0);
        if (task >= n_tasks) return;
        const int q = task_query[task];
        const int b = task_batch[task];
        const int chain = task_chain[task];
        const int lo = task_row[task];
        const unsigned char* query = queries + query_offsets[q];
        const int m = (int)(query_offsets[q + 1] - query_offsets[q]);
        const int hi = chain < 0 ? m : min(m, lo + R);
        const int width = batch_widths[b];
        const unsigned short* column = reinterpret_cast<const unsigned short*>(codes + batch_offsets[b]) + t;
        uint2* ring_in = nullptr;  // a chained task's top row (the previous task's bottom row)
        uint2* ring_out = nullptr;
        if (chain >= 0) {
            const size_t row = (size_t)width * 32;
            const int parity = (lo / R) & 1;
            ring_out = chain_rows + chain_row_offsets[chain] + t + parity * row;
            ring_in = chain_rows + chain_row_offsets[chain] + t + (parity ^ 1) * row;
        }
        unsigned best = noe2;  // max of Ho over the cells; H = 0 before any cell

        for (int t0 = lo; t0 < hi; t0 += SEARCH16_TILE) {
            __syncwarp();  // the previous tile's profile is no longer read
            for (int x = t; x < letters * SEARCH16_TILE; x += 32) {
                const int letter = x / SEARCH16_TILE;
                const int row = x - letter * SEARCH16_TILE;
                const int i = t0 + row;
                prof16[letter * SEARCH16_STRIDE + row] =
                    i < m ? profile_ext[query[i] * letters + letter] : (short)pad16;
            }
            __syncwarp();
            const int rows = min(SEARCH16_TILE, hi - t0);
            for (int r0 = 0; r0 < rows; r0 += R) {
                const bool first = t0 + r0 == 0;
                const bool last = t0 + r0 + R >= m;
                best = ring_in != nullptr
                    ? search16_sweep<R, true>(column, width, prof16 + r0, first, last, ring_in, ring_out,
                                              task_progress + task - 1, task_progress + task, noe2, ne2, best, t)
                    : search16_sweep<R, false>(column, width, prof16 + r0, first, last, slot, slot,
                                               nullptr, nullptr, noe2, ne2, best, t);
            }
        }
        if (chain >= 0) {
            if (lo > 0) best = __vmaxs2(best, __ldcg(task_best + (size_t)(task - 1) * 32 + t));
            if (hi < m) {
                __stcg(task_best + (size_t)task * 32 + t, best);
                search_publish_rows(task_progress + task, width, t);
                continue;
            }
        }
        const int lo16 = (int)(short)(best & 0xffffu) + gap_oe;
        const int hi16 = (int)(short)(best >> 16) + gap_oe;
        int* dst = out + (size_t)q * (size_t)out_stride + (size_t)b * 64 + 2 * t;
        *reinterpret_cast<int2*>(dst) = make_int2(lo16 >= limit ? -1 : lo16, hi16 >= limit ? -1 : hi16);
    }
}

// The packing of search/cpu.py's interleave_records on the device: batch b (one block) holds
// residue j of its lane l at packed[batch_offsets[b] + j * 64 + l], padded with pad_code up to
// the batch's width. Lane slot s = b * 64 + l takes lane_lengths[s] residues from
// codes[lane_starts[s]...] (length 0: an empty lane). Writes are contiguous per warp.
extern "C" __global__ void interleave_lanes(const unsigned char* __restrict__ codes,
                                            const long long* __restrict__ lane_starts,
                                            const long long* __restrict__ lane_lengths,
                                            const long long* __restrict__ batch_offsets,
                                            const long long* __restrict__ batch_widths,
                                            unsigned char pad_code, unsigned char* packed) {
    const long long b = blockIdx.x;
    const long long size = batch_widths[b] * 64;
    unsigned char* out = packed + batch_offsets[b];
    for (long long k = threadIdx.x; k < size; k += blockDim.x) {
        const long long slot = b * 64 + (k & 63);
        const long long j = k >> 6;
        out[k] = j < lane_lengths[slot] ? codes[lane_starts[slot] + j] : pad_code;
    }
}

// After the scan. These replace CuPy's reductions, sorts and fancy indexing, whose first use in a
// process imports cupyx (0.43 s on an H200, SciPy's sparse module with it). scores is the
// (queries, n_lanes) int32 matrix of the scan; n_lanes is a multiple of 64.

// flagged[q * n_batches + b] = 1 where a lane of batch b scored below 0 for query q (the 16-bit
// kernel's mark of a score it could not hold). One block of 64 threads per (query, batch).
extern "C" __global__ void __launch_bounds__(64) flag_overflowed_items(
        const int* __restrict__ scores, unsigned char* __restrict__ flagged) {
    const bool negative = scores[(long long)blockIdx.x * 64 + threadIdx.x] < 0;
    const int any = __syncthreads_or(negative);
    if (threadIdx.x == 0) flagged[blockIdx.x] = any ? 1 : 0;
}

#define SELECT_THREADS 512

// Count one lane into histogram[digit], one shared atomic per distinct digit of the warp's active
// lanes (scores of one query are mostly small, so most lanes of a warp share their digit).
__device__ __forceinline__ void count_digit(unsigned int* histogram, unsigned int digit) {
    const unsigned int peers = __match_any_sync(__activemask(), digit);
    if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&histogram[digit], __popc(peers));
}

// floors[q]: the top-th largest score of query q's row (negative scores counted as 0), raised to 1;
// counts[q]: how many lanes of the row score at least that. 1 <= top <= n_lanes. One block per query:
// a radix select, 8 bits per pass from the most significant byte, each pass counting the digits of
// the lanes that match the digits chosen so far.
extern "C" __global__ void __launch_bounds__(SELECT_THREADS) top_floor(
        const int* __restrict__ scores, long long n_lanes, int top, int* __restrict__ floors,
        int* __restrict__ counts) {
    __shared__ unsigned int histogram[256];
    __shared__ unsigned int chosen, still_needed;
    __shared__ int reaching;
    const int* row = scores + (long long)blockIdx.x * n_lanes;
    unsigned int prefix = 0, known = 0, needed = (unsigned int)top;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int d = threadIdx.x; d < 256; d += blockDim.x) histogram[d] = 0;
        __syncthreads();
        for (long long k = threadIdx.x; k < n_lanes; k += blockDim.x) {
            const unsigned int value = (unsigned int)max(row[k], 0);
            if ((value & known) == prefix) count_digit(histogram, (value >> shift) & 255u);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned int above = 0;
            int digit = 255;
            while (above + histogram[digit] < needed) above += histogram[digit--];
            chosen = prefix | ((unsigned int)digit << shift);
            still_needed = needed - above;
        }
        __syncthreads();
        prefix = chosen;
        needed = still_needed;
        known |= 255u << shift;
        __syncthreads();  // every thread has read chosen before the next pass may change it
    }
    const int threshold = max((int)prefix, 1);
    if (threadIdx.x == 0) reaching = 0;
    __syncthreads();
    int mine = 0;
    for (long long k = threadIdx.x; k < n_lanes; k += blockDim.x) mine += row[k] >= threshold;
    atomicAdd(&reaching, mine);
    __syncthreads();
    if (threadIdx.x == 0) {
        floors[blockIdx.x] = threshold;
        counts[blockIdx.x] = reaching;
    }
}

// The lanes of query q's row scoring at least floors[q], with their scores, written from starts[q]
// on (in no particular order). One block per query.
extern "C" __global__ void __launch_bounds__(SELECT_THREADS) collect_candidates(
        const int* __restrict__ scores, long long n_lanes, const int* __restrict__ floors,
        const long long* __restrict__ starts, int* __restrict__ values, long long* __restrict__ lanes) {
    __shared__ unsigned int cursor;
    if (threadIdx.x == 0) cursor = 0;
    __syncthreads();
    const int* row = scores + (long long)blockIdx.x * n_lanes;
    const int threshold = floors[blockIdx.x];
    const long long start = starts[blockIdx.x];
    for (long long k = threadIdx.x; k < n_lanes; k += blockDim.x) {
        const int value = row[k];
        if (value >= threshold) {
            const unsigned int slot = atomicAdd(&cursor, 1u);
            values[start + slot] = value;
            lanes[start + slot] = k;
        }
    }
}

// scores[rows[k] * n_lanes + lanes[k]] = values[k] for k < count (the intra-task scores).
extern "C" __global__ void set_scores(int* __restrict__ scores, long long n_lanes,
                                      const long long* __restrict__ rows,
                                      const long long* __restrict__ lanes,
                                      const int* __restrict__ values, int count) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) scores[rows[k] * n_lanes + lanes[k]] = values[k];
}
