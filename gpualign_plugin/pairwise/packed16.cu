// Score-only sweep of the Gotoh (affine gap) recurrence, two strips per warp: every 32-bit register
// holds one cell of each strip as a 16-bit value relative to a per-lane, per-strip base.
//
// Layout. A warp takes a double strip of 2 S rows (S = 32 R): strip A (its first S rows) in the
// low halves of the registers, strip B (the next S rows) in the high halves. Lane t holds rows
// tR .. tR+R-1 of both strips. It is the wavefront of striped.cu with 64 virtual lanes: lane t's
// low half is virtual lane t, its high half virtual lane 32 + t, and virtual lane v computes
// column s - v + 1 at step s. So strip B runs 32 columns behind strip A, and the row above
// strip B's first row is strip A's last row one step earlier: lane 31's low half, which reaches
// lane 0's high half through the same shuffle that carries every lane's last row to the lane
// below. Lane 0's low half takes the last row of the double strip above from global memory, in
// batches of 32 columns behind a ready flag, and lane 31's high half hands this double strip's
// last row on the same way: the ticket order and the deadlock argument of striped.cu hold as they
// are (a warp only waits on the double strip with the next lower ticket).
//
// Values. v = score - base + BIAS in 16 bits, the base per lane and strip, moved to the first
// row's H - o - e at the start of every batch of 32 steps. Neighbouring cells differ by at most
// max_sub + open + extend, so R rows, the lane above and 32 steps of drift stay far inside 16
// bits. H is kept as HO = H - o - e, as in striped.cu. Local mode: the clamp at zero goes into
// the diagonal term, max(HO(i-1, j-1) + s + o + e, 0) in one add-max; H = max(that, E, F) is then
// max(diagonal, E, F, 0).
//
// Checkpoints (the alignment's score pass, CKPT): at rows q * every (double strip boundaries) the
// hand-over row also goes to the row checkpoints as (H, F), and at columns p * every each lane
// writes its real rows as (H, E), the layout of striped.cu's SWEEP_CHECKPOINTS; every is a power
// of two and a multiple of ROWS. All three values are exact: no cell is pruned here.
//
// Columns before the first and after the last take a sentinel letter that scores -128 against
// every row (and padding rows score -128 against every letter): the sweep runs without bounds
// checks. Before column 1 the recurrences then keep each row at its column-0 values (H(i, 0); E and
// F no larger than what gives the same next values); after column n and below row m they compute
// values no real cell depends on, and no output takes them.

#include "sweep_sync.cuh"

