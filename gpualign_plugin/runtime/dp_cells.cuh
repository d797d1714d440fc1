// Max helpers of the DP kernels. GPUALIGN_DPX (set by runtime/kernels.py from the device's compute
// capability) selects Hopper's DPX instructions (one instruction for a three-way maximum, with
// or without the clamp at zero); otherwise plain max() chains, which compute the same values.
#pragma once

#ifndef GPUALIGN_DPX
#error "GPUALIGN_DPX must be defined (0 or 1) by the kernel loader"
#endif

#if GPUALIGN_DPX
#define DP_MAX3(a, b, c) __vimax3_s32((a), (b), (c))
#define DP_MAX4_0(a, b, c) __vimax3_s32_relu((a), (b), (c))
#else
#define DP_MAX3(a, b, c) max(max((a), (b)), (c))
#define DP_MAX4_0(a, b, c) max(max(max((a), (b)), (c)), 0)
#endif
