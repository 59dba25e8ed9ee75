// lineage.ops.recurrence.anchored_products as one loop per chunk: the per-channel gate's decayed products A = X Kᵀ
// with every pair's decay split at a causal anchor, level by level (blocks of 2, 4, 8, … steps), exactly the steps of
// the Python function, whose docstring has the maths. Why it exists: at the sizes the app and the benchmark run
// (chunks of 32 steps, K = 64), the eager version is some sixty small tensor operations a span, and a CPU spends
// most of its time starting them; here each chunk's factors stay in the first-level cache from level to level.
//
// Built by lineage.ops.native (a C++ compiler, -O3, on first use); portable C++17 with the GCC/Clang vector
// extension, no intrinsics and no -ffast-math: the sums are reordered (blocks of lanes, a tree at the end), so the
// results agree with the eager version to rounding, not bit for bit (the decays, the same products of factors in the
// same order, are bit for bit). Layout: every array is row-major and contiguous, [Z, C, K] for the inputs and the
// factors, [Z, C, C] for the products. chunk_steps.cpp includes this file: its loop runs these levels in step 2.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

template <typename T>
struct Lanes {
  static constexpr int n = 64 / sizeof(T);  // a 64-byte vector: 16 floats, 8 doubles
  typedef T vec __attribute__((vector_size(64)));
};