namespace packed16 {

constexpr int R = 16;              // rows per lane and strip
constexpr int S = 32 * R;          // rows per strip
constexpr int ROWS = 2 * S;        // rows per warp (the double strip)
constexpr int CLASSES = 6;         // profile letters: A, C, G, T, any other code, sentinel
constexpr int SENTINEL = 5;
constexpr int BIAS = 0x8000;
constexpr int LETTERS = 128;       // target letter ring, by column (lane 31's high half runs 62 behind)
constexpr int OUT = 64;            // lane 31's high-half last row, by column, until published
constexpr int BASES = 4;           // lane 31's high-half base per batch
constexpr int LAG = 3;             // batch c of the last row is published at the start of batch c + LAG
constexpr int SNAPSHOT = R / 2;    // words per lane: one half's R values of a column (local best cell)
static_assert(SNAPSHOT == 8, "first_max_row reads a snapshot as two 16-byte words");

// Per-halfword add (modulo 2^16) and unsigned maximum: one instruction each from sm_90 on (PTX has
// them only there), CUDA's SIMD intrinsics before.
__device__ __forceinline__ unsigned add2(unsigned a, unsigned b) {
#if __CUDA_ARCH__ >= 900
    unsigned r;
    asm("add.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return __vadd2(a, b);
#endif
}
__device__ __forceinline__ unsigned max2(unsigned a, unsigned b) {
#if __CUDA_ARCH__ >= 900
    unsigned r;
    asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return __vmaxu2(a, b);
#endif
}
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel) {
    unsigned r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}
__device__ __forceinline__ unsigned pack(int lo, int hi) {
    return (unsigned)(lo & 0xffff) | ((unsigned)hi << 16);
}
__device__ __forceinline__ int clamp16(int v) { return min(max(v, 0), 0xffff); }
__device__ __forceinline__ int low(unsigned v) { return (int)(v & 0xffffu); }
__device__ __forceinline__ int high(unsigned v) { return (int)(v >> 16); }


struct Args {
    const unsigned char* query;   // letter classes of the rows (0..4; 5 pads to num_doubles * ROWS)
    const unsigned char* target;  // letter classes of the columns (0..4)
    const signed char* table;     // CLASSES x CLASSES: score + open + extend, -128 with a sentinel
    int height, width;
    int gap_oe, gap_e;
    const int* top_h;   // width + 1: H of row 0
    const int* top_f;   // width + 1: F of row 0 (values below H - o - e count as H - o - e)
    const int* left_h;  // num_doubles * ROWS + 1: H(i, 0), i = 0 ..
    int2* slots;        // 2 * width hand-over rows (H, F)
    int* flags;         // 2 * batches ready flags, -1 initially
    int num_doubles;
    int* last_row_h;    // H(last_row, j) at index j (global and semiglobal), or null
    int last_row;
    int* best;          // per double strip (score, row, column) of the best cell (local), or null
    int* best_seen;     // the best score any warp has found so far (local; 0 initially)
    int2* row_ckpt;     // (H, F) at rows q * every, q = 1..num_row_ckpt, columns 0..width (CKPT)
    int num_row_ckpt;
    int2* col_ckpt;     // (H, E) at columns p * every, p = 1.., rows 0.. (col_stride per column; CKPT)
    int col_stride;
    int every;          // checkpoint interval (CKPT): a power of two, a multiple of ROWS
};

// The first of the R values of a snapshot (16 bits each, two per word) that is their maximum.
__device__ __forceinline__ int first_max_row(const uint4* snapshot) {
    const uint4 p = snapshot[0], q = snapshot[1];
    const unsigned w[SNAPSHOT] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
    unsigned mx = __vimax3_u16x2(w[0], w[1], w[2]);
    mx = __vimax3_u16x2(mx, w[3], w[4]);
    mx = __vimax3_u16x2(mx, w[5], w[6]);
    mx = max2(mx, w[7]);
    const int top = max(low(mx), high(mx));
    int first = R - 1;
#pragma unroll
    for (int r = R - 2; r >= 0; --r) first = ((r & 1 ? high(w[r >> 1]) : low(w[r >> 1])) == top) ? r : first;
    return first;
}

template <bool LOCAL, bool LAST, bool CKPT>
__device__ __forceinline__ void sweep_double(const Args& a, const int d, signed char* prof,
                                             unsigned char* letters, unsigned* out_ring,
                                             int* base_ring, uint4* snapshot) {
    const int lane = threadIdx.x & 31;
    const int width = a.width;
    const int oe = a.gap_oe;
    const int row_lo = d * ROWS + lane * R;  // 0-based first row of the lane in strip A
    const int row_hi = row_lo + S;           // ... and in strip B
    const int steps = width + 63;            // lane 31's high half reaches column width at step width + 62
    const int batches = (width + 31) >> 5;

    // Profile of the double strip: prof[letter * ROWS + row] = table[class(row), letter].
    __syncwarp();
    for (int x = lane; x < CLASSES * ROWS; x += 32) {
        const int letter = x / ROWS, row = x - letter * ROWS;
        prof[x] = a.table[a.query[d * ROWS + row] * CLASSES + letter];
    }
    for (int x = lane; x < LETTERS; x += 32) letters[x] = SENTINEL;
    __syncwarp();

    const unsigned neg_e = pack(-a.gap_e, -a.gap_e), neg_oe = pack(-oe, -oe);
    unsigned HO[R], E[R];
    int base_lo = a.left_h[row_lo + 1] - oe, base_hi = a.left_h[row_hi + 1] - oe;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        HO[r] = pack(a.left_h[row_lo + r + 1] - oe - base_lo + BIAS, a.left_h[row_hi + r + 1] - oe - base_hi + BIAS);
        E[r] = HO[r];
    }
    unsigned diag = pack(a.left_h[row_lo] - oe - base_lo + BIAS, a.left_h[row_hi] - oe - base_hi + BIAS);
    // The lane's last row (HO, F) one step back, for the lane below: at column 0, F = H (H(i, 0) is
    // F(i, 0) in global and semiglobal mode; in local mode any F at most H gives the same cells).
    unsigned send_ho = HO[R - 1], send_f = add2(HO[R - 1], pack(oe, oe));
    unsigned batch_in = 0, up_delta = 0, floor_ = 0, thr = 0xffffffffu;
    int best_v = 0, best_i = 0x7fffffff, best_j = 0;
    // While pending, best_i is the first row of the best cell's half (1-based) and the lane's
    // snapshot holds that half's values in the best cell's column: the row within the half is
    // found when a tie or the end of the sweep needs it, not at every new best along an alignment.
    bool pending = false;
    // The best score of the whole sweep known (read one batch ahead: the load's latency stays off
    // the path of the warps), and the best this warp has sent.
    int seen = 0, seen_next = 0, shared_best = 0;
    const bool real_lo = row_lo < a.height, real_hi = row_hi < a.height;
    const int last_r = LAST ? a.last_row - 1 - (a.last_row - 1 >= row_hi ? row_hi : row_lo) : -1;
    const bool owns_last = last_r >= 0 && last_r < R;
    const bool last_high = LAST && a.last_row - 1 >= row_hi;

