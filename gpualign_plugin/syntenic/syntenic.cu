// Syntenic alignment (Huang & Chao: S, D, I, H with block penalty) over a band of the DP matrix.
//
// The band is rows r0+1 .. r0+rows (every row >= 1) by columns 0 .. width-1, cut into tiles of 32
// rows x TW columns. One launch computes one anti-diagonal of tiles (tile row tr + tile column tc
// == diagonal), one warp (a block of 32 threads) per tile; the host launches the diagonals in
// order on one stream, so a tile's upper and left neighbours are complete before it starts (no
// flags, no spinning).
//
// Inside a tile, lane t owns the tile's row t and sweeps the tile's anti-diagonals: at step s it
// computes column s - t, receiving the row above (S, I, H of the same column) from lane t-1 by
// warp shuffle (what lane t-1 computed at step s-1); lane 0 reads the tile's top row from shared
// memory. The left neighbour (S, D, H) and the diagonal S stay in the lane's registers, as in
// fill_rows. Every lane runs every step, so the shuffles always have the full warp.
//
// State crossing tile edges lives in global memory and is updated in place:
//   row_s/i/h[j]  (width)  S, I, H of the last row computed above, at column j: read into shared
//                          memory at the tile's start, replaced by the tile's bottom row;
//   col_s/d/h[r]  (rows)   S, D, H at the column left of the tile, band row r (0-based): read at
//                          the tile's start, replaced by the tile's last column;
//   corner[tr]             S of the cell above-left of tile (tr, tc): tile (tr, tc-1) saved it
//                          (its top row's last column) before computing.
// Tiles of one launch have distinct tile rows and distinct tile columns, so they touch disjoint
// parts of these arrays, and each tile reads all it needs before it writes.
//
// Cell values, boundaries (column 0: no left neighbour, no diagonal) and the direction byte are
// exactly those of syntenic/cpu_kernels.py (fill_rows / _cell); docs/ALGORITHMS.md "Syntenic".

#define SYN_NEG_INF (-(1 << 30))

struct SyntenicCell {
    int s, d, i, h;
    unsigned char bits;
};

// The largest of a, b, c, d; `choice` gets the index (0..3) of the first that attains it.
__device__ __forceinline__ int first_max4(int a, int b, int c, int d, int &choice) {
    int best = a;
    choice = 0;
    if (b > best) {
        best = b;
        choice = 1;
    }
    if (c > best) {
        best = c;
        choice = 2;
    }
    if (d > best) {
        best = d;
        choice = 3;
    }
    return best;
}

// One cell from its neighbours: the arithmetic and priorities of _cell in syntenic_kernels.py.
__device__ __forceinline__ SyntenicCell syntenic_cell(int up_s, int up_i, int up_h, int left_s,
                                                      int left_d, int left_h, int diagonal,
                                                      int gap_first, int gap_extend, int block) {
    SyntenicCell c;
    int bits = 0;
    // I: query residue against a gap (vertical); opens on ties.
    int value_i = up_s - gap_first;
    int extend = up_i - gap_extend;
    if (value_i >= extend) {
        bits |= 8;
    } else {
        value_i = extend;
    }
    // D: target residue against a gap (horizontal); opens on ties.
    int value_d = left_s - gap_first;
    extend = left_d - gap_extend;
    if (value_d >= extend) {
        bits |= 4;
    } else {
        value_d = extend;
    }
    // H: open from above, open from the left, extend from above, extend from the left.
    int h_choice;
    int value_h = first_max4(up_s - block, left_s - block, up_h, left_h, h_choice);
    value_i = max(value_i, SYN_NEG_INF);
    value_d = max(value_d, SYN_NEG_INF);
    value_h = max(value_h, SYN_NEG_INF);
    // S: diagonal, D, I, H.
    int s_choice;
    int value_s = first_max4(diagonal, value_d, value_i, value_h, s_choice);
    c.s = value_s;
    c.d = value_d;
    c.i = value_i;
    c.h = value_h;
    c.bits = (unsigned char)(bits | s_choice | (h_choice << 4));
    return c;
}