template <typename T>
inline typename Lanes<T>::vec load(const T* p) {
  typename Lanes<T>::vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
inline void store(T* p, const typename Lanes<T>::vec& v) {
  std::memcpy(p, &v, sizeof v);
}

// The sum of a vector's lanes as a tree of halves (vector adds, not a chain of scalar adds).
template <typename T>
inline T lane_sum(const typename Lanes<T>::vec& v) {
  typedef T half __attribute__((vector_size(32)));
  typedef T quarter __attribute__((vector_size(16)));
  half a, b;
  std::memcpy(&a, &v, 32);
  std::memcpy(&b, reinterpret_cast<const char*>(&v) + 32, 32);
  a += b;
  quarter c, d;
  std::memcpy(&c, &a, 16);
  std::memcpy(&d, reinterpret_cast<const char*>(&a) + 16, 16);
  c += d;
  T s = 0;
  for (int l = 0; l < int(16 / sizeof(T)); ++l) s += c[l];
  return s;
}

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define LINEAGE_SHUFFLE 1  // __builtin_shufflevector: Clang, and GCC from 12
#else
#define LINEAGE_SHUFFLE 0
#endif

// The sums of the lanes of 16 float vectors, as one vector, by halves: each stage adds the two halves of every vector
// and packs two vectors' halves into one, so four stages turn 16 vectors into one vector of their 16 sums (the same
// tree as lane_sum's, with a quarter of its instructions). Floats with __builtin_shufflevector only (`batched`).
template <typename T>
struct Sums {
  typedef typename Lanes<T>::vec vec;
  static constexpr bool batched = LINEAGE_SHUFFLE && Lanes<T>::n == 16;

  static vec of16(const vec (&x)[16]) {
#if LINEAGE_SHUFFLE
    if constexpr (batched) {
      vec y[8];
      for (int m = 0; m < 8; ++m)  // [8 partial sums of x[2m] | 8 of x[2m + 1]]
        y[m] = __builtin_shufflevector(x[2 * m], x[2 * m + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
               __builtin_shufflevector(x[2 * m], x[2 * m + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                       31);
      for (int m = 0; m < 4; ++m)  // 4 partial sums each of 4 vectors
        y[m] = __builtin_shufflevector(y[2 * m], y[2 * m + 1],  //
                                       0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
               __builtin_shufflevector(y[2 * m], y[2 * m + 1],  //
                                       4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
      for (int m = 0; m < 2; ++m)  // 2 partial sums each of 8 vectors
        y[m] = __builtin_shufflevector(y[2 * m], y[2 * m + 1],  //
                                       0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
               __builtin_shufflevector(y[2 * m], y[2 * m + 1],  //
                                       2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
      return __builtin_shufflevector(y[0], y[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
             __builtin_shufflevector(y[0], y[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    }
#endif
    vec sums{};
    for (int m = 0; m < 16 && m < Lanes<T>::n; ++m) sums[m] = lane_sum<T>(x[m]);
    return sums;
  }

  // Dot products waiting for their sums, where each lands alone (the diagonal, blocks of 1 and 2 steps): kept until
  // 16 are ready, then summed together. flush() before reading the results.
  vec x[16];
  T* to[16];
  int n = 0;

  void add(const vec& v, T* out) {
    if (!batched) {
      *out = lane_sum<T>(v);
      return;
    }
    x[n] = v, to[n] = out;
    if (++n == 16) flush();
  }

  void flush() {
    if (n == 0) return;
    for (int m = n; m < 16; ++m) x[m] = vec{};
    const vec sums = of16(x);
    for (int m = 0; m < n; ++m) *to[m] = sums[m];
    n = 0;
  }
};

// NI × NJ sums (at most 4 × 4) of the decayed rows i0 … and columns j0 … over the channels, each a vector of partial
// sums; sizes known to the compiler, so the partial sums stay in registers
template <typename T, bool FACTORS, int NI, int NJ>
inline void dot_tile(const T* R, const T* FR, const T* L, const T* FL, int K, typename Lanes<T>::vec (&acc)[4][4]) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  for (int a = 0; a < NI; ++a)
    for (int b = 0; b < NJ; ++b) acc[a][b] = vec{};
  for (int c = 0; c < K; c += W) {
    vec r[NI], l[NJ];
    for (int a = 0; a < NI; ++a) r[a] = FACTORS ? load(R + a * K + c) * load(FR + a * K + c) : load(R + a * K + c);
    for (int b = 0; b < NJ; ++b) l[b] = FACTORS ? load(L + b * K + c) * load(FL + b * K + c) : load(L + b * K + c);
    for (int a = 0; a < NI; ++a)
      for (int b = 0; b < NJ; ++b) acc[a][b] += r[a] * l[b];
  }
}

// out[i][j] = Σ_c R[i][c] L[j][c] for i < n, j < m (out's rows ldo apart), handed to `sums`; with factors FR and FL
// (laid out as R and L), of the decayed rows R ⊙ FR and L ⊙ FL, multiplied as they are loaded. Tiles of 4 × 4 sums
// (2 × 2 and 1 × 1 for the smallest blocks), so every loaded row and column serves several sums.
template <typename T, bool FACTORS>
void products(const T* R, const T* FR, int n, const T* L, const T* FL, int m, int K, T* out, int ldo, Sums<T>& sums) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  if (K % W != 0) {  // a head size that is not a whole number of vectors (small teaching configs): plain loops
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) {
        T s = 0;
        for (int c = 0; c < K; ++c)
          s += FACTORS ? (R[i * K + c] * FR[i * K + c]) * (L[j * K + c] * FL[j * K + c]) : R[i * K + c] * L[j * K + c];
        out[i * ldo + j] = s;
      }
    return;
  }
  for (int i0 = 0; i0 < n; i0 += 4) {
    const int ni = n - i0 < 4 ? n - i0 : 4;
    for (int j0 = 0; j0 < m; j0 += 4) {
      const int nj = m - j0 < 4 ? m - j0 : 4;
      const T *Ri = R + i0 * K, *Lj = L + j0 * K, *FRi = FACTORS ? FR + i0 * K : nullptr;
      const T* FLj = FACTORS ? FL + j0 * K : nullptr;
      vec acc[4][4];
      if (ni == 4 && nj == 4) {
        dot_tile<T, FACTORS, 4, 4>(Ri, FRi, Lj, FLj, K, acc);
        if (Sums<T>::batched) {  // a whole tile: its 16 sums at once, in registers
          vec flat[16];
          for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b) flat[a * 4 + b] = acc[a][b];
          const vec tile_sums = Sums<T>::of16(flat);
          for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b) out[(i0 + a) * ldo + j0 + b] = tile_sums[a * 4 + b];
          continue;
        }
      } else if (ni == 2 && nj == 2) {
        dot_tile<T, FACTORS, 2, 2>(Ri, FRi, Lj, FLj, K, acc);
      } else if (ni == 1 && nj == 1) {
        dot_tile<T, FACTORS, 1, 1>(Ri, FRi, Lj, FLj, K, acc);
      } else {  // a chunk that is no power of two: the last, cut blocks
        for (int a = 0; a < ni; ++a)
          for (int b = 0; b < nj; ++b) {
            vec one{};
            for (int c = 0; c < K; c += W) {
              const vec r = FACTORS ? load(Ri + a * K + c) * load(FRi + a * K + c) : load(Ri + a * K + c);
              one += r * (FACTORS ? load(Lj + b * K + c) * load(FLj + b * K + c) : load(Lj + b * K + c));
            }
            acc[a][b] = one;
          }
      }
      for (int a = 0; a < ni; ++a)
        for (int b = 0; b < nj; ++b) sums.add(acc[a][b], out + (i0 + a) * ldo + j0 + b);
    }
  }
}

// each of the n rows of x ← row ⊙ f, then every entry at most `cut` set to 0 (the strong-gate knob,
// recurrence.flush_decays); f is not in x
template <typename T>
inline void scale_and_flush(T* __restrict x, const T* __restrict f, int n, int K, T cut) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  if (K % W == 0) {  // whole vectors
    for (int i = 0; i < n; ++i, x += K)
      for (int c = 0; c < K; c += W) {
        const vec v = load(x + c) * load(f + c);
        store(x + c, v > cut ? v : vec{});
      }
    return;
  }
  for (int i = 0; i < n; ++i, x += K)
    for (int c = 0; c < K; ++c) {
      const T v = x[c] * f[c];
      x[c] = v > cut ? v : T(0);
    }
}

// The levels of one chunk, with the scratch they reuse from chunk to chunk. Per chunk: k and the rows x0 [C, K], x1
// the same or null (one row: GLA); the products A0 (and A1) [C, C], filled, 0 above the diagonal; the decays from
// the chunk's start and to its end [C, K]. chunk() takes α (= e^g, flushed) and writes the decays through its own
// scratch; levels() works in the caller's (chunk_steps.cpp's loop), with no copy.
template <typename T>
struct Anchors {
  int C, K, P = 1;  // P: the chunk padded to a power of two; padded steps come last, with α = 1, never written out
  std::vector<T> into, after, left_total, right_total;
  Sums<T> sums;

  Anchors(int C_, int K_) : C(C_), K(K_) {
    while (P < C) P *= 2;
    into.resize(size_t(P) * K), after.resize(size_t(P) * K);
    left_total.resize(K), right_total.resize(K);
  }

  // One chunk from its decay factors α (alpha [C, K]) into from_start and to_end [C, K], through this scratch
  void chunk(const T* kz, const T* alpha, const T* x0, const T* x1, T cut, T* A0, T* A1, T* from_start, T* to_end) {
    std::memcpy(into.data(), alpha, sizeof(T) * C * K);
    levels(kz, x0, x1, cut, A0, A1, into.data(), after.data());
    std::memcpy(from_start, into.data(), sizeof(T) * C * K);
    std::memcpy(to_end, after.data(), sizeof(T) * C * K);
  }

  // The levels in place: into [P, K] holds α in its first C rows on entry and the decays from the chunk's start on
  // return; after [P, K] (anything on entry) the decays to its end. A0 (and A1) [C, C] are filled.
  void levels(const T* kz, const T* x0, const T* x1, T cut, T* A0, T* A1, T* into, T* after) {
    typedef typename Lanes<T>::vec vec;
    constexpr int W = Lanes<T>::n;
    const int64_t CK = int64_t(C) * K, CC = int64_t(C) * C;
    const T* xs[2] = {x0, x1};
    T* As[2] = {A0, A1};
    const int nrows = x1 ? 2 : 1;
    // blocks of one step: into = α_i (Π over the block up to i), after = 1 (nothing left after j in its block)
    std::fill(into + CK, into + int64_t(P) * K, T(1));
    std::fill(after, after + int64_t(P) * K, T(1));
    for (int r = 0; r < nrows; ++r) {  // i = j: no decay
      T* A = As[r];
      std::memset(A, 0, sizeof(T) * CC);
      const T* x = xs[r];
      if (K % W == 0)
        for (int i = 0; i < C; ++i) {
          vec acc{};
          for (int c = 0; c < K; c += W) acc += load(x + i * K + c) * load(kz + i * K + c);
          sums.add(acc, A + i * C + i);
        }
      else
        for (int i = 0; i < C; ++i)
          products<T, false>(x + i * K, nullptr, 1, kz + i * K, nullptr, 1, K, A + i * C + i, C, sums);
    }
    for (int h = 1; h < P; h *= 2) {
      for (int start = 0; start < P; start += 2 * h) {
        // block [start, start + 2h): columns j in its left half, rows i in its right half, anchor start + h − 1;
        // the rows decayed from the anchor (into), the keys up to it (after)
        const int nj = start + h <= C ? h : C - start;
        const int ni = start + 2 * h <= C ? h : C - start - h;
        if (ni > 0 && nj > 0)
          for (int r = 0; r < nrows; ++r)
            products<T, true>(xs[r] + int64_t(start + h) * K, into + int64_t(start + h) * K, ni,
                              kz + int64_t(start) * K, after + int64_t(start) * K, nj, K,
                              As[r] + int64_t(start + h) * C + start, C, sums);
        // the next level's blocks join two halves: the left half decays by the right half's total after it, the
        // right half by the left half's total before it (both totals taken before either half changes)
        std::memcpy(left_total.data(), into + int64_t(start + h - 1) * K, sizeof(T) * K);
        std::memcpy(right_total.data(), into + int64_t(start + 2 * h - 1) * K, sizeof(T) * K);
        scale_and_flush(after + int64_t(start) * K, right_total.data(), h, K, cut);
        scale_and_flush(into + int64_t(start + h) * K, left_total.data(), h, K, cut);
      }
    }
    sums.flush();
  }
};

// One call: chunks [0, Z), each laid out as Anchors::chunk reads and writes them ([Z, C, K] and [Z, C, C]).
template <typename T>
void anchored(const T* k, const T* alpha, const T* x0, const T* x1, int64_t Z, int C, int K, T cut, T* A0, T* A1,
              T* from_start, T* to_end) {
  const int64_t CK = int64_t(C) * K, CC = int64_t(C) * C;
  Anchors<T> levels(C, K);
  for (int64_t z = 0; z < Z; ++z)
    levels.chunk(k + z * CK, alpha + z * CK, x0 + z * CK, x1 ? x1 + z * CK : nullptr, cut, A0 + z * CC,
                 A1 ? A1 + z * CC : nullptr, from_start + z * CK, to_end + z * CK);
}

}  // namespace

extern "C" {
void anchored_products_f32(const float* k, const float* alpha, const float* x0, const float* x1, int64_t Z, int C,
                           int K, float cut, float* A0, float* A1, float* from_start, float* to_end) {
  anchored<float>(k, alpha, x0, x1, Z, C, K, cut, A0, A1, from_start, to_end);
}
void anchored_products_f64(const double* k, const double* alpha, const double* x0, const double* x1, int64_t Z, int C,
                           int K, double cut, double* A0, double* A1, double* from_start, double* to_end) {
  anchored<double>(k, alpha, x0, x1, Z, C, K, cut, A0, A1, from_start, to_end);
}
}
