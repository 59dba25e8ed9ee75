// lineage.ops.recurrence.chunk_memory's steps 2-5 as one compiled loop over the chunks of each head: the same steps
// in the same order, whose docstring has the maths. Why it exists: at the sizes the app and the benchmark run
// (chunks of 32 steps, K = V = 64), the eager form is a few dozen tensor operations per span of chunks plus a Python
// loop over the chunks, and a CPU spends most of its time starting them rather than multiplying; here every chunk's
// matrices stay in the first-level cache from step to step, and each product runs as register tiles of vectors.
//
// Built by lineage.ops.native (a C++ compiler, -O3, on first use) in one translation unit with anchored_products.cpp
// (the per-channel gate's products, step 2), whose vector helpers it shares. Portable C++17 with the GCC/Clang vector
// extension, no intrinsics and no -ffast-math: sums run in another order than the eager form's, so results agree to
// rounding, not bit for bit. Layout: row-major and contiguous, one head after another.

#include "anchored_products.cpp"

#include <cmath>
#include <type_traits>

namespace {

// row ← row − Σ_{j<i} b m[j] · rows[j] (rows [i, n], row j 0 after column j): with n at most four vectors, the sum
// is kept in registers, two partial sums for even and odd j (each row of the inverse depends on the rows before it)
template <typename T>
inline void subtract_rows(int n, int i, T b, const T* m, const T* rows, T* row) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  if (n % W != 0 || n > 4 * W) {
    for (int j = 0; j < i; ++j) {
      const T a = b * m[j];
      for (int c = 0; c <= j; ++c) row[c] -= a * rows[int64_t(j) * n + c];
    }
    return;
  }
  const int nv = n / W;
  vec even[4], odd[4];
  for (int c = 0; c < nv; ++c) even[c] = load(row + c * W), odd[c] = vec{};
  int j = 0;
  for (; j + 1 < i; j += 2) {
    const T a0 = b * m[j], a1 = b * m[j + 1];
    for (int c = 0; c < nv; ++c) {
      even[c] -= a0 * load(rows + int64_t(j) * n + c * W);
      odd[c] -= a1 * load(rows + int64_t(j + 1) * n + c * W);
    }
  }
  if (j < i)
    for (int c = 0; c < nv; ++c) even[c] -= (b * m[j]) * load(rows + int64_t(j) * n + c * W);
  for (int c = 0; c < nv; ++c) store(row + c * W, even[c] + odd[c]);
}

// The strong-gate knob's decay factors (recurrence.decay_factors) of n log-decays g ≤ 0: α = e^max(g, floor), then
// every α at most `cut` set to 0. floor (log ∛tiny − 1, recurrence._log_floor) keeps −∞ (a wipe) and the exponential's
// underflow out; e^x = 2^m e^r with m the integer nearest x / ln 2 and |r| ≤ ln 2 / 2, e^r by its Taylor polynomial
// (to r⁷ in float, r¹³ in double: the next term is under half a unit in the last place), 2^m built in the exponent
// bits (m ≥ −341 above the floor: a normal number in either type).
template <typename T>
void decay_factors(int64_t n, const T* g, T floor, T cut, T* alpha) {
  typedef typename Lanes<T>::vec vec;
  typedef typename std::conditional<sizeof(T) == 4, int32_t, int64_t>::type I;
  typedef I ivec __attribute__((vector_size(64)));
  constexpr int W = Lanes<T>::n, degree = sizeof(T) == 4 ? 7 : 13, mantissa = sizeof(T) == 4 ? 23 : 52;
  constexpr I bias = sizeof(T) == 4 ? 127 : 1023;
  const T log2e = T(1.4426950408889634), ln2_hi = T(0.693145751953125), ln2_lo = T(1.4286068203094172e-06);
  const T shifter = T(1.5) * T(int64_t(1) << mantissa);  // adding and subtracting it rounds to an integer
  T inverse_factorials[degree + 1];
  inverse_factorials[0] = 1;
  for (int d = 1; d <= degree; ++d) inverse_factorials[d] = inverse_factorials[d - 1] / T(d);
  int64_t x0 = 0;
  for (; x0 + W <= n; x0 += W) {
    vec x = load(g + x0);
    x = x < floor ? vec{} + floor : x;
    const vec m = (x * log2e + shifter) - shifter;
    const vec r = (x - m * ln2_hi) - m * ln2_lo;
    vec p = vec{} + inverse_factorials[degree];
    for (int d = degree - 1; d >= 0; --d) p = p * r + inverse_factorials[d];  // Horner: Σ r^d / d!
    ivec bits = (__builtin_convertvector(m, ivec) + bias) << mantissa;
    vec scale;
    std::memcpy(&scale, &bits, sizeof scale);
    const vec a = p * scale;
    store(alpha + x0, a > cut ? a : vec{});
  }
  for (; x0 < n; ++x0) {
    const T a = std::exp(g[x0] < floor ? floor : g[x0]);
    alpha[x0] = a > cut ? a : T(0);
  }
}

