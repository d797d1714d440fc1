// Batch alignment with traceback (Gotoh affine gaps): one warp per pair, launched by batch/gpu.py.
//
// A warp owns one pair. The query rows are cut into strips of 32 * R rows (R rows per lane, R = 1..8
// chosen per pair so the strips are nearly full); the warp sweeps every target column through a
// strip as a wavefront: at step t lane l computes its R rows of column c = t - l + 1 and hands its
// bottom cell's H and F to lane l + 1 (a shuffle). Lane 31's bottom row goes to a per-pair boundary
// row in global memory that lane 0 reads back in the next strip (read of column c at step c - 1
// before the write of column c at step c + 30, so one buffer is enough).
//
// Every cell gets the 4-bit direction code of gotoh.py (bits 0-1 the H choice: 0 stop, 1 diagonal,
// 2 E, 3 F; bit 2 E opens here; bit 3 F opens here), the same recurrence and selects as the CPU's
// _cell / _direction. A lane's R codes of one step form one 32-bit word; the 32 lanes of a step
// write 32 consecutive words (coalesced): word (strip * (n + 31) + t) * 32 + lane of the pair.
//
// After the fill, lane 0 follows the codes from the end cell exactly as gotoh.trace_band /
// boundary_step do and writes the path as run-length codes (length << 2 | op, ops 0 '=', 1 'X',
// 2 'I', 3 'D'), end to start. out[p] = (score, qs, qe, ts, te, runs).
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;

#define NEG_INF (-(1 << 30))
#define LOCAL 0
#define GLOBAL 1
#define SEMIGLOBAL 2
#define MAX_ALPHABET 32

struct Batch {
    const uint8_t* query;
    const long long* query_offsets;
    const uint8_t* target;
    const long long* target_offsets;
    const int* order;            // pair indices, longest first
    const int* rows_per_lane;    // R of each pair
    const long long* dir_offsets;  // first direction word of each pair
    const long long* run_offsets;  // first run slot of each pair (m + n slots)
    int* boundary;               // 2 * (n + 1) ints per pair: H and F of the strip's bottom row
    const long long* boundary_offsets;
    uint32_t* dirs;
    uint32_t* runs;
    int* out;                    // 6 ints per pair
};

__device__ __forceinline__ int col0(int i, int gap_open, int gap_extend, bool col0_gap) {
    return (i == 0 || !col0_gap) ? 0 : -(gap_open + i * gap_extend);
}

