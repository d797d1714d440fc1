// Nussinov folding on the GPU (launched by fold/gpu.py): a blocked max-plus fill over the upper
// triangle, a wavefront of tile diagonals, and the traceback on the device.
//
// Half-open form: W(i, j) is the most nested pairs in s[i..j) (so N(i, j) = W(i, j + 1));
// W(i, i) = W(i, i + 1) = 0 and for j - i >= 2
//   W(i, j) = max( W(i+1, j-1) + 1   if s_i pairs s_{j-1} and j - i - 2 >= min_loop,
//                  max_{i < k < j} W(i, k) + W(k, j) ),
// the recurrence of docs/ALGORITHMS.md with k' = k + 1: a plain max-plus closure.
//
// Storage: W of a sequence of n bases is (D T) x (D T), D = ceil((n + 1) / T), cut into T x T
// tiles; tile (I, J), J >= I, lies at tiles + (I D - I (I - 1) / 2 + J - I) T^2 (int16, row-major;
// the most pairs, n / 2, fits 16 bits for n up to 65,000), and transposed at the same place in
// tiles_t (the max-plus products read their left operand column by column). Bases past n have code 4 (pairs with
// nothing), so the padded cells hold exact values of a longer sequence and never overflow.
//
// fold_diagonal fills the tiles of tile diagonal d = J - I (one block per tile, many sequences in
// one launch). Phase 1: the max-plus products W(I, K) (x) W(K, J) for I < K < J (tiles of lower
// diagonals) in shared memory, each thread 4 x 4 cells in 16-bit pairs (DPX __viaddmax_s16x2 on
// Hopper). Phase 2: the split points inside tiles I and J and the pair term, cell anti-diagonal by
// anti-diagonal of the tile (offset b - a from -(T-1) to T-1), four threads per cell.
// fold_traceback follows the CPU's rule (pair the ends when optimal, else the smallest split) with
// one block per sequence and writes each base's partner (-1 unpaired).
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;

#define T 64
#define THREADS 256
#define PAD 66  // int16 row stride of the phase-2 tiles in shared memory

#ifndef GPUALIGN_DPX
#error "GPUALIGN_DPX must be defined (0 or 1) by the kernel loader"
#endif

__device__ __forceinline__ unsigned add_max_16x2(unsigned a, unsigned b, unsigned c) {
#if GPUALIGN_DPX
    return __viaddmax_s16x2(a, b, c);
#else
    return __vmaxs2(__vadd2(a, b), c);
#endif
}

// AU, UA, GC, CG, GU, UG with codes A 0, C 1, G 2, U 3: bit 4 x + y.
#define PAIR_MASK ((1u << 3) | (1u << 12) | (1u << 9) | (1u << 6) | (1u << 11) | (1u << 14))

__device__ __forceinline__ bool can_pair(int x, int y) {
    return x < 4 && y < 4 && ((PAIR_MASK >> (4 * x + y)) & 1u);
}

__device__ __forceinline__ long long tile_index(int I, int J, int D) {
    return (long long)I * D - (long long)I * (I - 1) / 2 + (J - I);
}

// W(i, j) of one sequence, i <= j + 1 (tiles at or above the diagonal; below it the diagonal tile holds 0).
__device__ __forceinline__ int w_at(const short* tiles, int D, int i, int j) {
    const int I = i / T, J = j / T;
    if (J < I) return 0;
    return tiles[tile_index(I, J, D) * (T * T) + (i % T) * T + (j % T)];
}

