// Three-sequence alignment (sum of pairs, linear gaps; docs/ALGORITHMS.md "Three-sequence
// alignment") on sloped planes: one launch computes every cell of one hyperplane
// (i - first) + j + k = q of a slab of planes first..first+height-1. All seven predecessors of a
// cell lie on hyperplanes q-1, q-2 and q-3, so the cells of one hyperplane are independent, and
// a ring of four hyperplanes (slot q & 3, each indexed by (i - first, j); k = q - (i - first) - j)
// holds every value a launch reads. Plane first-1 comes from plane_in; plane first+height-1 goes
// to plane_out; with DIRS each cell's move goes to dirs[i - first][j][k], the CPU's layout.
//
// Thread t of a launch takes row ii = ii_lo + t / width of the slab and the t % width-th cell
// (j, k) of that row with j + k = q - ii, counting from the smallest valid j; threads past the
// row's last cell, or past the last row, return at once. The host (align3/gpu.py) computes
// ii_lo, rows and width with the same formulas and sizes the grid.

#define ALIGN3_ORIGIN 7

struct Align3Slab {
    const unsigned char* a;  // codes of the first sequence (index i - 1), whole sequence
    const unsigned char* b;  // second sequence (j - 1)
    const unsigned char* c;  // third sequence (k - 1)
    const int* matrix;       // alpha x alpha substitution scores, row major
    int alpha;
    int m, n;                // lengths of b and c; a plane is (m + 1) x (n + 1)
    int first, height;       // planes first..first+height-1 of a
    int gap2;                // twice the linear gap cost: a residue against two gaps
    const int* plane_in;     // plane first - 1, (m + 1) x (n + 1); unused when first == 0
    int* plane_out;          // receives plane first + height - 1
    int* ring;               // 4 slots of height * (m + 1) scores
    unsigned char* dirs;     // height x (m + 1) x (n + 1) moves (only with DIRS)
};

// Score of cell (first + ii, j, k) computed on an earlier hyperplane, or read from plane_in for
// ii == -1.
__device__ __forceinline__ int align3_value(const Align3Slab& s, int ii, int j, int k)
{
    if (ii < 0) {
        return s.plane_in[(long long)j * (s.n + 1) + k];
    }
    const long long stride = (long long)s.height * (s.m + 1);
    return s.ring[((ii + j + k) & 3) * stride + (long long)ii * (s.m + 1) + j];
}

// The first move in the written order that attains the maximum wins: a later move must be
// strictly better. ORIGIN means no move has been seen yet.
__device__ __forceinline__ void align3_consider(int value, int code, int& best, int& move)
{
    if (move == ALIGN3_ORIGIN || value > best) {
        best = value;
        move = code;
    }
}

template <bool DIRS>
__global__ void align3_hyperplane(const unsigned char* a, const unsigned char* b,
                                  const unsigned char* c, const int* matrix, int alpha, int m,
                                  int n, int first, int height, int gap2, const int* plane_in,
                                  int* plane_out, int* ring, unsigned char* dirs, int q, int ii_lo,
                                  int rows, int width)
{
    const Align3Slab s{a, b, c, matrix, alpha, m, n, first, height, gap2, plane_in, plane_out,
                       ring, dirs};
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)rows * width) {
        return;
    }
    const int ii = ii_lo + (int)(t / width);
    const int sum = q - ii;  // j + k
    const int j = max(0, sum - s.n) + (int)(t % width);
    if (j > min(s.m, sum)) {
        return;
    }
    const int k = sum - j;
    const int i = s.first + ii;

    // Residues and pair scores; only read where the move that uses them is available.
    const bool di = i > 0, dj = j > 0, dk = k > 0;
    const int x = di ? s.a[i - 1] : 0;
    const int y = dj ? s.b[j - 1] : 0;
    const int z = dk ? s.c[k - 1] : 0;
    const int sab = (di && dj) ? s.matrix[x * s.alpha + y] : 0;
    const int sac = (di && dk) ? s.matrix[x * s.alpha + z] : 0;
    const int sbc = (dj && dk) ? s.matrix[y * s.alpha + z] : 0;

    int best = 0;
    int move = ALIGN3_ORIGIN;
    if (di && dj && dk)
        align3_consider(align3_value(s, ii - 1, j - 1, k - 1) + sab + sac + sbc, 0, best, move);
    if (di && dj) align3_consider(align3_value(s, ii - 1, j - 1, k) + sab - s.gap2, 1, best, move);
    if (di && dk) align3_consider(align3_value(s, ii - 1, j, k - 1) + sac - s.gap2, 2, best, move);
    if (dj && dk) align3_consider(align3_value(s, ii, j - 1, k - 1) + sbc - s.gap2, 3, best, move);
    if (di) align3_consider(align3_value(s, ii - 1, j, k) - s.gap2, 4, best, move);
    if (dj) align3_consider(align3_value(s, ii, j - 1, k) - s.gap2, 5, best, move);
    if (dk) align3_consider(align3_value(s, ii, j, k - 1) - s.gap2, 6, best, move);

    const long long stride = (long long)s.height * (s.m + 1);
    s.ring[(q & 3) * stride + (long long)ii * (s.m + 1) + j] = best;
    if (ii == s.height - 1) {
        s.plane_out[(long long)j * (s.n + 1) + k] = best;
    }
    if (DIRS) {
        s.dirs[((long long)ii * (s.m + 1) + j) * (s.n + 1) + k] = (unsigned char)move;
    }
}