// The chunk's matrix products, small enough to stay in the first-level cache (C × K by K × C, C × C by C × V, …):
// register tiles of 4 rows by up to 4 vectors, each loaded vector of B serving 4 rows. On these shapes, 1 thread of
// a 2-core Intel Xeon (AVX-512, g++ 12): 108-128 GFLOP/s, where torch.bmm reaches about 100 batched.
enum class Into { set, add, subtract };  // C = A B, C += A B, C -= A B

// R rows by NV vectors of C, over the whole inner dimension: every loaded vector of B serves R rows
template <typename T, bool TA, Into MODE, int R, int NV>
inline void tile(int Kd, const T* A, int lda, const T* B, int ldb, T* C, int ldc) {
  typedef typename Lanes<T>::vec vec;
  constexpr int W = Lanes<T>::n;
  vec acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NV; ++c) acc[r][c] = MODE == Into::set ? vec{} : load(C + r * ldc + c * W);
  for (int p = 0; p < Kd; ++p) {
    vec b[NV];
    for (int c = 0; c < NV; ++c) b[c] = load(B + p * ldb + c * W);
    for (int r = 0; r < R; ++r) {
      const T a = TA ? A[p * lda + r] : A[r * lda + p];
      for (int c = 0; c < NV; ++c) {
        if (MODE == Into::subtract)
          acc[r][c] -= a * b[c];
        else
          acc[r][c] += a * b[c];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NV; ++c) store(C + r * ldc + c * W, acc[r][c]);
}

// the rows of one band of NV vectors: four at a time, then one at a time
template <typename T, bool TA, Into MODE, int NV>
inline void band(int M, int Kd, const T* A, int lda, const T* B, int ldb, T* C, int ldc) {
  int i = 0;
  for (; i + 4 <= M; i += 4) tile<T, TA, MODE, 4, NV>(Kd, TA ? A + i : A + i * lda, lda, B, ldb, C + i * ldc, ldc);
  for (; i < M; ++i) tile<T, TA, MODE, 1, NV>(Kd, TA ? A + i : A + i * lda, lda, B, ldb, C + i * ldc, ldc);
}

// C [M, N] (rows ldc apart) = / += / -= A B, with A [M, Kd] (rows lda apart) or, with TA, Aᵀ for A stored [Kd, M];
// B [Kd, N] (rows ldb apart). Columns in bands of 4, 2 and 1 vectors, then the last N mod W one by one.
template <typename T, bool TA, Into MODE>
void gemm(int M, int N, int Kd, const T* A, int lda, const T* B, int ldb, T* C, int ldc) {
  constexpr int W = Lanes<T>::n;
  int j = 0;
  for (; j + 4 * W <= N; j += 4 * W) band<T, TA, MODE, 4>(M, Kd, A, lda, B + j, ldb, C + j, ldc);
  for (; j + 2 * W <= N; j += 2 * W) band<T, TA, MODE, 2>(M, Kd, A, lda, B + j, ldb, C + j, ldc);
  for (; j + W <= N; j += W) band<T, TA, MODE, 1>(M, Kd, A, lda, B + j, ldb, C + j, ldc);
  for (; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      T s = 0;
      for (int p = 0; p < Kd; ++p) s += (TA ? A[p * lda + i] : A[i * lda + p]) * B[p * ldb + j];
      T& c = C[i * ldc + j];
      c = MODE == Into::set ? s : MODE == Into::add ? c + s : c - s;
    }
}

// Elementwise passes over a chunk (restrict: the arrays do not overlap, so the compiler vectorises without checks)
template <typename T>
inline void multiply(int64_t n, const T* __restrict a, const T* __restrict b, T* __restrict out) {  // a ⊙ b
  for (int64_t x = 0; x < n; ++x) out[x] = a[x] * b[x];
}

template <typename T>
inline void multiply_in_place(int64_t n, const T* __restrict f, T* __restrict x) {  // x ⊙= f
  for (int64_t y = 0; y < n; ++y) x[y] *= f[y];
}

template <typename T>
inline void multiply_rows(int rows, int n, const T* __restrict a, const T* __restrict f, T* __restrict out) {
  for (int i = 0; i < rows; ++i, a += n, out += n)  // row i of a times the number f[i]
    for (int x = 0; x < n; ++x) out[x] = a[x] * f[i];
}

template <typename T>
inline void scale_rows(int rows, int n, const T* __restrict f, T* __restrict x) {  // row i of x times f[i], in place
  for (int i = 0; i < rows; ++i, x += n)
    for (int y = 0; y < n; ++y) x[y] *= f[i];
}

// Heads [h0, h1) of one call. Per head: q, k [N·C, K]; v [N·C, V]; g the log-decays ≤ 0, [N·C] (gate 1: one per head
// and step) or [N·C, K] (gate 2: per channel) or null (gate 0: none), made decay factors with the strong-gate knob
// (floor and cut, see decay_factors); the write: beta [N·C] (the delta rule), or erase [N·C, K] and write [N·C, V]
// (Gated DeltaNet-2's gates: β moved inside, lineage.ops.gated_deltanet2), or all null (additive); S0 [K, V] or null
// (zeros). Writes o [N·C, V] and the final state S [K, V].
template <typename T>
void chunk_steps(const T* q, const T* k, const T* v, const T* g, const T* beta, const T* erase, const T* write,
                 const T* S0, int64_t h0, int64_t h1, int64_t N, int C, int K, int V, int gate, T scale, T floor, T cut,
                 T* o, T* S_out) {
  const bool delta = beta != nullptr || erase != nullptr, per_channel = gate == 2;
  const int64_t CK = int64_t(C) * K, CV = int64_t(C) * V, CC = int64_t(C) * C;
  Anchors<T> anchors(C, K);
  const int64_t PK = int64_t(anchors.P) * K;  // the per-channel decays keep the chunk's padding to a power of two
  std::vector<T> qs(CK), kt(CK), A_qk(CC), A_kk(CC), L(CC), D(PK), E(PK), q_dec(CK), k_dec(CK), k_start(CK);
  std::vector<T> T_ut(CC), U(CV), Wm(CK), d(C), e(C), chunk_decay(K);
  std::vector<T> erased(erase ? CK : 0), written(write ? CV : 0);
  for (int64_t h = h0; h < h1; ++h) {
    T* S = S_out + h * K * V;
    if (S0)
      std::memcpy(S, S0 + h * K * V, sizeof(T) * K * V);
    else
      std::fill(S, S + int64_t(K) * V, T(0));
    for (int64_t n = 0; n < N; ++n) {
      const int64_t t0 = h * N * C + n * C;  // this chunk's first step, counted over every head
      const T *qc = q + t0 * K, *kc = k + t0 * K, *vc = v + t0 * V;
      T* oc = o + t0 * V;
      for (int64_t x = 0; x < CK; ++x) qs[x] = scale * qc[x];  // the read scale goes on the queries
      // the key products' left rows: K (the delta rule), B ⊙ K (Gated DeltaNet-2, whose values are W ⊙ V)
      const T *rows = kc, *values = vc;
      if (erase) {
        multiply(CK, erase + t0 * K, kc, erased.data());
        multiply(CV, write + t0 * V, vc, written.data());
        rows = erased.data(), values = written.data();
      }

      // 2. the decays inside the chunk (every factor in [0, 1], restarted at the chunk) and the decayed products
      //    A_qk (i ≥ j) and A_kk (i > j), 0 above the diagonal
      if (per_channel) {  // the anchored levels, the decays from the start D and to the end E [C, K]
        decay_factors(CK, g + t0 * K, floor, cut, D.data());  // α, made the decays from the start in place
        anchors.levels(kc, qs.data(), delta ? rows : nullptr, cut, A_qk.data(), A_kk.data(), D.data(), E.data());
        for (int x = 0; x < K; ++x) chunk_decay[x] = D[int64_t(C - 1) * K + x];
      } else {
        // L[i, j] = Π_{j<s≤i} α_s row by row: row i is row i − 1 times α_i, then 1 on the diagonal (the segment
        // products of recurrence.segment_sum_products, as products of the factors, flushed below the cut)
        if (gate == 1) decay_factors(int64_t(C), g + t0, floor, cut, e.data());  // α, in e until e is made
        const T* a = gate == 1 ? e.data() : nullptr;
        for (int i = 0; i < C; ++i) {
          T* row = L.data() + int64_t(i) * C;
          const T ai = a ? a[i] : T(1);
          for (int j = 0; j < i; ++j) {
            const T x = L[int64_t(i - 1) * C + j] * ai;
            row[j] = x > cut ? x : T(0);
          }
          row[i] = T(1);
          std::fill(row + i + 1, row + C, T(0));
          const T from = (i ? d[i - 1] : T(1)) * ai;  // Π_{s≤i} α_s
          d[i] = from > cut ? from : T(0);
        }
        for (int j = 0; j < C; ++j) e[j] = L[int64_t(C - 1) * C + j];  // Π_{j<s≤C} α_s: L's last row
        for (int x = 0; x < K; ++x) chunk_decay[x] = d[C - 1];
        for (int i = 0; i < C; ++i)
          for (int x = 0; x < K; ++x) kt[int64_t(x) * C + i] = kc[int64_t(i) * K + x];  // Kᵀ [K, C]
        gemm<T, false, Into::set>(C, C, K, qs.data(), K, kt.data(), C, A_qk.data(), C);
        multiply_in_place(CC, L.data(), A_qk.data());
        if (delta) {
          gemm<T, false, Into::set>(C, C, K, rows, K, kt.data(), C, A_kk.data(), C);
          multiply_in_place(CC, L.data(), A_kk.data());
        }
      }
      // Q ⊙ e^G, K ⊙ e^{G_C − G} (one decay per step, d and e, where the gate is not per channel)
      if (per_channel) {
        multiply(CK, qs.data(), D.data(), q_dec.data());
        multiply(CK, kc, E.data(), k_dec.data());
      } else {
        multiply_rows(C, K, qs.data(), d.data(), q_dec.data());
        multiply_rows(C, K, kc, e.data(), k_dec.data());
      }

      // 3. delta rule: T_ut = (I + StrictTril(diag(β) A_kk))⁻¹ diag(β) by forward substitution, row by row (each
      //    entry of magnitude at most the cut set to 0, as recurrence.unit_lower_inverse does), U = T_ut V,
      //    W = T_ut (K ⊙ e^G); Gated DeltaNet-2: T_ut = (I + StrictTril(A_bk))⁻¹, U = T_ut (W ⊙ V),
      //    W = T_ut (B ⊙ K ⊙ e^G) (lineage.ops.gated_deltanet2.gated_ut_transform)
      const T* uc = vc;  // additive: u = V
      if (delta) {
        const T* bc = beta ? beta + t0 : nullptr;
        for (int i = 0; i < C; ++i) {  // row i of the inverse: e_i − Σ_{j<i} β_i A_kk[i, j] · row j
          T* row = T_ut.data() + int64_t(i) * C;
          std::fill(row, row + C, T(0));
          row[i] = T(1);
          subtract_rows(C, i, bc ? bc[i] : T(1), A_kk.data() + int64_t(i) * C, T_ut.data(), row);
          for (int c = 0; c < i; ++c) row[c] = (row[c] > cut || row[c] < -cut) ? row[c] : T(0);
        }
        if (bc)
          for (int i = 0; i < C; ++i)  // · diag(β)
            for (int j = 0; j <= i; ++j) T_ut[int64_t(i) * C + j] *= bc[j];
        if (per_channel)
          multiply(CK, rows, D.data(), k_start.data());
        else
          multiply_rows(C, K, rows, d.data(), k_start.data());
        gemm<T, false, Into::set>(C, V, C, T_ut.data(), C, values, V, U.data(), V);
        gemm<T, false, Into::set>(C, K, C, T_ut.data(), C, k_start.data(), K, Wm.data(), K);
        // 4a. the corrected values u = U − W S need the incoming state (in U's place: U is not read again)
        gemm<T, false, Into::subtract>(C, V, K, Wm.data(), K, S, V, U.data(), V);
        uc = U.data();
      }

      // 5. the outputs O = (Q ⊙ e^G) S + A_qk u, with the state that entered the chunk
      gemm<T, false, Into::set>(C, V, K, q_dec.data(), K, S, V, oc, V);
      gemm<T, false, Into::add>(C, V, C, A_qk.data(), C, uc, V, oc, V);

      // 4b. the hand-off: S ← e^{G_C} S + (K ⊙ e^{G_C − G})ᵀ u
      if (gate != 0) scale_rows(K, V, chunk_decay.data(), S);
      gemm<T, true, Into::add>(K, V, C, k_dec.data(), K, uc, V, S, V);
    }
  }
}

// heads [h0, h1) in `parts` parts, each run(start, end): on OpenMP's threads where the library is built with it (the
// threads torch runs its own work on, when both load the same libgomp), else one after another on this thread (the
// caller splits the heads over threads of its own: lineage.ops.native)
template <typename F>
void in_parts(int64_t h0, int64_t h1, int parts, F run) {
#ifdef _OPENMP
  if (parts > 1) {  // one part enters no OpenMP region at all
#pragma omp parallel for num_threads(parts) schedule(static)
    for (int p = 0; p < parts; ++p) run(h0 + (h1 - h0) * p / parts, h0 + (h1 - h0) * (p + 1) / parts);
    return;
  }
#endif
  (void)parts;
  run(h0, h1);
}

}  // namespace

