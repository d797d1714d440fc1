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
