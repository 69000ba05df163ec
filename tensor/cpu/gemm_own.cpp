// ordo's own CPU matrix product, used where no BLAS is built in (and always
// available through gemm_own for tests and benchmarks).
//
// The algorithm is Goto's (Goto & van de Geijn, "Anatomy of high-performance
// matrix multiplication", ACM TOMS 34(3), 2008), in the loop order BLIS uses:
//
//   for jc over n, step NC:                  a [KC x NC] panel of B, packed (shared, in L3)
//     for pc over k, step KC:
//       pack op(B)[pc.., jc..] into NR-wide micro-panels (the team splits the panels)
//       for ic over m, step MC:              threads take different ic blocks
//         pack op(A)[ic.., pc..] into MR-high micro-panels (private to the thread, in L2)
//         for jr over the NC columns, step NR:    one B micro-panel [KC x NR] stays in L1
//           for ir over the MC rows, step MR:
//             micro-kernel: an MR x NR block of C accumulated in registers over KC
//
// Packing turns every trans/ld/batch_stride combination into the same
// contiguous, zero-padded layout, so the micro-kernel is the only hot loop
// and has no edge cases; edges of C are handled when the block is stored.
//
// The micro-kernel uses GCC vector extensions, 256-bit, and 512-bit where the
// compiler targets AVX-512 (-march=native on such a CPU: twice the lanes per
// FMA) and cpu::vector_path() says so (ORDO_CPU): with AVX2+FMA each
// `acc += a * b` becomes one vfmadd231; without AVX the compiler splits each
// vector op in two SSE ops, and it stays correct everywhere.
//
// Each element of C is one chain of FMAs over k in order, p = 0, 1, ..., k-1:
// a later KC block starts from the sum the earlier ones left in C, and alpha
// and beta are applied once, at the end (alpha s, then beta c + that in one
// FMA). Nothing else enters the sum, so an element's bits do not depend on the
// vector width, the thread count, the m/n tiling, which thread computes it, or
// on zero products anywhere in k (rows of zeros added to a product over rows:
// fma(a, 0, s) = s). That is what lets threads take blocks (and whole matrices
// of a batch) first come, first served: a thread slowed down by another
// process on its core computes fewer blocks instead of holding the others up
// at the next barrier; and it is what the deterministic mode stands on
// (tensor/cpu/cpu_paths.h).
#include "tensor/cpu/gemm_own.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tensor/cpu/common.h"
#include "tensor/cpu/cpu_paths.h"

// The vector helpers below are file-local, so no call with a 256/512-bit vector
// argument crosses a library boundary; without AVX (ORDO_NATIVE=OFF) GCC
// would still warn that the ABI of such calls differs.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ordo::cpu {