    const int2* slot_in = a.slots + (size_t)((d + 1) & 1) * width;
    int2* slot_out = a.slots + (size_t)(d & 1) * width;
    const int* flag_in = a.flags + ((d + 1) & 1) * batches;
    int* flag_out = a.flags + (d & 1) * batches;
    const bool hand_over = d + 1 < a.num_doubles;
    int2* row_ckpt_out = nullptr;
    if (CKPT && hand_over && ((d + 1) * ROWS) % a.every == 0 && ((d + 1) * ROWS) / a.every <= a.num_row_ckpt)
        row_ckpt_out = a.row_ckpt + (size_t)(((d + 1) * ROWS) / a.every - 1) * (width + 1);

    // Column maxima of HO at or above the threshold may hold a new best cell. A cell scoring below
    // a score already reached anywhere cannot be the end cell, so the threshold starts there: ties
    // with a lane's own small best in a random region would otherwise send it down the slow path
    // at almost every step.
    auto threshold = [&]() {
        const int goal = max(max(best_v, seen), 1) - oe + BIAS - 1;
        return pack(real_lo ? clamp16(goal - base_lo) : 0xffff, real_hi ? clamp16(goal - base_hi) : 0xffff);
    };

    // At the start of each batch: the bases move to the first row's HO (not in the first batch,
    // where they are there already), and what depends on them follows.
    auto rebase = [&](const int s0) {
        if (s0 > 0) {
            const int dlo = low(HO[0]) - BIAS, dhi = high(HO[0]) - BIAS;
            base_lo += dlo;
            base_hi += dhi;
            const unsigned shift = pack(-dlo, -dhi);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                HO[r] = add2(HO[r], shift);
                E[r] = add2(E[r], shift);
            }
            diag = add2(diag, shift);
            send_ho = add2(send_ho, shift);
            send_f = add2(send_f, shift);
        }
        const int above_lo = __shfl_sync(FULL_MASK, base_lo, (lane + 31) & 31);
        const int above_hi = __shfl_sync(FULL_MASK, base_hi, (lane + 31) & 31);
        // Lane 0's high half hears lane 31's low half; its low half is replaced by the batch input.
        up_delta = lane == 0 ? pack(above_lo - base_hi, 0) : pack(above_lo - base_lo, above_hi - base_hi);
        if (LOCAL) {
            const int mine = warp_max(best_v);
            if (lane == 0 && mine > shared_best) atomicMax(a.best_seen, mine);
            shared_best = max(shared_best, mine);
            seen = __shfl_sync(FULL_MASK, seen_next, 0);
            if (lane == 0) seen_next = load_relaxed_gpu(a.best_seen);
            floor_ = pack(clamp16(BIAS - base_lo), clamp16(BIAS - base_hi));
            thr = threshold();
        }
        if (lane == 31) base_ring[(s0 >> 5) & (BASES - 1)] = base_hi;
    };

    // Columns s0+1 .. s0+32: their letters into the ring (sentinels past the last), and while
    // they exist lane 0's input: the row above the double strip, one column per lane, as (HO, F)
    // relative to lane 0's low base.
    auto fetch = [&](const int s0) {
        const int col = s0 + lane + 1;
        letters[col & (LETTERS - 1)] = col <= width ? a.target[col - 1] : SENTINEL;
        if (s0 >= width) return;
        const int c = min(col, width);
        int h, f;
        if (d == 0) {
            h = a.top_h[c];
            f = a.top_f[c];
        } else {
            if (lane == 0) {
                while (load_relaxed_gpu(flag_in + (s0 >> 5)) != d - 1) {
                }
                fence_acquire_gpu();
            }
            __syncwarp();
            const int2 v = __ldcg(slot_in + c - 1);
            h = v.x;
            f = v.y;
        }
        const int b0 = __shfl_sync(FULL_MASK, base_lo, 0);
        batch_in = pack(h - oe - b0 + BIAS, max(f, h - oe) - b0 + BIAS);
    };

    // Batch c of the double strip's last row (lane 31's high half), back to scores.
    auto publish = [&](const int c) {
        __syncwarp();
        const int col = 32 * c + lane + 1;
        if (col <= width) {
            const unsigned w = out_ring[col & (OUT - 1)];
            const int base = base_ring[((col + 62) >> 5) & (BASES - 1)] - BIAS;
            const int2 v = make_int2(low(w) + base + oe, high(w) + base);
            slot_out[col - 1] = v;
            if (CKPT && row_ckpt_out != nullptr) row_ckpt_out[col] = v;
        }
        __threadfence();
        __syncwarp();
        if (lane == 0) store_release_gpu(flag_out + c, d);
    };

    auto step = [&](const int s) {
        const int j = s - lane + 1;  // strip A's column; strip B's is j - 32
        const int la = letters[j & (LETTERS - 1)], lb = letters[(j - 32) & (LETTERS - 1)];
        const uint4 pa = *reinterpret_cast<const uint4*>(prof + la * ROWS + lane * R);
        const uint4 pb = *reinterpret_cast<const uint4*>(prof + lb * ROWS + S + lane * R);
        const unsigned wa[4] = {pa.x, pa.y, pa.z, pa.w}, wb[4] = {pb.x, pb.y, pb.z, pb.w};
        unsigned up_ho = add2(__shfl_sync(FULL_MASK, send_ho, (lane + 31) & 31), up_delta);
        unsigned up_f = add2(__shfl_sync(FULL_MASK, send_f, (lane + 31) & 31), up_delta);
        const unsigned above = __shfl_sync(FULL_MASK, batch_in, s & 31);
        if (lane == 0) {
            up_ho = prmt(above, up_ho, 0x5410);
            up_f = prmt(above, up_f, 0x5432);
        }
        unsigned hu = up_ho, fu = up_f, hd = diag;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            // Scores of row r against both letters, sign-extended into the two halves.
            const unsigned k = r & 3;
            const unsigned sc = prmt(wa[r >> 2], wb[r >> 2], k | ((8 | k) << 4) | ((4 + k) << 8) | ((12 + k) << 12));
            const unsigned e = __viaddmax_u16x2(E[r], neg_e, HO[r]);
            const unsigned f = __viaddmax_u16x2(fu, neg_e, hu);
            const unsigned h = __vimax3_u16x2(__viaddmax_u16x2(hd, sc, floor_), e, f);
            hd = HO[r];
            HO[r] = add2(h, neg_oe);
            E[r] = e;
            hu = HO[r];
            fu = f;
        }
        diag = up_ho;
        send_ho = hu;
        send_f = fu;
        if (lane == 31) out_ring[(j - 32) & (OUT - 1)] = prmt(hu, fu, 0x7632);
        if (LOCAL) {
            unsigned mx = __vimax3_u16x2(HO[0], HO[1], HO[2]);
#pragma unroll
            for (int r = 3; r + 1 < R; r += 2) mx = __vimax3_u16x2(mx, HO[r], HO[r + 1]);
            mx = max2(mx, HO[R - 1]);
            if (max2(mx, thr) != thr) {
                // A cell of this step reaches the lane's best. In each half the first row holding
                // the column maximum is that column's best cell under (score desc, row asc); the
                // two columns' candidates are compared with the lane's best (then column asc).
                // Rows past the last take no part: a half with a real row has its column maximum
                // first in a real row (a padding row is below the real row above it), and a half
                // without one is left out. Both halves are judged without branches: along an
                // alignment this runs at every step, in the warps that set the pace of all below.
                const int v_lo = low(mx) + base_lo - BIAS + oe, v_hi = high(mx) + base_hi - BIAS + oe;
                const int j_hi = j - 32;
                const bool ok_lo = real_lo && v_lo >= best_v && v_lo > 0 && j >= 1 && j <= width;
                const bool ok_hi = real_hi && v_hi >= best_v && v_hi > 0 && j_hi >= 1 && j_hi <= width;
                auto take_snapshot = [&](const unsigned sel) {
                    snapshot[0] = make_uint4(prmt(HO[0], HO[1], sel), prmt(HO[2], HO[3], sel),
                                             prmt(HO[4], HO[5], sel), prmt(HO[6], HO[7], sel));
                    snapshot[1] = make_uint4(prmt(HO[8], HO[9], sel), prmt(HO[10], HO[11], sel),
                                             prmt(HO[12], HO[13], sel), prmt(HO[14], HO[15], sel));
                };
                // Strip A's rows come before strip B's: it wins a tie between the halves.
                const bool hi = ok_hi && (!ok_lo || v_hi > v_lo);
                const int v = hi ? v_hi : v_lo;
                if ((ok_lo || ok_hi) && v > best_v) {
                    take_snapshot(hi ? 0x7632 : 0x5410);
                    best_v = v;
                    best_i = (hi ? row_hi : row_lo) + 1;
                    best_j = hi ? j_hi : j;
                    pending = true;
                } else if (ok_lo || ok_hi) {  // ties with the lane's best: both rows are needed
#pragma unroll 1
                    for (int half = 0; half < 2; ++half) {
                        if (!(half ? ok_hi : ok_lo)) continue;
                        if (pending) best_i += first_max_row(snapshot);
                        pending = false;
                        take_snapshot(half ? 0x7632 : 0x5410);
                        const int i = (half ? row_hi : row_lo) + 1 + first_max_row(snapshot);
                        const int jj = half ? j_hi : j;
                        if (i < best_i || (i == best_i && jj < best_j)) {
                            best_i = i;
                            best_j = jj;
                        }
                    }
                }
                thr = threshold();
            }
        }
        // A column checkpoint in this step: strip A's column j or strip B's j - 32 is a multiple
        // of every (at most one lane of the warp has either).
        if (CKPT && (j & (a.every - 1) & ~32) == 0) {
            const bool hi = (j & 32) != 0;
            const int col = hi ? j - 32 : j, first = hi ? row_hi : row_lo;
            if (col > 0 && col < width) {
                int2* out = a.col_ckpt + (size_t)(col / a.every - 1) * a.col_stride + first + 1;
                const int base = (hi ? base_hi : base_lo) - BIAS, shift = hi ? 16 : 0;
#pragma unroll
                for (int r = 0; r < R; ++r)
                    if (first + r < a.height)
                        out[r] = make_int2((int)((HO[r] >> shift) & 0xffffu) + base + oe,
                                           (int)((E[r] >> shift) & 0xffffu) + base);
            }
        }
        if (LAST && owns_last) {
            unsigned v = HO[0];
#pragma unroll
            for (int r = 1; r < R; ++r) v = r == last_r ? HO[r] : v;
            const int jj = last_high ? j - 32 : j;
            if (jj >= 1 && jj <= width)
                a.last_row_h[jj] = (last_high ? high(v) + base_hi : low(v) + base_lo) - BIAS + oe;
        }
    };

    int published = 0;
    for (int s0 = 0; s0 < steps; s0 += 32) {
        rebase(s0);
        fetch(s0);
        if (hand_over && (s0 >> 5) >= LAG) {
            publish((s0 >> 5) - LAG);
            published = (s0 >> 5) - LAG + 1;
        }
        __syncwarp();
        const int end = min(s0 + 32, steps);
        if (end == s0 + 32) {
#pragma unroll 2
            for (int s = s0; s < end; ++s) step(s);
        } else {
#pragma unroll 1
            for (int s = s0; s < end; ++s) step(s);
        }
    }
    if (hand_over)
        for (int c = published; c < batches; ++c) publish(c);

    if (LOCAL) {
        if (pending) best_i += first_max_row(snapshot);
        WARP_BEST_CELL(best_v, best_i, best_j)
        if (lane == 0) {
            a.best[3 * d] = best_v;
            a.best[3 * d + 1] = best_i;
            a.best[3 * d + 2] = best_j;
        }
    }
}

}  // namespace packed16