template <int R>
__device__ void align_one(const Batch& b, int p, const int* smat, int gap_open, int gap_extend,
                          int mode) {
    const int lane = threadIdx.x & 31;
    const long long q0 = b.query_offsets[p];
    const long long t0 = b.target_offsets[p];
    const int m = (int)(b.query_offsets[p + 1] - q0);
    const int n = (int)(b.target_offsets[p + 1] - t0);
    const uint8_t* a = b.query + q0;
    const uint8_t* tb = b.target + t0;
    uint32_t* dirs = b.dirs + b.dir_offsets[p];
    int* bound_h = b.boundary + b.boundary_offsets[p];
    int* bound_f = bound_h + (n + 1);
    const int strip_rows = 32 * R;
    const int strips = (m + strip_rows - 1) / strip_rows;
    const int oe = gap_open + gap_extend;
    const bool local = mode == LOCAL;
    const bool col0_gap = mode != LOCAL;
    const int floor_value = local ? 0 : NEG_INF;
    const int steps = n + 31;

    // End-cell tracking: local, the best of the lane (first in row-major order);
    // semiglobal, the best of row m (smallest column).
    int best = 0, best_i = 0, best_j = 0;
    int last_best = NEG_INF, last_j = 0;
    int corner = 0;  // H(m, n), global

    for (int s = 0; s < strips; ++s) {
        const int r0 = s * strip_rows + lane * R + 1;  // the lane's first row (1-based)
        int code[R];
        int hleft[R], eleft[R];
        int rbest[R], rcol[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const int i = r0 + k;
            code[k] = i <= m ? a[i - 1] : 0;
            hleft[k] = col0(i, gap_open, gap_extend, col0_gap);
            eleft[k] = NEG_INF;
            rbest[k] = NEG_INF;
            rcol[k] = 0;
        }
        if (r0 <= m && r0 + R - 1 >= m && mode == SEMIGLOBAL && s == strips - 1) {
            last_best = col0(m, gap_open, gap_extend, col0_gap);
            last_j = 0;
        }
        int diag_top = col0(r0 - 1, gap_open, gap_extend, col0_gap);
        int out_h = 0, out_f = NEG_INF, out_code = 0;
        uint32_t chunk = 0;
        for (int t = 0; t < steps; ++t) {
            if ((t & 31) == 0) {
                const int x = t + lane;
                chunk = x < n ? tb[x] : 0;
            }
            int up_h = __shfl_up_sync(0xffffffffu, out_h, 1);
            int up_f = __shfl_up_sync(0xffffffffu, out_f, 1);
            int tcode = __shfl_up_sync(0xffffffffu, out_code, 1);
            const int fresh = __shfl_sync(0xffffffffu, chunk, t & 31);
            const int c = t - lane + 1;
            if (lane == 0) {
                tcode = fresh;
                if (c <= n) {
                    if (s == 0) {
                        up_h = mode == GLOBAL ? -(gap_open + c * gap_extend) : 0;
                        up_f = NEG_INF;
                    } else {
                        up_h = bound_h[c];
                        up_f = bound_f[c];
                    }
                }
            }
            uint32_t word = 0;
            if (c >= 1 && c <= n) {
                int h_diag = diag_top;
                int h_up = up_h;
                int f_up = up_f;
                diag_top = up_h;
                const int* srow = smat + tcode;
#pragma unroll
                for (int k = 0; k < R; ++k) {
                    const int score = srow[code[k] * MAX_ALPHABET];
                    const int e_open = hleft[k] - oe;
                    const int f_open = h_up - oe;
                    const int e = max(e_open, eleft[k] - gap_extend);
                    const int f = max(f_open, f_up - gap_extend);
                    const int diag = h_diag + score;
                    const int h = max(max(diag, floor_value), max(e, f));
                    int d = h == e ? 2 : 3;
                    d = h == diag ? 1 : d;
                    d = h == floor_value ? 0 : d;
                    d |= (e == e_open ? 4 : 0) | (f == f_open ? 8 : 0);
                    word |= (uint32_t)d << (4 * k);
                    h_diag = hleft[k];
                    hleft[k] = h;
                    eleft[k] = e;
                    h_up = h;
                    f_up = f;
                    if (h > rbest[k]) {
                        rbest[k] = h;
                        rcol[k] = c;
                    }
                }
                out_h = h_up;
                out_f = f_up;
                out_code = tcode;
                dirs[((long long)s * steps + t) * 32 + lane] = word;
                if (lane == 31 && s + 1 < strips) {
                    bound_h[c] = out_h;
                    bound_f[c] = out_f;
                }
            }
        }
        // Fold the lane's rows into its end-cell candidates.
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const int i = r0 + k;
            if (i > m || n == 0) continue;
            if (local && rbest[k] > best) {  // rows ascend: strict > keeps the smallest i
                best = rbest[k];
                best_i = i;
                best_j = rcol[k];
            }
            if (i == m) {
                if (mode == SEMIGLOBAL && rbest[k] > last_best) {
                    last_best = rbest[k];
                    last_j = rcol[k];
                }
                if (mode == GLOBAL) corner = hleft[k];
            }
        }
        __syncwarp();
    }

    // Warp reductions: local, largest score then smallest (i, j); row m lives in one lane.
    int score, qe, te;
    if (local) {
        for (int offset = 16; offset > 0; offset >>= 1) {
            const int ob = __shfl_down_sync(0xffffffffu, best, offset);
            const int oi = __shfl_down_sync(0xffffffffu, best_i, offset);
            const int oj = __shfl_down_sync(0xffffffffu, best_j, offset);
            if (ob > best || (ob == best && (oi < best_i || (oi == best_i && oj < best_j)))) {
                best = ob;
                best_i = oi;
                best_j = oj;
            }
        }
        score = best;
        qe = best_i;
        te = best_j;
    } else {
        const int last_strip_rows = m - (strips - 1) * strip_rows;
        const int owner = (last_strip_rows - 1) / R;
        if (mode == GLOBAL) {
            score = __shfl_sync(0xffffffffu, corner, owner);
            qe = m;
            te = n;
        } else {
            score = __shfl_sync(0xffffffffu, last_best, owner);
            qe = m;
            te = __shfl_sync(0xffffffffu, last_j, owner);
        }
    }
    if (lane != 0) return;
    int* out = b.out + 6 * (long long)p;
    if (local && score <= 0) {
        out[0] = 0; out[1] = 0; out[2] = 0; out[3] = 0; out[4] = 0; out[5] = 0;
        return;
    }
    // The traceback rule of docs/ALGORITHMS.md (gotoh.trace_band, boundary_step, direction_step).
    uint32_t* runs = b.runs + b.run_offsets[p];
    int n_runs = 0, run_op = -1, run_length = 0;
    int i = qe, j = te, state = 0;  // 0 H, 1 E, 2 F
    while (true) {
        int op = -1;
        if (state == 0 && (i == 0 || j == 0)) {
            if (local || (i == 0 && mode == SEMIGLOBAL)) break;
            if (i == 0) {
                if (run_op != 3 && run_length > 0) {
                    runs[n_runs++] = ((uint32_t)run_length << 2) | run_op;
                    run_length = 0;
                }
                run_op = 3;
                run_length += j;
                j = 0;
                break;
            }
            op = 2;
            --i;
        } else {
            const int rr = (i - 1) % strip_rows;
            const int l = rr / R;
            const long long index = ((long long)((i - 1) / strip_rows) * steps + (j - 1) + l) * 32 + l;
            const int d = (dirs[index] >> (4 * (rr % R))) & 15;
            if (state == 0) {
                const int choice = d & 3;
                if (choice == 0) break;
                if (choice == 1) {
                    op = a[i - 1] == tb[j - 1] ? 0 : 1;
                    --i;
                    --j;
                } else {
                    state = choice == 2 ? 1 : 2;
                    continue;
                }
            } else if (state == 1) {
                op = 3;
                state = (d & 4) ? 0 : 1;
                --j;
            } else {
                op = 2;
                state = (d & 8) ? 0 : 2;
                --i;
            }
        }
        if (op != run_op) {
            if (run_length > 0) runs[n_runs++] = ((uint32_t)run_length << 2) | run_op;
            run_op = op;
            run_length = 0;
        }
        ++run_length;
    }
    if (run_length > 0) runs[n_runs++] = ((uint32_t)run_length << 2) | run_op;
    out[0] = score;
    out[1] = i;
    out[2] = qe;
    out[3] = j;
    out[4] = te;
    out[5] = n_runs;
}