namespace {

// Register tile: MR rows of C by NR = two vectors of columns, in vectors of W
// bytes (32, or 64 on the AVX-512 path). AVX2: 6 x 2 accumulators + 2 vectors of B +
// 1 broadcast of A = 15 of the 16 ymm registers, and 12 independent FMA
// chains cover the FMA latency (4 cycles x 2 FMA pipes on Zen 3 / Haswell =
// 8 chains needed). AVX-512: 12 x 2 + 2 + 1 = 27 of the 32 zmm registers, 24
// chains, each FMA twice the lanes.
//
// Cache blocks, chosen for the L1d 32 KiB / L2 512 KiB / shared L3 of the
// Zen 3 EPYC this project runs on (and the same shape of Intel cores):
//   KC: one B micro-panel, KC x NR, is 16 KiB in both precisions: half of L1,
//       leaving room for the A micro-panel streaming past it. AVX-512's
//       panels are twice as wide (32 KiB of a 48 KiB L1d on the Xeons that
//       have it); KC stays 256, where a shorter one measured no faster
//       (the sums do not depend on it).
//   MC: the packed A block, MC x KC, is ~3/8 of L2, so it stays there while
//       the B micro-panels stream from L3 (MC is a multiple of MR).
//   NC: the packed B panel, KC x NC, is 4 MiB (f32) / 8 MiB (f64) of L3.
template <class T, int W>
struct Blocking {
  typedef T V __attribute__((vector_size(W)));
  static constexpr int kLanes = W / sizeof(T);
  static constexpr int kMR = W == 64 ? 12 : 6;
  static constexpr int64_t kKC = 256;
  static constexpr int64_t kMC = sizeof(T) == 4 ? 192 : 96;
  static constexpr int64_t kNC = 4096;
};

// Below kSerialWork multiply-adds in the whole call, one thread is faster
// than waking a team (measured: two threads win from about 64^3 on). At or
// below kBatchWork per matrix, with at least one matrix per thread, threads
// take whole matrices instead of sharing each one: measured as fast to 40%
// faster up to 192^3 (3, 8 and 48 square matrices on the 2-core EPYC); past
// that, 3 matrices on 2 threads lost 10-15%.
constexpr double kSerialWork = 64.0 * 64 * 64;
constexpr double kBatchWork = 192.0 * 192 * 192;

template <class V, class T> V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T> void store(T* p, const V& v) { std::memcpy(p, &v, sizeof v); }
// Every lane set to x; written out so that GCC emits a single vbroadcast (a
// loop over the lanes becomes one masked broadcast per lane).
template <class V, int kLanes> struct Splat;
template <class V> struct Splat<V, 4> {
  template <class T> static V of(T x) { return V{x, x, x, x}; }
};
template <class V> struct Splat<V, 8> {
  template <class T> static V of(T x) { return V{x, x, x, x, x, x, x, x}; }
};
template <class V> struct Splat<V, 16> {
  template <class T> static V of(T x) { return V{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
};
template <class V, class T>
V splat(T x) {
  return Splat<V, sizeof(V) / sizeof(T)>::of(x);
}

// op(X) of one matrix: element (r, col) is at p[r * rs + col * cs].
template <class T>
struct View {
  const T* p;
  int64_t rs, cs;
};

template <class T>
View<T> view_of(const MatrixBatch& x, int64_t index) {
  const T* base = x.t.data<T>() + index * x.batch_stride;
  return x.trans ? View<T>{base, 1, x.ld} : View<T>{base, x.ld, 1};
}

// Packs one micro-panel: dst[p * W + i] = src[i * si + p * sp] for i < lanes,
// zero for lanes <= i < W, p < kc. Used for A (lanes = rows, steps along k)
// and for B (lanes = columns, steps along k).
template <int W, class T>
void pack_panel(T* dst, const T* src, int64_t si, int64_t sp, int64_t lanes, int64_t kc) {
  if (si == 1 && lanes == W) {  // each step is W contiguous values
    for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * W, src + p * sp, W * sizeof(T));
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const T* s = src + p * sp;
    T* d = dst + p * W;
    for (int64_t i = 0; i < lanes; ++i) d[i] = s[i * si];
    for (int64_t i = lanes; i < W; ++i) d[i] = T(0);
  }
}

// One KC block of an MR x NR block of C (rows x cols of it inside C): the
// sums go on from what the earlier blocks left in C (`first`: from 0), and the
// last block finishes them, C = alpha s (+ beta old, old from `addend`, which
// beta == 0 never reads). The sums pass through a full-size tile in every
// case, so every element is computed by the same instructions wherever it lies.
template <class T, int W>
void micro_kernel(int64_t kc, const T* a, const T* b, T* c, const T* addend, int64_t ldc, int64_t rows,
                  int64_t cols, T alpha, T beta, bool first, bool last) {
  using B = Blocking<T, W>;
  using V = typename B::V;
  constexpr int L = B::kLanes, NR = 2 * L, kMR = B::kMR;
  alignas(W) T tile[kMR * NR] = {};
  V acc[kMR][2];
  if (!first)
    for (int64_t i = 0; i < rows; ++i) std::memcpy(tile + i * NR, c + i * ldc, cols * sizeof(T));
  for (int i = 0; i < kMR; ++i) acc[i][0] = load<V>(tile + i * NR), acc[i][1] = load<V>(tile + i * NR + L);
  for (int64_t p = 0; p < kc; ++p) {
    V b0 = load<V>(b), b1 = load<V>(b + L);
    for (int i = 0; i < kMR; ++i) {
      V ai = splat<V>(a[i]);
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
    a += kMR;
    b += NR;
  }
  for (int i = 0; i < kMR; ++i) store(tile + i * NR, acc[i][0]), store(tile + i * NR + L, acc[i][1]);
  for (int64_t i = 0; i < rows; ++i) {
    const T* sums = tile + i * NR;
    T* out = c + i * ldc;
    if (!last) {
      std::memcpy(out, sums, cols * sizeof(T));
    } else if (beta == T(0)) {
      for (int64_t j = 0; j < cols; ++j) out[j] = alpha * sums[j];
    } else {
      const T* old = addend + i * ldc;
      for (int64_t j = 0; j < cols; ++j) out[j] = std::fma(beta, old[j], alpha * sums[j]);
    }
  }
}

// The threads working on one matrix together; size 1 for a thread alone.
// next hands out task numbers, each to one thread (shared by the team).
struct Team {
  int id = 0, size = 1;
  std::atomic<int64_t>* next = nullptr;  // unused when size is 1
};

void barrier(const Team& team) {
  if (team.size > 1) {
#pragma omp barrier
  }
}

// c [m, n] row-major = alpha op(a) op(b) + beta addend (addend: c's old
// values, or a copy of them where c holds partial sums first), run by every
// thread of `team`. bpack is shared by the team (KC x NC); apack is this
// thread's own (MC x KC).
template <class T, int W>
void gemm_blocked(const Team& team, T* c, const T* addend, View<T> a, View<T> b, int64_t m, int64_t n, int64_t k,
                  T alpha, T beta, T* bpack, T* apack) {
  using B = Blocking<T, W>;
  constexpr int NR = 2 * B::kLanes, kMR = B::kMR;
  // Row blocks of equal height (a multiple of MR, at most MC), as many as a
  // multiple of the team size so the threads get equal shares; when there
  // are fewer row blocks than threads (m small), the threads also split the
  // columns into groups.
  int64_t blocks = std::min(round_up(ceil_div(m, B::kMC), team.size), ceil_div(m, kMR));
  int64_t mc = round_up(ceil_div(m, blocks), kMR);
  blocks = ceil_div(m, mc);
  int64_t groups = std::max<int64_t>(1, team.size / blocks);
  int64_t tasks = blocks * groups;
  std::atomic<int64_t> alone{0};
  std::atomic<int64_t>& next = team.size > 1 ? *team.next : alone;

  for (int64_t jc = 0; jc < n; jc += B::kNC) {
    int64_t nc = std::min(B::kNC, n - jc);
    int64_t panels = ceil_div(nc, NR);
    for (int64_t pc = 0; pc < k; pc += B::kKC) {
      int64_t kc = std::min(B::kKC, k - pc);
      const bool first = pc == 0, last = pc + kc == k;
      if (team.id == 0) next.store(0, std::memory_order_relaxed);  // no one takes tasks before the barrier
      for (int64_t j = team.id; j < panels; j += team.size)
        pack_panel<NR>(bpack + j * kc * NR, b.p + pc * b.rs + (jc + j * NR) * b.cs, b.cs, b.rs,
                       std::min<int64_t>(NR, nc - j * NR), kc);
      barrier(team);
      for (int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) {
        int64_t ic = (task % blocks) * mc, rows = std::min(mc, m - ic);
        int64_t group = task / blocks;
        int64_t j0 = panels * group / groups, j1 = panels * (group + 1) / groups;
        for (int64_t ir = 0; ir < rows; ir += kMR)
          pack_panel<kMR>(apack + ir * kc, a.p + (ic + ir) * a.rs + pc * a.cs, a.rs, a.cs,
                          std::min<int64_t>(kMR, rows - ir), kc);
        for (int64_t j = j0; j < j1; ++j) {
          for (int64_t ir = 0; ir < rows; ir += kMR) {
            const int64_t at = (ic + ir) * n + jc + j * NR;
            micro_kernel<T, W>(kc, apack + ir * kc, bpack + j * kc * NR, c + at, addend + at, n,
                               std::min<int64_t>(kMR, rows - ir), std::min<int64_t>(NR, nc - j * NR), alpha, beta,
                               first, last);
          }
        }
      }
      barrier(team);  // bpack is repacked next
    }
  }
}

// This thread's number and its team's size inside a parallel region.
Team this_thread() {
#ifdef _OPENMP
  return Team{omp_get_thread_num(), omp_get_num_threads()};
#else
  return Team{};
#endif
}

template <class T, int W>
void gemm_typed(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch,
                int64_t m, int64_t n, int64_t k, T alpha, T beta) {
  using B = Blocking<T, W>;
  constexpr int NR = 2 * B::kLanes;
  T* cp = c.data<T>();
  int64_t mn = m * n;
  if (k == 0 || alpha == T(0)) {  // C = beta * C, as BLAS: A and B are not read
    parallel_for(batch * mn, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) cp[i] = beta == T(0) ? T(0) : beta * cp[i];
    });
    return;
  }

  double work = static_cast<double>(m) * n * k;
  int threads = work * batch < kSerialWork ? 1 : max_threads();
  bool by_matrix = threads > 1 && batch >= threads && work <= kBatchWork;
  int teams = by_matrix ? threads : 1;
  int64_t a_size = std::min(B::kKC, k) * std::min(B::kMC, round_up(m, B::kMR));
  int64_t b_size = std::min(B::kKC, k) * round_up(std::min(B::kNC, n), NR);
  Buffer<T> apacks(a_size * threads), bpacks(b_size * teams);  // allocated here: nothing throws inside the parallel region
  // Past one KC block C holds partial sums before the last block adds beta C:
  // C's old values are kept aside for it.
  const bool keep_old = beta != T(0) && k > B::kKC;
  Buffer<T> old(keep_old ? batch * mn : 0);
  if (keep_old) std::memcpy(old.get(), cp, static_cast<size_t>(batch * mn) * sizeof(T));
  const T* addend = keep_old ? old.get() : cp;

  auto run = [&](const Team& team, int64_t index, T* bpack, T* apack) {
    gemm_blocked<T, W>(team, cp + index * mn, addend + index * mn, view_of<T>(a, index), view_of<T>(b, index), m, n,
                       k, alpha, beta, bpack, apack);
  };
  if (threads == 1) {
    for (int64_t i = 0; i < batch; ++i) run(Team{}, i, bpacks.get(), apacks.get());
    return;
  }
  std::atomic<int64_t> next{0};  // the next matrix (by_matrix) or block (a team per matrix)
#pragma omp parallel num_threads(threads)
  {
    Team team = this_thread();  // the runtime may give fewer threads than asked for
    team.next = &next;
    T* apack = apacks.get() + team.id * a_size;
    if (by_matrix) {  // each thread alone on whole matrices
      for (int64_t i = next.fetch_add(1); i < batch; i = next.fetch_add(1))
        run(Team{}, i, bpacks.get() + team.id * b_size, apack);
    } else {
      for (int64_t i = 0; i < batch; ++i) run(team, i, bpacks.get(), apack);
    }
  }
}

}  // namespace

void gemm_own(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch,
              int64_t m, int64_t n, int64_t k, double alpha, double beta) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  dispatch_float(c.dtype(), "gemm", [&](auto tag) {
    using T = decltype(tag);
#if defined(__AVX512F__)
    if (vector_path() == VectorPath::avx512)
      return gemm_typed<T, 64>(c, a, b, batch, m, n, k, static_cast<T>(alpha), static_cast<T>(beta));
#endif
    gemm_typed<T, 32>(c, a, b, batch, m, n, k, static_cast<T>(alpha), static_cast<T>(beta));
  });
}

}  // namespace ordo::cpu