extern "C" {
// 1 where the library runs its parts on OpenMP's threads (built with -fopenmp), else 0
int lineage_openmp() {
#ifdef _OPENMP
  return 1;
#else
  return 0;
#endif
}

void chunk_steps_f32(const float* q, const float* k, const float* v, const float* g, const float* beta,
                     const float* erase, const float* write, const float* S0, int64_t h0, int64_t h1, int64_t N, int C,
                     int K, int V, int gate, float scale, float floor, float cut, float* o, float* S, int parts) {
  in_parts(h0, h1, parts, [&](int64_t a, int64_t b) {
    chunk_steps<float>(q, k, v, g, beta, erase, write, S0, a, b, N, C, K, V, gate, scale, floor, cut, o, S);
  });
}
void chunk_steps_f64(const double* q, const double* k, const double* v, const double* g, const double* beta,
                     const double* erase, const double* write, const double* S0, int64_t h0, int64_t h1, int64_t N, int C,
                     int K, int V, int gate, double scale, double floor, double cut, double* o, double* S, int parts) {
  in_parts(h0, h1, parts, [&](int64_t a, int64_t b) {
    chunk_steps<double>(q, k, v, g, beta, erase, write, S0, a, b, N, C, K, V, gate, scale, floor, cut, o, S);
  });
}
void decay_factors_f32(const float* g, int64_t n, float floor, float cut, float* alpha) {
  decay_factors<float>(n, g, floor, cut, alpha);
}
void decay_factors_f64(const double* g, int64_t n, double floor, double cut, double* alpha) {
  decay_factors<double>(n, g, floor, cut, alpha);
}
}