extern "C" __global__ void __launch_bounds__(THREADS)
fold_diagonal(short* tiles, short* tiles_t, const long long* tile_base, const int* tiles_per_side,
              const uint8_t* codes, const long long* code_base, const int2* items, int d, int min_loop) {
    __shared__ __align__(16) unsigned char raw[3 * T * PAD * 2 > T * T * 4 + T * T * 2
                                                ? 3 * T * PAD * 2 : T * T * 4 + T * T * 2];
    const int tid = threadIdx.x;
    const int s = items[blockIdx.x].x;
    const int I = items[blockIdx.x].y;
    const int J = I + d;
    const int D = tiles_per_side[s];
    short* W = tiles + tile_base[s];
    short* Wt = tiles_t + tile_base[s];
    const uint8_t* code = codes + code_base[s];
    short* out = W + tile_index(I, J, D) * (T * T);
    short* out_t = Wt + tile_index(I, J, D) * (T * T);

    // Phase 1: acc = max over I < K < J of W(I, K) (x) W(K, J), 16-bit pairs of columns. The A
    // operand comes from the transposed copy ([k][a], each value duplicated into both halves in
    // shared memory), the B operand from the row-major one; the next K's tiles are loaded into
    // registers while the current ones are multiplied.
    const int ty = tid / 16, tx = tid % 16;
    unsigned acc[4][2];
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = 0u;
    unsigned* At = reinterpret_cast<unsigned*>(raw);             // [k][a]: (v, v) duplicated
    unsigned* Bs = reinterpret_cast<unsigned*>(raw + T * T * 4);  // [k][b / 2]: packed pairs
    uint4 next_a[2], next_b[2];
    if (I + 1 < J) {
        const uint4* A = reinterpret_cast<const uint4*>(Wt + tile_index(I, I + 1, D) * (T * T));
        const uint4* B = reinterpret_cast<const uint4*>(W + tile_index(I + 1, J, D) * (T * T));
        next_a[0] = A[tid]; next_a[1] = A[tid + THREADS];
        next_b[0] = B[tid]; next_b[1] = B[tid + THREADS];
    }
    for (int K = I + 1; K < J; ++K) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            // 8 consecutive a of one k: 16 bytes in, 32 bytes of duplicated pairs out.
            const unsigned w[4] = {next_a[h].x, next_a[h].y, next_a[h].z, next_a[h].w};
            uint4 lo, hi;
            lo.x = __byte_perm(w[0], 0, 0x1010); lo.y = __byte_perm(w[0], 0, 0x3232);
            lo.z = __byte_perm(w[1], 0, 0x1010); lo.w = __byte_perm(w[1], 0, 0x3232);
            hi.x = __byte_perm(w[2], 0, 0x1010); hi.y = __byte_perm(w[2], 0, 0x3232);
            hi.z = __byte_perm(w[3], 0, 0x1010); hi.w = __byte_perm(w[3], 0, 0x3232);
            uint4* dst = reinterpret_cast<uint4*>(At + 8 * (tid + h * THREADS));
            dst[0] = lo;
            dst[1] = hi;
            reinterpret_cast<uint4*>(Bs)[tid + h * THREADS] = next_b[h];
        }
        __syncthreads();
        if (K + 1 < J) {
            const uint4* A = reinterpret_cast<const uint4*>(Wt + tile_index(I, K + 1, D) * (T * T));
            const uint4* B = reinterpret_cast<const uint4*>(W + tile_index(K + 1, J, D) * (T * T));
            next_a[0] = A[tid]; next_a[1] = A[tid + THREADS];
            next_b[0] = B[tid]; next_b[1] = B[tid + THREADS];
        }
#pragma unroll 8
        for (int k = 0; k < T; ++k) {
            const uint4 av = *reinterpret_cast<const uint4*>(At + k * T + 4 * ty);
            const uint2 bv = *reinterpret_cast<const uint2*>(Bs + k * (T / 2) + 2 * tx);
            const unsigned a4[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                acc[r][0] = add_max_16x2(a4[r], bv.x, acc[r][0]);
                acc[r][1] = add_max_16x2(a4[r], bv.y, acc[r][1]);
            }
        }
        __syncthreads();
    }

    // Phase 2 in shared memory: cur (this tile), dI = tile (I, I), dJ = tile (J, J).
    short* cur = reinterpret_cast<short*>(raw);
    short* dI = cur + T * PAD;
    short* dJ = dI + T * PAD;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int a = 4 * ty + r;
        cur[a * PAD + 4 * tx + 0] = (short)(acc[r][0] & 0xffff);
        cur[a * PAD + 4 * tx + 1] = (short)(acc[r][0] >> 16);
        cur[a * PAD + 4 * tx + 2] = (short)(acc[r][1] & 0xffff);
        cur[a * PAD + 4 * tx + 3] = (short)(acc[r][1] >> 16);
    }
    if (d > 0) {
        const short* tI = W + tile_index(I, I, D) * (T * T);
        const short* tJ = W + tile_index(J, J, D) * (T * T);
        for (int x = tid; x < T * T; x += THREADS) {
            dI[(x / T) * PAD + x % T] = tI[x];
            dJ[(x / T) * PAD + x % T] = tJ[x];
        }
    }
    __syncthreads();
    const int quad = tid / 4, sub = tid % 4;
    const int i0 = I * T, j0 = J * T;
    for (int o = (d > 0 ? -(T - 1) : 1); o < T; ++o) {
        const int a = (o < 0 ? -o : 0) + quad;
        const int b = a + o;
        const bool active = b < T && a < T;
        int best = 0;
        if (active) {
            if (d > 0) {
                const int below = T - 1 - a;  // split points k in tile I after row a
                const int terms = below + b;
                for (int x = sub; x < terms; x += 4) {
                    int v;
                    if (x < below) {
                        const int ka = a + 1 + x;
                        v = dI[a * PAD + ka] + cur[ka * PAD + b];
                    } else {
                        const int kb = x - below;
                        v = cur[a * PAD + kb] + dJ[kb * PAD + b];
                    }
                    best = max(best, v);
                }
            } else {
                for (int ka = a + 1 + sub; ka < b; ka += 4) best = max(best, cur[a * PAD + ka] + cur[ka * PAD + b]);
            }
        }
        best = max(best, __shfl_xor_sync(0xffffffffu, best, 1));
        best = max(best, __shfl_xor_sync(0xffffffffu, best, 2));
        if (active && sub == 0) {
            const int i = i0 + a, j = j0 + b;
            best = max(best, (int)cur[a * PAD + b]);
            if (j - i - 2 >= min_loop && can_pair(code[i], code[j - 1])) {
                const int inner = (a + 1 < T && b >= 1) ? cur[(a + 1) * PAD + b - 1] : w_at(W, D, i + 1, j - 1);
                best = max(best, inner + 1);
            }
            cur[a * PAD + b] = (short)best;
        }
        __syncthreads();
    }
    for (int x = tid; x < T * T; x += THREADS) {
        out[x] = cur[(x / T) * PAD + x % T];
        out_t[x] = cur[(x % T) * PAD + x / T];
    }
}