// Parameters in packed16::Args order. Persistent grid; warps take double strips from the ticket.
// Six blocks per multiprocessor (at most 80 registers) for global and semiglobal sweeps; five (at
// most 96) for local ones, whose best-cell branch otherwise spills: a new best is found at every row of an
// alignment, in the warps that set the pace of all below them (docs/GPU.md).
// CKPT: also the row and column checkpoints of an alignment's score pass.
template <bool LOCAL, bool CKPT>
__global__ void __launch_bounds__(128, LOCAL ? 5 : 6)
packed16_sweep(const unsigned char* query, const unsigned char* target, const signed char* table,
               int height, int width, int gap_oe, int gap_e, const int* top_h, const int* top_f,
               const int* left_h, int2* slots, int* flags, int* ticket, int num_doubles,
               int* last_row_h, int last_row, int* best, int* best_seen, int2* row_ckpt,
               int num_row_ckpt, int2* col_ckpt, int col_stride, int every) {
    using namespace packed16;
    const Args a{query,     target,    table,      height,     width,    gap_oe,       gap_e,
                 top_h,     top_f,     left_h,     slots,      flags,    num_doubles,  last_row_h,
                 last_row,  best,      best_seen,  row_ckpt,   num_row_ckpt, col_ckpt, col_stride,
                 every};
    // Per warp: the profile, the letter ring, lane 31's output ring and its bases, and each lane's
    // snapshot (16-byte aligned: the sizes before it are multiples of 16).
    extern __shared__ __align__(16) unsigned char packed16_shared[];
    constexpr int PER_WARP = CLASSES * ROWS + LETTERS + OUT * 4 + BASES * 4 + 32 * SNAPSHOT * 4;
    const int warp = threadIdx.x >> 5;
    unsigned char* mine = packed16_shared + warp * PER_WARP;
    signed char* prof = reinterpret_cast<signed char*>(mine);
    unsigned char* letters = mine + CLASSES * ROWS;
    unsigned* out_ring = reinterpret_cast<unsigned*>(letters + LETTERS);
    int* base_ring = reinterpret_cast<int*>(out_ring + OUT);
    const int lane = threadIdx.x & 31;
    uint4* snapshot = reinterpret_cast<uint4*>(base_ring + BASES) + lane * (SNAPSHOT / 4);
    const int last_double = LOCAL ? -1 : (last_row - 1) / ROWS;
    while (true) {
        int d = 0;
        if (lane == 0) d = atomicAdd(ticket, 1);
        d = __shfl_sync(FULL_MASK, d, 0);
        if (d >= num_doubles) break;
        if (LOCAL) sweep_double<true, false, CKPT>(a, d, prof, letters, out_ring, base_ring, snapshot);
        else if (d == last_double) sweep_double<false, true, CKPT>(a, d, prof, letters, out_ring, base_ring, snapshot);
        else sweep_double<false, false, CKPT>(a, d, prof, letters, out_ring, base_ring, snapshot);
    }
}
