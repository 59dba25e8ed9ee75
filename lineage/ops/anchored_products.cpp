// lineage.ops.recurrence.anchored_products as one loop per chunk: the per-channel gate's decayed products A = X Kᵀ
// with every pair's decay split at a causal anchor, level by level (blocks of 2, 4, 8, … steps), exactly the steps of
// the Python function, whose docstring has the maths. Why it exists: at the sizes the app and the benchmark run
// (chunks of 32 steps, K = 64), the eager version is some sixty small tensor operations a span, and a CPU spends
// most of its time starting them; here each chunk's factors stay in the first-level cache from level to level.
//
// Built by lineage.ops.native (a C++ compiler, -O3, on first use); portable C++17 with the GCC/Clang vector
// extension, no intrinsics and no -ffast-math: the sums are reordered (blocks of lanes, a tree at the end), so the
// results agree with the eager version to rounding, not bit for bit. Layout: every array is row-major and
// contiguous, [Z, C, K] for the inputs and the factors, [Z, C, C] for the products.

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

// out[i][j] = Σ_c R[i][c] L[j][c] for i < n, j < m (out's rows ldo apart): tiles of 4 × 4 sums, each a vector of
// partial sums over the channels, so every loaded row and column serves four sums.
template <typename T>
void products(const T* R, int n, const T* L, int m, int K, T* out, int ldo) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  if (K % W != 0) {  // a head size that is not a whole number of vectors (small teaching configs): plain loops
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) {
        T s = 0;
        for (int c = 0; c < K; ++c) s += R[i * K + c] * L[j * K + c];
        out[i * ldo + j] = s;
      }
    return;
  }
  for (int i0 = 0; i0 < n; i0 += 4) {
    const int ni = n - i0 < 4 ? n - i0 : 4;
    for (int j0 = 0; j0 < m; j0 += 4) {
      const int nj = m - j0 < 4 ? m - j0 : 4;
      vec acc[4][4];
      for (auto& row : acc)
        for (auto& a : row) a = vec{};
      if (ni == 4 && nj == 4) {
        for (int c = 0; c < K; c += W) {
          vec r[4], l[4];
          for (int a = 0; a < 4; ++a) r[a] = load(R + (i0 + a) * K + c);
          for (int b = 0; b < 4; ++b) l[b] = load(L + (j0 + b) * K + c);
          for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b) acc[a][b] += r[a] * l[b];
        }
      } else {
        for (int c = 0; c < K; c += W)
          for (int a = 0; a < ni; ++a) {
            const vec r = load(R + (i0 + a) * K + c);
            for (int b = 0; b < nj; ++b) acc[a][b] += r * load(L + (j0 + b) * K + c);
          }
      }
      for (int a = 0; a < ni; ++a)
        for (int b = 0; b < nj; ++b) out[(i0 + a) * ldo + j0 + b] = lane_sum<T>(acc[a][b]);
    }
  }
}

// x ← x ⊙ f, then every entry at most `cut` set to 0 (the strong-gate knob, recurrence.flush_decays)
template <typename T>
inline void scale_and_flush(T* x, const T* f, int K, T cut) {
  for (int c = 0; c < K; ++c) {
    const T v = x[c] * f[c];
    x[c] = v > cut ? v : T(0);
  }
}

// One call: chunks [0, Z). k, alpha (= e^g, flushed), x0 [Z, C, K]; x1 the same or null (one row: GLA);
// A0 (and A1) [Z, C, C], filled, 0 above the diagonal; from_start, to_end [Z, C, K].
template <typename T>
void anchored(const T* k, const T* alpha, const T* x0, const T* x1, int64_t Z, int C, int K, T cut, T* A0, T* A1,
              T* from_start, T* to_end) {
  int P = 1;  // the chunk padded to a power of two: padded steps come last, with α = 1, and are never written out
  while (P < C) P *= 2;
  const int64_t CK = int64_t(C) * K, CC = int64_t(C) * C;
  std::vector<T> into(size_t(P) * K), after(size_t(P) * K), rows(size_t(P / 2 + 1) * K), lefts(size_t(P / 2 + 1) * K);
  std::vector<T> left_total(K), right_total(K);
  const T* xs[2] = {x0, x1};
  T* As[2] = {A0, A1};
  const int nrows = x1 ? 2 : 1;
  for (int64_t z = 0; z < Z; ++z) {
    const T* kz = k + z * CK;
    // blocks of one step: into = α_i (Π over the block up to i), after = 1 (nothing left after j in its block)
    std::memcpy(into.data(), alpha + z * CK, sizeof(T) * CK);
    std::fill(into.begin() + CK, into.end(), T(1));
    std::fill(after.begin(), after.end(), T(1));
    for (int r = 0; r < nrows; ++r) {  // i = j: no decay
      const T* xz = xs[r] + z * CK;
      T* A = As[r] + z * CC;
      std::memset(A, 0, sizeof(T) * CC);
      for (int i = 0; i < C; ++i) products<T>(xz + i * K, 1, kz + i * K, 1, K, A + i * C + i, C);
    }
    for (int h = 1; h < P; h *= 2) {
      for (int start = 0; start < P; start += 2 * h) {
        // block [start, start + 2h): columns j in its left half, rows i in its right half, anchor start + h − 1
        const int nj = start + h <= C ? h : C - start;
        const int ni = start + 2 * h <= C ? h : C - start - h;
        if (ni > 0 && nj > 0) {
          for (int64_t e = 0; e < int64_t(nj) * K; ++e) lefts[e] = kz[start * K + e] * after[start * K + e];
          for (int r = 0; r < nrows; ++r) {
            const T* xi = xs[r] + z * CK + int64_t(start + h) * K;
            const T* fi = into.data() + int64_t(start + h) * K;
            for (int64_t e = 0; e < int64_t(ni) * K; ++e) rows[e] = xi[e] * fi[e];
            products<T>(rows.data(), ni, lefts.data(), nj, K, As[r] + z * CC + int64_t(start + h) * C + start, C);
          }
        }
        // the next level's blocks join two halves: the left half decays by the right half's total after it, the
        // right half by the left half's total before it (both totals taken before either half changes)
        std::memcpy(left_total.data(), into.data() + int64_t(start + h - 1) * K, sizeof(T) * K);
        std::memcpy(right_total.data(), into.data() + int64_t(start + 2 * h - 1) * K, sizeof(T) * K);
        for (int j = start; j < start + h; ++j) scale_and_flush(after.data() + int64_t(j) * K, right_total.data(), K, cut);
        for (int i = start + h; i < start + 2 * h; ++i)
          scale_and_flush(into.data() + int64_t(i) * K, left_total.data(), K, cut);
      }
    }
    std::memcpy(from_start + z * CK, into.data(), sizeof(T) * CK);
    std::memcpy(to_end + z * CK, after.data(), sizeof(T) * CK);
  }
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