// One block per sequence: partner[i] = j for a pair (i, j), -1 for an unpaired base. stack holds
// 2 * (n + 1) (i, j) entries per sequence.
extern "C" __global__ void __launch_bounds__(THREADS)
fold_traceback(const short* tiles, const long long* tile_base, const int* tiles_per_side,
               const uint8_t* codes, const long long* code_base, const int* lengths,
               const long long* partner_base, int* partner, int2* stack, int* scores, int min_loop) {
    __shared__ int sh_i, sh_j, sh_v, sh_k, sh_found;
    const int s = blockIdx.x;
    const int tid = threadIdx.x;
    const int n = lengths[s];
    const int D = tiles_per_side[s];
    const short* W = tiles + tile_base[s];
    const uint8_t* code = codes + code_base[s];
    int* part = partner + partner_base[s];
    int2* st = stack + 2 * (partner_base[s] + s);
    for (int x = tid; x < n; x += THREADS) part[x] = -1;
    int depth = 0;  // meaningful in thread 0 only
    if (tid == 0) {
        scores[s] = w_at(W, D, 0, n);
        st[depth++] = make_int2(0, n - 1);
        sh_k = 0x7fffffff;
    }
    __syncthreads();
    while (true) {
        if (tid == 0) {
            int found = 0;
            while (depth > 0 && !found) {
                const int2 top = st[--depth];
                const int i = top.x, j = top.y;
                if (i >= j) continue;
                const int v = w_at(W, D, i, j + 1);
                if (v == 0) continue;
                if (j - i - 1 >= min_loop && can_pair(code[i], code[j]) && v == w_at(W, D, i + 1, j) + 1) {
                    part[i] = j;
                    part[j] = i;
                    st[depth++] = make_int2(i + 1, j - 1);
                    continue;
                }
                if (w_at(W, D, i + 1, j + 1) == v) {  // split at k = i: s_i unpaired
                    st[depth++] = make_int2(i + 1, j);
                    continue;
                }
                found = 1;
                sh_i = i;
                sh_j = j;
                sh_v = v;
            }
            sh_found = found;
        }
        __syncthreads();
        if (!sh_found) break;
        const int i = sh_i, j = sh_j, v = sh_v;
        int k_found = 0x7fffffff;
        for (int base = i + 1; base < j; base += THREADS) {
            const int k = base + tid;
            if (k < j && w_at(W, D, i, k + 1) + w_at(W, D, k + 1, j + 1) == v) atomicMin(&sh_k, k);
            __syncthreads();
            k_found = sh_k;
            __syncthreads();  // every thread has read sh_k before anyone changes it
            if (k_found != 0x7fffffff) break;
        }
        if (tid == 0 && k_found != 0x7fffffff) {
            st[depth++] = make_int2(k_found + 1, j);
            st[depth++] = make_int2(i, k_found);
            sh_k = 0x7fffffff;
        }
        __syncthreads();
    }
}