extern "C" __global__ void batch_align(
        const uint8_t* query, const long long* query_offsets, const uint8_t* target,
        const long long* target_offsets, const int* order, const int* rows_per_lane,
        const long long* dir_offsets, const long long* run_offsets, int* boundary,
        const long long* boundary_offsets, uint32_t* dirs, uint32_t* runs, int* out, int count,
        const int* matrix, int alphabet, int gap_open, int gap_extend, int mode) {
    const Batch b{query, query_offsets, target, target_offsets, order, rows_per_lane, dir_offsets,
                  run_offsets, boundary, boundary_offsets, dirs, runs, out};
    __shared__ int smat[MAX_ALPHABET * MAX_ALPHABET];
    for (int x = threadIdx.x; x < MAX_ALPHABET * MAX_ALPHABET; x += blockDim.x) {
        const int r = x / MAX_ALPHABET, c = x % MAX_ALPHABET;
        smat[x] = (r < alphabet && c < alphabet) ? matrix[r * alphabet + c] : 0;
    }
    __syncthreads();
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    if (warp >= count) return;
    const int p = b.order[warp];
    switch (b.rows_per_lane[p]) {
        case 1: align_one<1>(b, p, smat, gap_open, gap_extend, mode); break;
        case 2: align_one<2>(b, p, smat, gap_open, gap_extend, mode); break;
        case 3: align_one<3>(b, p, smat, gap_open, gap_extend, mode); break;
        case 4: align_one<4>(b, p, smat, gap_open, gap_extend, mode); break;
        case 5: align_one<5>(b, p, smat, gap_open, gap_extend, mode); break;
        case 6: align_one<6>(b, p, smat, gap_open, gap_extend, mode); break;
        case 7: align_one<7>(b, p, smat, gap_open, gap_extend, mode); break;
        default: align_one<8>(b, p, smat, gap_open, gap_extend, mode); break;
    }
}

// Pair p's runs, which batch_align wrote end to start from slot_offsets[p], laid out forwards from
// run_offsets[p] (run_offsets[p + 1] - run_offsets[p] of them). One warp per pair. This replaces
// CuPy's cumsum and fancy indexing, whose first use in a process imports cupyx (0.43 s).
extern "C" __global__ void forward_runs(const uint32_t* __restrict__ runs,
                                        const long long* __restrict__ slot_offsets,
                                        const long long* __restrict__ run_offsets,
                                        uint32_t* __restrict__ forward, int count) {
    const int p = blockIdx.x;
    const long long first = run_offsets[p], n = run_offsets[p + 1] - first;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) forward[first + k] = runs[slot_offsets[p] + n - 1 - k];
}