// One anti-diagonal of tiles. Launch with 32 threads per block, one block per tile of the
// diagonal (block b is tile row max(0, diagonal - (tile_cols - 1)) + b), and alpha * alpha ints
// of dynamic shared memory. With DIRS, dirs (rows x width, row-major) receives the direction byte
// of every cell. save_slot (rows entries, or null) gives for each band row the index of its copy
// in saved (slots x 3 x width: S, I, H), or -1.
template <int TW, bool DIRS>
__global__ void __launch_bounds__(32) syntenic_tile_diagonal(
    const unsigned char* __restrict__ query, const unsigned char* __restrict__ target,
    const int* __restrict__ sub, int alpha, int gap_first, int gap_extend, int block, int r0,
    int rows, int width, int diagonal, int tile_rows, int tile_cols, int* row_s, int* row_i,
    int* row_h, int* col_s, int* col_d, int* col_h, int* corner, const int* __restrict__ save_slot,
    int* saved, unsigned char* dirs) {
    constexpr int TH = 32;
    constexpr unsigned FULL = 0xffffffffu;
    extern __shared__ int sub_shared[];
    __shared__ int top_s[TW], top_i[TW], top_h[TW];
    __shared__ unsigned char letters[TW];
    __shared__ unsigned char dir_tile[DIRS ? TH * TW : 1];

    const int tr = max(0, diagonal - (tile_cols - 1)) + (int)blockIdx.x;
    const int tc = diagonal - tr;
    if (tr >= tile_rows || tc < 0 || tc >= tile_cols) {
        return;  // the whole block (one warp) leaves together
    }
    const int i0 = tr * TH;  // band row of the tile's first row (matrix row r0 + 1 + i0)
    const int c0 = tc * TW;  // the tile's first column
    const int th = min(TH, rows - i0);
    const int tw = min(TW, width - c0);
    const int t = (int)threadIdx.x;
    const bool active = t < th;

    for (int k = t; k < alpha * alpha; k += TH) {
        sub_shared[k] = sub[k];
    }
    for (int k = t; k < tw; k += TH) {
        top_s[k] = row_s[c0 + k];
        top_i[k] = row_i[c0 + k];
        top_h[k] = row_h[c0 + k];
        letters[k] = c0 + k > 0 ? target[c0 + k - 1] : 0;  // column j holds target[j - 1]
    }
    int left_s = SYN_NEG_INF, left_d = SYN_NEG_INF, left_h = SYN_NEG_INF;
    int diag_s = SYN_NEG_INF;  // S(i-1, j-1) for the next cell
    int profile = 0;           // offset of this row's letter in the substitution matrix
    int slot = -1;
    if (t == 0 && tc > 0) {
        diag_s = corner[tr];
    }
    if (active) {
        profile = (int)query[r0 + i0 + t] * alpha;  // matrix row r0+1+i0+t holds query[r0+i0+t]
        if (tc > 0) {
            left_s = col_s[i0 + t];
            left_d = col_d[i0 + t];
            left_h = col_h[i0 + t];
            if (t > 0) {
                diag_s = col_s[i0 + t - 1];
            }
        }
        if (save_slot != nullptr) {
            slot = save_slot[i0 + t];
        }
    }
    // Every read of row_*, col_* and corner above happens before any write below.
    __syncthreads();
    if (t == 0) {
        // The tile to the right needs S of the row above at this tile's last column.
        corner[tr] = top_s[tw - 1];
    }

    int out_s = SYN_NEG_INF, out_i = SYN_NEG_INF, out_h = SYN_NEG_INF;  // this lane's last cell
    for (int step = 0; step < th + tw - 1; ++step) {
        const int jj = step - t;
        // Lane t-1 computed column jj of the row above at the previous step.
        int up_s = __shfl_up_sync(FULL, out_s, 1);
        int up_i = __shfl_up_sync(FULL, out_i, 1);
        int up_h = __shfl_up_sync(FULL, out_h, 1);
        if (active && jj >= 0 && jj < tw) {
            if (t == 0) {
                up_s = top_s[jj];
                up_i = top_i[jj];
                up_h = top_h[jj];
            }
            const int j = c0 + jj;
            const int diagonal_value =
                j == 0 ? SYN_NEG_INF : diag_s + sub_shared[profile + letters[jj]];
            const SyntenicCell c = syntenic_cell(up_s, up_i, up_h, left_s, left_d, left_h,
                                                 diagonal_value, gap_first, gap_extend, block);
            diag_s = up_s;
            left_s = c.s;
            left_d = c.d;
            left_h = c.h;
            out_s = c.s;
            out_i = c.i;
            out_h = c.h;
            if (DIRS) {
                dir_tile[t * TW + jj] = c.bits;
            }
            if (slot >= 0) {
                const size_t base = (size_t)slot * 3 * (size_t)width + (size_t)j;
                saved[base] = c.s;
                saved[base + (size_t)width] = c.i;
                saved[base + 2 * (size_t)width] = c.h;
            }
            if (t == th - 1) {
                row_s[j] = c.s;
                row_i[j] = c.i;
                row_h[j] = c.h;
            }
            if (jj == tw - 1) {
                col_s[i0 + t] = c.s;
                col_d[i0 + t] = c.d;
                col_h[i0 + t] = c.h;
            }
        }
    }

    if (DIRS) {
        __syncwarp();
        for (int k = t; k < th * tw; k += TH) {
            const int r = k / tw;
            const int c = k - r * tw;
            dirs[(size_t)(i0 + r) * (size_t)width + (size_t)(c0 + c)] = dir_tile[r * TW + c];
        }
    }
}
