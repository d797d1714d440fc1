// What the long-pair sweep kernels (pairwise/striped.cu, pairwise/packed16.cu) share: the memory
// order of the ready flags between strips, and the warp's maximum and best-cell reductions.
#pragma once

#define FULL_MASK 0xffffffffu

// The largest of the warp's 32 values, in every lane.
__device__ __forceinline__ int warp_max(int v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(FULL_MASK, v);
#else
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = max(v, __shfl_xor_sync(FULL_MASK, v, off));
    return v;
#endif
}

// Relaxed loads, acquire fences and release stores at one memory scope: gpu for the flags between
// the strips of a sweep, sys for mapped host memory shared with a sweep on another device. Polling
// uses relaxed loads and one acquire fence after the flag is seen: an acquire load in the polling
// loop would invalidate the L1 cache at every poll.
#define SCOPED_SYNC(SCOPE)                                                                      \
    __device__ __forceinline__ int load_relaxed_##SCOPE(const int* p) {                         \
        int v;                                                                                  \
        asm volatile("ld.relaxed." #SCOPE ".global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); \
        return v;                                                                               \
    }                                                                                           \
    __device__ __forceinline__ void fence_acquire_##SCOPE() {                                   \
        asm volatile("fence.acq_rel." #SCOPE ";" ::: "memory");                                 \
    }                                                                                           \
    __device__ __forceinline__ void store_release_##SCOPE(int* p, int v) {                      \
        asm volatile("st.release." #SCOPE ".global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); \
    }
SCOPED_SYNC(gpu)
SCOPED_SYNC(sys)

// The best of the warp's (score, row, column) cells under (score desc, row asc, column asc), left
// in every lane's variables. A macro rather than a function: it expands to the very loop the
// kernels were measured and tested with, so their compiled code does not change.
#define WARP_BEST_CELL(score, row, column)                                                         \
    _Pragma("unroll") for (int off = 16; off > 0; off >>= 1) {                                      \
        const int v = __shfl_xor_sync(FULL_MASK, score, off);                                       \
        const int i = __shfl_xor_sync(FULL_MASK, row, off);                                         \
        const int jj = __shfl_xor_sync(FULL_MASK, column, off);                                     \
        if (v > score || (v == score && (i < row || (i == row && jj < column)))) {                   \
            score = v;                                                                               \
            row = i;                                                                                 \
            column = jj;                                                                             \
        }                                                                                            \
    }
