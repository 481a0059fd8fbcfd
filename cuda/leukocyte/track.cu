/* track.cu - one tracking step for all cells without host round trips
 * (seeds/000 section 5.3). Two paths, the same arithmetic:
 *  - one launch (track_kernel): block b tracks cells b, b+grid, ... with the
 *    cell's whole MGVF on that block (LT_CUDA_MGVF=block, or before Hopper);
 *  - three launches (default on sm_90+): window_kernel (steps 1-4 on a
 *    cluster of 4 blocks per cell, E to global memory), mgvf_cluster_kernel
 *    (each cell's MGVF on a cluster of 8 blocks, rows split, halo rows sent
 *    with st.async and counted on mbarriers), snake_kernel (steps 5-6).
 * Per cell, exactly lt_leuk_track_cell (track.c):
 *
 *  1. prediction p = centre + velocity;
 *  2. re-localisation: every (position within +-search of round(p), radius
 *     within one step of R) GICOV, 4 lanes per score and a warp's 8 scores
 *     neighbouring positions (gicov_lanes: lt_gicov_at's float sums in
 *     the order of its LT_GICOV_LANES partials), then per position the best
 *     radius and a block argmax (largest, strictly > 0, first in scan order
 *     on ties = the CPU loop), then the sub-pixel parabola through the best
 *     circle's four neighbours;
 *  3. window of (2*round(2R)+1) x (2*round(2R)+1) (lt_leuk_win_half_x/y;
 *     the reference's is 4R wide), clamped to the frame;
 *  4. E = |gradient| of the window, normalised (block min/max), then MGVF
 *     (mgvf.c) iterated to convergence with two F buffers: column two-colour
 *     over-relaxed sweeps by default (lt_mgvf_col; on Hopper every cell on
 *     the dense kernel), Jacobi with LT_MGVF_COL=0; the
 *     mean |change| every LT_MGVF_CHECK_EVERY-th iteration, summed so that
 *     all threads see the same bits and leave together. The Heaviside is
 *     the step (as mgvf.c), a select. Non-contracted float arithmetic in
 *     mgvf.c's order: bit-identical to the CPU;
 *  5. gradient of F normalised, ellipse evolution (evolve.c) on warp 0, one
 *     lane per snaxel, the sums over snaxels in the CPU's order;
 *  6. GICOV within one pixel of the new centre over all radii, status.
 *
 * Shared memory (one-block path and snake kernel): 3 windows of floats
 * = 3*(4R+1)^2*4 bytes, 95 KB for R = rmax + rstep = 22 (189 KB with the
 * reference's 8R + 1 wide windows, before 2026-11-24); the H100
 * grants 227 KB per block after cudaFuncSetAttribute. When a device grants
 * less, the one-block kernel runs with the windows in global memory (one
 * slice per resident block). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cuda_runtime.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "leuk_cuda.h"

#define NT LT_CU_TRACK_THREADS
#define NW (NT / 32)
#define NSX LT_LEUK_SNAXELS
/* block sizes of the split path's window and MGVF kernels */
#define WIN_THREADS 512
#define MGVF_THREADS 256     /* default; LT_CUDA_MGVF_THREADS=64..256 */
#ifndef MGVF_THREADS_MAX
#define MGVF_THREADS_MAX 256 /* launch bounds (256, 4): at most 64 registers, 4 blocks per SM */
#define MGVF_MIN_BLOCKS 4
#endif

/* Sum of the NW (= 32) warp partials: lane i of every warp loads partial i
 * and a butterfly of shuffles adds them; float addition is commutative, so
 * every lane of every warp ends with the same bits and all threads take the
 * same exit. */
static __device__ __forceinline__ double sum_partials(const double *v)
{
  double a = v[threadIdx.x & 31];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  return a;
}

/* One MGVF pixel from its 3x3 neighbourhood: mgvf.c's pixel() bit for bit
 * (no contraction; same sums in the same order). H is the step (mgvf.c
 * gives the bound against the regularised Heaviside): mgvf.c's
 * "D > 0 ? D : 0" is fmaxf(D, 0) and "-D > 0 ? D : 0" is fminf(D, 0), one
 * FMNMX each instead of a compare and a select. They differ only for
 * D = -0 or NaN, and neither occurs: E >= +0, and under round-to-nearest a
 * sum or difference is -0 only when an operand is -0, so by induction no F
 * and no D is -0. */
static __device__ __forceinline__ float mgvf_update(float c, float u, float d, float l, float r, float ur,
                                                    float dr, float ul, float dl, float e, float ml, float il)
{
  const float dU = u - c, dD = d - c, dL = l - c, dR = r - c;
  const float dUR = ur - c, dDR = dr - c, dUL = ul - c, dDL = dl - c;
  const float a = __fadd_rn(fminf(dU, 0.0f), fmaxf(dD, 0.0f));
  const float b = __fadd_rn(fminf(dL, 0.0f), fmaxf(dR, 0.0f));
  const float g = __fadd_rn(__fmul_rn(0.5f, dUR), fmaxf(dDR, 0.0f));
  const float k = __fadd_rn(fminf(dUL, 0.0f), __fmul_rn(0.5f, dDL));
  const float s = __fadd_rn(__fadd_rn(a, b), __fadd_rn(g, k));
  const float fp = __fadd_rn(c, __fmul_rn(ml, s));
  return __fsub_rn(fp, __fmul_rn(__fmul_rn(il, e), __fsub_rn(fp, e)));
}

/* The pixel at column j of row rc (rows ru/rd above/below, replicated
 * borders); *cp = its old value. */
static __device__ __forceinline__ float mgvf_pixel(const float *ru, const float *rc, const float *rd, int j,
                                                   int w, float e, float ml, float il, float *cp)
{
  const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
  *cp = rc[j];
  return mgvf_update(rc[j], ru[j], rd[j], rc[jl], rc[jr], ru[jr], rd[jr], ru[jl], rd[jl], e, ml, il);
}

/* The column two-colour SOR's change times omega (lt_mgvf_col's
 * c + omega * (fn - c), not contracted). */
static __device__ __forceinline__ float col_relax(float c, float fn, float om)
{
  return __fadd_rn(c, __fmul_rn(om, __fsub_rn(fn, c)));
}

/* One sweep of the column two-colour SOR MGVF (lt_mgvf_col) on the block,
 * row-major: pass k sets columns j % 2 = k of nxt, warp tasks = (row,
 * 32-column chunk of the pass's columns) dealt round robin; the columns
 * beside a pixel from cur in pass 0 and from nxt (the new even columns)
 * in pass 1, its own column (and a clamped one) from cur. Returns this
 * thread's |change| summed when check. */
static __device__ double col_sweep_block(const float *E, const float *cur, float *nxt, int w, int h, float ml,
                                         float il, float om, bool check)
{
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double acc = 0.0;
  for (int k = 0; k < 2; k++) {
    const int nc = k ? w / 2 : (w + 1) / 2, cw = (nc + 31) / 32;
    const float *side = k ? nxt : cur;
    for (int task = warp; task < h * cw; task += NW) {
      const int i = task / cw, q = (task - i * cw) * 32 + lane, j = 2 * q + k;
      if (q >= nc) continue;
      const int iu = (i > 0 ? i - 1 : 0) * w, ic = i * w, id = (i < h - 1 ? i + 1 : h - 1) * w;
      const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
      const float *sl = jl == j ? cur : side, *sr = jr == j ? cur : side;
      const float c = cur[ic + j];
      const float fs = col_relax(c,
                                 mgvf_update(c, cur[iu + j], cur[id + j], sl[ic + jl], sr[ic + jr], sr[iu + jr],
                                             sr[id + jr], sl[iu + jl], sl[id + jl], E[ic + j], ml, il),
                                 om);
      nxt[ic + j] = fs;
      if (check) acc += (double)fabsf(fs - c);
    }
    if (k == 0) __syncthreads();
  }
  return acc;
}

/* MGVF of E (w x h) with the block; F0 holds E on entry. Returns the number
 * of iterations; *res = the buffer with the result (F0 or F1). */
static __device__ int mgvf_block(const float *E, float *F0, float *F1, int w, int h, const lt_cu_params &P,
                                 double (*red)[NW], float **res)
{
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float ml = P.mgvf_ml, il = P.mgvf_il;
  const double n = (double)w * h;
  float *cur = F0, *nxt = F1;
  const int cw = (w + 31) / 32;
  int it = 0, par = 0;
  while (it < P.mgvf_max_iter) {
    /* convergence is tested every LT_MGVF_CHECK_EVERY-th iteration (and at
     * the cap), as mgvf.c: the reduction is skipped on the others */
    const bool check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == P.mgvf_max_iter;
    double acc = 0.0;
    /* warp tasks = (row, 32-column chunk), dealt round robin: balanced
     * across warps whatever the window's shape */
    if (P.mgvf_col > 0.0f) /* LT_MGVF_COL */
      acc = col_sweep_block(E, cur, nxt, w, h, ml, il, P.mgvf_col, check);
    else
      for (int task = warp; task < h * cw; task += NW) {
        const int i = task / cw, j = (task - i * cw) * 32 + lane;
        const float *rc = cur + (size_t)i * w;
        const float *ru = cur + (size_t)(i > 0 ? i - 1 : 0) * w;
        const float *rd = cur + (size_t)(i < h - 1 ? i + 1 : h - 1) * w;
        const float *re = E + (size_t)i * w;
        float *ro = nxt + (size_t)i * w;
        if (j < w) {
          float c;
          const float fn = mgvf_pixel(ru, rc, rd, j, w, re[j], ml, il, &c);
          ro[j] = fn;
          if (check) acc += (double)fabsf(fn - c);
        }
      }
    if (check) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) red[par][warp] = acc;
    }
    __syncthreads();
    double diff = check ? sum_partials(red[par]) : 0.0;
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    par ^= 1;
    if (check && diff / n <= P.mgvf_tol) break;
  }
  *res = cur;
  return it;
}

/* gradient (lt_gradient rules) of m at (i, j) */
static __device__ __forceinline__ void grad_at(const float *m, size_t pitch, int w, int h, int i, int j,
                                               float *gx, float *gy)
{
  const float *row = m + (size_t)i * pitch;
  if (w == 1) *gx = 0.0f;
  else if (j == 0) *gx = row[1] - row[0];
  else if (j == w - 1) *gx = row[w - 1] - row[w - 2];
  else *gx = __fmul_rn(row[j + 1] - row[j - 1], 0.5f);
  if (h == 1) {
    *gy = 0.0f;
  } else {
    const float *up = row - (i > 0 ? pitch : 0), *dn = row + (i < h - 1 ? pitch : 0);
    float scale = (i > 0 && i < h - 1) ? 0.5f : 1.0f;
    *gy = __fmul_rn(dn[j] - up[j], scale);
  }
}

/* Samples of F and of its normalised gradient for the evolution, from the
 * maps in shared memory. */
struct map_sampler {
  const float *F, *fx, *fy;
  int w, h;
  __device__ void operator()(double x, double y, double *vf, double *vfx, double *vfy) const
  {
    *vf = lt_interp(F, w, h, x, y);
    *vfx = lt_interp(fx, w, h, x, y);
    *vfy = lt_interp(fy, w, h, x, y);
  }
};

/* normalised gradient of F at pixel t (evolve.c's map, one pixel) */
static __device__ __forceinline__ void unit_grad(const float *F, int w, int h, int t, float *gx, float *gy)
{
  const int r = t / w, c = t - r * w;
  float a, b;
  grad_at(F, w, w, h, r, c, &a, &b);
  const float m = __fsqrt_rn(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b)));
  if (m > 0) {
    a = a / m;
    b = b / m;
  }
  *gx = a;
  *gy = b;
}

/* Sum over the warp's lanes, every lane gets the same bits (a shuffle
 * butterfly: five dependent additions instead of a serial loop). */
static __device__ __forceinline__ double warp_sum(double v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* lt_evolve on warp 0, one lane per snaxel, F and its gradient sampled by
 * `smp`. The sums over the snaxels (perimeter, mean F and gradient, the
 * change) are warp butterflies: the same terms as evolve.c's loops, added
 * in another order (the last bits may differ, like the contracted products
 * elsewhere in the snake; the tracks stay within TOL_TRACK_PX of the CPU,
 * tests/tolerances.h). */
template <class Smp>
static __device__ int evolve_warp(const Smp &smp, int w, int h, double *xc, double *yc, double *r, double R,
                                  double ey, const lt_cu_params &P)
{
  const double DELTA = 0.2, L_EDGE = 1.0, L_SIZE = 0.2, L_PATH = 0.05;
  const int j = threadIdx.x & 31;
  const bool on = j < NSX;
  const double ct = on ? P.ct[j] : 0.0, st = on ? P.st[j] : 0.0;
  double rj = on ? r[j] : 0.0;
  double x = *xc, y = *yc;
  int it;
  for (it = 0; it < P.evolve_max_iter; it++) {
    double sx = x + rj * ct, sy = y + rj * st;
    bool o = on && (sx < 0 || sx > w - 1 || sy < 0 || sy > h - 1);
    if (__any_sync(0xffffffffu, o)) break;
    int k = j + 1 < NSX ? j + 1 : 0;
    double sxk = __shfl_sync(0xffffffffu, sx, k), syk = __shfl_sync(0xffffffffu, sy, k);
    double hj = 0.0, vf = 0.0, vfx = 0.0, vfy = 0.0;
    if (on) {
      hj = hypot(sxk - sx, syk - sy);
      smp(sx, sy, &vf, &vfx, &vfy);
    }
    const double L = warp_sum(hj), sf = warp_sum(vf), sfx = warp_sum(vfx), sfy = warp_sum(vfy);
    if (!(L > 0)) break;
    double vfmean = sf / L, vfxmean = sfx / L, vfymean = sfy / L;
    double nx = x + DELTA * L_EDGE * vfxmean;
    double ny = (y + DELTA * L_EDGE * vfymean + DELTA * L_PATH * ey) / (1 + DELTA * L_PATH);
    double nr = 0, dj = 0;
    if (on) {
      double vfr = (vf + vfx * (sx - x) + vfy * (sy - y) - vfmean) / L;
      nr = (rj + DELTA * L_EDGE * vfr + DELTA * L_SIZE * R) / (1 + DELTA * L_SIZE);
      dj = fabs(nr - rj);
    }
    const double diff = fabs(nx - x) + fabs(ny - y) + warp_sum(dj);
    if (on) rj = nr;
    x = nx;
    y = ny;
    if (diff <= P.evolve_tol) {
      it++;
      break;
    }
  }
  if (on) r[j] = rj;
  *xc = x;
  *yc = y;
  return it;
}

/* Step 5 with the block: the normalised gradient of F (w x h, shared
 * memory) into fx, fy, then the evolution on warp 0 from (qx, qy) in frame
 * coordinates, the window at (u1, v1); the new centre to *nx, *ny (shared),
 * the iteration count to C.evolve_iter. */
static __device__ void evolve_cell(const float *F, float *fx, float *fy, int w, int h, double qx, double qy,
                                   int u1, int v1, lt_leuk_cell &C, const lt_cu_params &P,
                                   double *nx, double *ny)
{
  for (int t = threadIdx.x; t < w * h; t += blockDim.x) unit_grad(F, w, h, t, &fx[t], &fy[t]);
  __syncthreads();
  if (threadIdx.x < 32) {
    double xc = qx - u1, yc = qy - v1;
    const map_sampler smp = {F, fx, fy, w, h};
    int eit = evolve_warp(smp, w, h, &xc, &yc, C.r, C.R, qy - v1, P);
    if (threadIdx.x == 0) {
      *nx = xc + u1;
      *ny = yc + v1;
      C.evolve_iter = eit;
    }
  }
  __syncthreads();
}

/* --appearance: cell C's template slot in the context's pool, NULL without
 * one (no cue: GICOV alone, no refresh). */
static __device__ __forceinline__ float *cell_tpl(const lt_cu_params &P, const lt_leuk_cell &C)
{
  return P.tpl && P.appearance > 0 && C.tpl >= 0 ? P.tpl + (size_t)C.tpl * LT_LEUK_TPL_N : NULL;
}

/* (value, index) argmax: larger value wins, ties go to the smaller index. */
static __device__ __forceinline__ void better(double &v, int &p, double v2, int p2)
{
  if (v2 > v || (v2 == v && p2 < p)) {
    v = v2;
    p = p2;
  }
}

/* lt_gicov_at by G lanes (G = 4 or 16) of a warp. gicov.c sums the
 * samples' d = fma(gx, cos, fma(gy, sin, -k)) (k: sample 0's g, the
 * shift; sample 0's own d = 0 not added) in float into LT_GICOV_LANES = 16
 * interleaved partials (sample n into n % 16), sum += d, sq = fma(d, d,
 * sq), and adds them by halves: partial i += partial i + 8, then i + 4,
 * i + 2, i + 1. Here a warp scores 32 / G tasks on lanes & (32/G - 1); the
 * lane of group g = lane / (32/G) keeps partials g*PL .. g*PL + PL-1
 * (PL = 16 / G), so a level pairs two lanes (a shuffle) while the pair
 * spans groups and adds locally once it lies within one lane: every lane
 * ends with the CPU's bits (addition is commutative). Then the mean and
 * variance in double as gicov.c's gicov_stats. G = 4 puts 8 tasks on
 * a warp: when they are neighbouring positions with the same radius each
 * load touches 4 runs of 8 consecutive pixels instead of 32 scattered
 * ones; G = 16 puts more lanes on each score when tasks are few. A sample
 * reads the current frame's float gradient P.gradf (made with the frame:
 * the same central differences, one 8-byte load instead of four) and
 * (cos, sin) in float, one 8-byte load. All 32 lanes must call it;
 * `valid` = false lanes contribute nothing and get 0. */
template <int G>
static __device__ double gicov_lanes(int x, int y, const lt_cu_params &P, int k, bool valid)
{
  static_assert(LT_GICOV_LANES == 16 && (G == 4 || G == 16), "gicov_lanes deals out gicov.c's 16 partials");
  constexpr int PL = 16 / G, TPW = 32 / G;
  const int w = P.fw, h = P.fh, g = (int)(threadIdx.x & 31) / TPW;
  const int rad = P.radius[k] + 1;
  const bool in = valid && !(x - rad < 0 || y - rad < 0 || x + rad >= w || y + rad >= h);
  const int N = P.npoints;
  float ps[PL], pq[PL], K = 0.0f;
#pragma unroll
  for (int j = 0; j < PL; j++) ps[j] = pq[j] = 0.0f;
  if (in) {
    /* a sample's address: a 32-bit add to the pixel's index and one wide
     * multiply-add (not 64-bit pointer arithmetic); cos and sin in one load */
    const int *off = P.off + k * N;
    const int pix = y * w + x; /* in the frame's gradient, made with the frame */
    const float2 g0 = __ldg(P.gradf + (pix + __ldg(off))), c0 = __ldg(P.cs);
    K = __fmaf_rn(g0.x, c0.x, __fmul_rn(g0.y, c0.y)); /* the shift, every lane of the group */
#pragma unroll(8 / PL)
    for (int m = PL * g; m < N; m += 16) {
#pragma unroll
      for (int j = 0; j < PL; j++) {
        const int n = m + j;
        if (n < N && n != 0) {
          const float2 gv = __ldg(P.gradf + (pix + __ldg(off + n))), cs = __ldg(P.cs + n);
          const float d = __fmaf_rn(gv.x, cs.x, __fmaf_rn(gv.y, cs.y, -K));
          ps[j] = __fadd_rn(ps[j], d);
          pq[j] = __fmaf_rn(d, d, pq[j]);
        }
      }
    }
  }
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) {
    if (o >= PL) { /* partners in another lane */
#pragma unroll
      for (int j = 0; j < PL; j++) {
        ps[j] = __fadd_rn(ps[j], __shfl_xor_sync(0xffffffffu, ps[j], (o / PL) * TPW));
        pq[j] = __fadd_rn(pq[j], __shfl_xor_sync(0xffffffffu, pq[j], (o / PL) * TPW));
      }
    } else {
#pragma unroll
      for (int j = 0; j < o; j++) {
        ps[j] = __fadd_rn(ps[j], ps[j + o]);
        pq[j] = __fadd_rn(pq[j], pq[j + o]);
      }
    }
  }
  if (!in) return 0.0;
  double mean, var;
  lt_cu_gicov_stats(K, ps[0], pq[0], N, &mean, &var);
  if (!(var > 0.0)) return 0.0;
  return mean / sqrt(var);
}

/* GICOV tasks 0..T-1 of the (calling) threads first..first+nthr-1 of the
 * block, 32 / G tasks per warp (gicov_lanes<G>): where(t, &x, &y, &k) says
 * what task t is, put(t, value) takes its result (called by one lane).
 * Every thread of the range must call it; nthr a multiple of 32. */
template <int G, class Where, class Put>
static __device__ void gicov_tasks(const lt_cu_params &P, int T, int first, int nthr, Where where, Put put)
{
  constexpr int TPW = 32 / G;
  const int me = (int)threadIdx.x - first, per = TPW * (nthr >> 5);
  const int mine = (me >> 5) * TPW + (me & (TPW - 1));
  for (int base = 0; base < T; base += per) {
    const int t = base + mine;
    int x = 0, y = 0, k = 0;
    const bool valid = t < T;
    if (valid) where(t, &x, &y, &k);
    const double g = gicov_lanes<G>(x, y, P, k, valid);
    if (valid && (me & 31) < TPW) put(t, g);
  }
}

/* The radii within one step of R (all when R <= 0), as a mask. */
static __device__ __forceinline__ unsigned radius_mask(const lt_cu_params &P, double R)
{
  unsigned m = 0;
  for (int k = 0; k < P.nradii; k++)
    if (!(R > 0 && fabs(P.radius[k] - R) > P.rstep + 1e-9)) m |= 1u << k;
  return m;
}
/* index of the kk-th set bit of m */
static __device__ __forceinline__ int nth_bit(unsigned m, int kk)
{
  for (int q = 0; q < kk; q++) m &= m - 1;
  return __ffs(m) - 1;
}

/* Re-localisation search grid of a cell: task t = pos * K + kk, position
 * pos = (dy + search) * S + (dx + search) around (ix, iy), radius kk-th of
 * kmask. */
struct grid_task {
  int ix, iy, S, search, K;
  unsigned kmask;
  /* task t = kk * S * S + pos (radius-major: a warp's 8 tasks are
   * neighbouring positions with the same radius); its score goes to
   * slot(t) = pos * K + kk of the grid */
  __device__ void operator()(int t, int *x, int *y, int *k) const
  {
    const int kk = t / (S * S), pos = t - kk * S * S;
    *k = nth_bit(kmask, kk);
    *y = iy + pos / S - search;
    *x = ix + pos % S - search;
  }
  __device__ int slot(int t) const
  {
    const int kk = t / (S * S);
    return (t - kk * S * S) * K + kk;
  }
};

typedef struct reloc_smem {
  double redv[NW];
  int redp[NW];
  double sub[4];
  int cnt[NW];          /* --appearance: candidates per warp of a chunk */
  short cand[NT];       /* ... the chunk's candidates (position - chunk start) */
} reloc_smem;

/* lt_leuk_ncc by a group of G lanes (G = 2, 4 or 8, aligned in the warp):
 * lane j of the group makes the row classes j, j + G, ...; a pair of class
 * sums is added across the group by a shuffle where its halves lie in two
 * lanes, in the lane where they lie in one: the same additions of the same
 * sums as lt_leuk_ncc (one thread, the CPU), so the same bits. The pairs
 * are added as soon as both halves exist (a depth-first walk of the tree),
 * so at most three sets of sums are live. Every lane of the warp calls it
 * (the shuffles); a lane of an idle group passes act = false (its value is
 * then meaningless). */
struct ncc_args {
  const float *tpl, *img;
  int fw, fh, bx, by, r;
  bool act;
};
/* the sums of this lane's slots LO..LO+N-1 (classes j + G*k), N a power of 2 */
template <int G, int LO, int N>
static __device__ __forceinline__ lt_leuk_ncc_sums ncc_tree(const ncc_args &A, int *m)
{
  lt_leuk_ncc_sums s{0, 0, 0, 0, 0};
  if constexpr (N == 1) {
    if (A.act) *m += lt_leuk_ncc_class(A.tpl, A.img, A.fw, A.fh, A.bx, A.by, A.r, (int)(threadIdx.x & (G - 1)) + G * LO, &s);
    /* the pairs within the group: classes (G*LO .. G*LO + G-1) */
#pragma unroll
    for (int d = 1; d < G; d *= 2) {
      lt_leuk_ncc_sums o;
      o.a = __shfl_xor_sync(0xffffffffu, s.a, d);
      o.b = __shfl_xor_sync(0xffffffffu, s.b, d);
      o.aa = __shfl_xor_sync(0xffffffffu, s.aa, d);
      o.bb = __shfl_xor_sync(0xffffffffu, s.bb, d);
      o.ab = __shfl_xor_sync(0xffffffffu, s.ab, d);
      lt_leuk_ncc_add(&s, &o);
    }
  } else {
    s = ncc_tree<G, LO, N / 2>(A, m);
    const lt_leuk_ncc_sums t = ncc_tree<G, LO + N / 2, N / 2>(A, m);
    lt_leuk_ncc_add(&s, &t);
  }
  return s;
}
template <int G>
static __device__ double ncc_group(const ncc_args &A)
{
  int m = 0;
  const lt_leuk_ncc_sums s = ncc_tree<G, 0, LT_LEUK_NCC_CLASSES / G>(A, &m);
#pragma unroll
  for (int d = 1; d < G; d *= 2) m += __shfl_xor_sync(0xffffffffu, m, d);
  return lt_leuk_ncc_fin(&s, m);
}

/* Steps 2b of track.c with the whole block: from the grid scores gs (of
 * grid_task G), the best position (largest, strictly > 0, first in scan
 * order on ties) and the sub-pixel parabola through the best circle's four
 * neighbours (their scores from the grid where they lie in it: the same
 * function of the same arguments). Returns the new (qx, qy) (from px, py). */
static __device__ void relocate(const float *__restrict__ frame, const lt_cu_params &P, const double *gs,
                                const grid_task &G, int sign, double R, const float *tpl, double px, double py,
                                double *qxo, double *qyo, reloc_smem &RS)
{
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = (int)blockDim.x >> 5;
  const int S = G.S, NPOS = S * S, K = G.K, tr = lt_leuk_tpl_r(R);
  const double gam = tpl ? P.appearance : 0.0;
  /* the largest score among positions of b > 0, first in scan order on
   * ties: b alone, or b + gam * the template's correlation there (track.c;
   * lt_leuk_ncc, the same sums in the same order) */
  auto b_at = [&](int pos) {
    double b = -INFINITY;
    for (int kk = 0; kk < K; kk++) {
      double g = gs[pos * K + kk];
      if (sign * g > b) b = sign * g;
    }
    return b;
  };
  /* With the cue, a position under lt_leuk_ncc_cut cannot win, so its
   * correlation is not made (track.c skips the same ones). */
  double cut = -INFINITY;
  if (gam > 0) {
    double m = -INFINITY;
    for (int pos = tid; pos < NPOS; pos += blockDim.x) m = fmax(m, b_at(pos));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) RS.redv[warp] = m;
    __syncthreads();
    for (int q = 0; q < nw; q++) m = fmax(m, RS.redv[q]);
    __syncthreads(); /* read before the argmax below writes redv */
    cut = lt_leuk_ncc_cut(m, gam);
  }
  double bv = -INFINITY;
  int bp = 0x7fffffff;
  if (gam > 0) {
    /* the positions that may win, chunk by chunk of blockDim.x, listed
     * (ballot and per-warp offsets), then correlated by groups of 8, 4 or 2
     * lanes (as many lanes each as the block has for them): ~100 of a
     * 17 x 17 grid pass the cut on the bench clips, and one thread's whole
     * correlation (~317 pixels for R = 10) held the block before */
    const int nt = (int)blockDim.x;
    for (int base = 0; base < NPOS; base += nt) {
      const int pos = base + tid;
      bool c = false;
      if (K > 0 && pos < NPOS) {
        const double b = b_at(pos);
        c = b > 0.0 && b >= cut;
      }
      const unsigned bal = __ballot_sync(0xffffffffu, c);
      if (lane == 0) RS.cnt[warp] = __popc(bal);
      __syncthreads();
      int off = 0, tot = 0;
      for (int q = 0; q < nw; q++) {
        off += q < warp ? RS.cnt[q] : 0;
        tot += RS.cnt[q];
      }
      if (c) RS.cand[off + __popc(bal & ((1u << lane) - 1u))] = (short)tid;
      __syncthreads();
      auto run = [&](auto gtag) {
        constexpr int GL = decltype(gtag)::value;
        const int per = nt / GL;
        for (int it = 0; it < tot; it += per) {
          const int item = it + tid / GL;
          const bool act = item < tot;
          const int p = base + (act ? RS.cand[item] : 0);
          const double ncc =
              ncc_group<GL>(ncc_args{tpl, frame, P.fw, P.fh, G.ix + (p % S - G.search), G.iy + (p / S - G.search), tr, act});
          if (act && (tid & (GL - 1)) == 0) better(bv, bp, __dadd_rn(b_at(p), __dmul_rn(gam, ncc)), p);
        }
      };
      const int gl = P.ncc_lanes ? P.ncc_lanes : tot * 8 <= nt ? 8 : tot * 4 <= nt ? 4 : 2;
      if (gl == 8) run(std::integral_constant<int, 8>());
      else if (gl == 4) run(std::integral_constant<int, 4>());
      else run(std::integral_constant<int, 2>());
      __syncthreads(); /* cnt and cand are the next chunk's */
    }
  } else {
    for (int pos = tid; pos < NPOS; pos += blockDim.x) {
      const double b = b_at(pos);
      /* best_gicov returns b*sign; the caller compares sign*(b*sign) = b */
      if (K > 0 && b > 0.0) better(bv, bp, b, pos);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    double v2 = __shfl_xor_sync(0xffffffffu, bv, o);
    int p2 = __shfl_xor_sync(0xffffffffu, bp, o);
    better(bv, bp, v2, p2);
  }
  if (lane == 0) {
    RS.redv[warp] = bv;
    RS.redp[warp] = bp;
  }
  __syncthreads();
  bv = -INFINITY;
  bp = 0x7fffffff;
  for (int q = 0; q < nw; q++) better(bv, bp, RS.redv[q], RS.redp[q]);
  double qx = px, qy = py;
  if (bp != 0x7fffffff) {
    qx = G.ix + (bp % S - G.search);
    qy = G.iy + (bp / S - G.search);
    double b = -INFINITY;
    int kb = 0;
    for (int kk = 0; kk < K; kk++) {
      double g = gs[bp * K + kk];
      if (sign * g > b) {
        b = sign * g;
        kb = kk;
      }
    }
    const int kq = nth_bit(G.kmask, kb), x0 = (int)qx, y0 = (int)qy, bx = bp % S, by = bp / S;
    /* the four neighbours (left, right, up, down) */
    auto ndx = [](int t) { return t == 0 ? -1 : t == 1 ? 1 : 0; };
    auto ndy = [](int t) { return t == 2 ? -1 : t == 3 ? 1 : 0; };
    auto nbr = [&](int t, int *x, int *y, int *k) {
      *x = x0 + ndx(t);
      *y = y0 + ndy(t);
      *k = kq;
    };
    auto in_grid = [&](int t) {
      const int gx = bx + ndx(t), gy = by + ndy(t);
      return gx >= 0 && gx < S && gy >= 0 && gy < S;
    };
    if (tid < 4 && in_grid(tid)) RS.sub[tid] = sign * gs[((by + ndy(tid)) * S + bx + ndx(tid)) * K + kb];
    if (!(bx > 0 && bx < S - 1 && by > 0 && by < S - 1) && tid < 64) /* some lie outside the grid */
      gicov_tasks<16>(P, 4, 0, 64, nbr, [&](int t, double g) {
        if (!in_grid(t)) RS.sub[t] = sign * g;
      });
    __syncthreads();
    /* the parabola through the best circle's scores (b, not the cue's) */
    const double sl = RS.sub[0], sr = RS.sub[1], su = RS.sub[2], sd = RS.sub[3];
    const double cxv = sl - 2 * b + sr, cyv = su - 2 * b + sd;
    if (cxv < 0) qx += fmax(-0.5, fmin(0.5, 0.5 * (sl - sr) / cxv));
    if (cyv < 0) qy += fmax(-0.5, fmin(0.5, 0.5 * (su - sd) / cyv));
  }
  *qxo = qx;
  *qyo = qy;
}
/* Step 3: the window of (2*round(2R)+1) x (2*round(2R)+1) around (qx, qy),
 * clamped to the frame. */
static __device__ __forceinline__ void window_of(const lt_cu_params &P, double R, double qx, double qy, int *u1,
                                                 int *v1, int *w, int *h)
{
  const int hx = lt_leuk_win_half_x(R), hy = lt_leuk_win_half_y(R);
  int a1 = (int)floor(qx) - hx, a2 = (int)floor(qx) + hx;
  int b1 = (int)floor(qy) - hy, b2 = (int)floor(qy) + hy;
  if (a1 < 0) a1 = 0;
  if (b1 < 0) b1 = 0;
  if (a2 > P.fw - 1) a2 = P.fw - 1;
  if (b2 > P.fh - 1) b2 = P.fh - 1;
  *u1 = a1;
  *v1 = b1;
  *w = a2 - a1 + 1;
  *h = b2 - b1 + 1;
}

/* Step 4 with the block: E = |gradient| of the frame's window, normalised
 * (block min/max), into E (and E2 when not NULL). */
static __device__ void edge_map(const float *__restrict__ frame, const lt_cu_params &P, int u1, int v1, int w,
                                int h, float *E, float *E2, float *redmin, float *redmax)
{
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = (int)blockDim.x >> 5;
  float lo = INFINITY, hi = -INFINITY;
  for (int t = tid; t < w * h; t += blockDim.x) {
    const int i = t / w, j = t - i * w;
    float gxv, gyv;
    grad_at(frame + (size_t)v1 * P.fw + u1, P.fw, w, h, i, j, &gxv, &gyv);
    const float e = __fsqrt_rn(__fadd_rn(__fmul_rn(gxv, gxv), __fmul_rn(gyv, gyv)));
    E[t] = e;
    lo = fminf(lo, e);
    hi = fmaxf(hi, e);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  if (lane == 0) {
    redmin[warp] = lo;
    redmax[warp] = hi;
  }
  __syncthreads();
  lo = redmin[0];
  hi = redmax[0];
  for (int q = 1; q < nw; q++) {
    lo = fminf(lo, redmin[q]);
    hi = fmaxf(hi, redmax[q]);
  }
  const double scale = 1.0 / ((double)hi - lo + 0x1p-52);
  for (int t = tid; t < w * h; t += blockDim.x) { /* each thread rereads what it wrote */
    const float e = (float)((double)(E[t] - lo) * scale);
    E[t] = e;
    if (E2) E2[t] = e;
  }
  __syncthreads();
}

/* Step 6 with the block: GICOV within one pixel of the new centre (nxc, nyc)
 * over all radii (9 * nradii tasks into gs), then the cell's new state and
 * status (track.c), written to *out. */
static __device__ void finish_cell(const float *__restrict__ frame, const lt_cu_params &P, lt_leuk_cell &C,
                                   double nxc, double nyc, double *gs, lt_leuk_cell *out)
{
  const int tid = threadIdx.x, nt = (int)blockDim.x, nr = P.nradii;
  const int cx = (int)lround(nxc), cy = (int)lround(nyc);
  gicov_tasks<16>(P, 9 * nr, 0, nt,
      [&](int t, int *x, int *y, int *k) { /* t = k * 9 + pos (radius-major) */
        *k = t / 9;
        const int pos = t - *k * 9;
        *x = cx + pos % 3 - 1;
        *y = cy + pos / 3 - 1;
      },
      [&](int t, double g) { gs[(t % 9) * nr + t / 9] = g; });
  __syncthreads();
  if (tid == 0) {
    const int sign = C.sign;
    const double R = C.R;
    double bg = 0;
    for (int pos = 0; pos < 9; pos++) {
      double b = -INFINITY;
      for (int k = 0; k < nr; k++) {
        double g = gs[pos * nr + k];
        if (sign * g > b) b = sign * g;
      }
      double g = b == -INFINITY ? 0.0 : b * sign;
      if (sign * g > sign * bg) bg = g;
    }
    C.vx = nxc - C.xc;
    C.vy = nyc - C.yc;
    C.xc = nxc;
    C.yc = nyc;
    C.gicov = (float)bg;
    /* LEFT: the circle of radius R no longer fits in the ROI; LOST next
     * to the border is the cell leaving (track.c) */
    const lt_rect roi = P.roi;
    double edge = fmin(fmin(C.xc - roi.x, roi.x + roi.w - 1 - C.xc), fmin(C.yc - roi.y, roi.y + roi.h - 1 - C.yc));
    if (edge < R)
      C.status = LT_CELL_LEFT;
    else if (sign * C.gicov < P.lost_score)
      C.status = edge < R + P.rstep_param + 1 ? LT_CELL_LEFT : LT_CELL_LOST;
    else
      C.status = LT_CELL_ACTIVE;
  }
  __syncthreads();
  /* --appearance: a cell that scores >= the threshold takes its template
   * anew from this frame (track.c) */
  float *tpl = cell_tpl(P, C);
  if (tpl && C.sign * C.gicov >= P.tpl_thr) {
    const int tx = (int)lround(C.xc), ty = (int)lround(C.yc);
    for (int i = tid; i < LT_LEUK_TPL_N; i += nt) tpl[i] = lt_leuk_tpl_px(frame, P.fw, P.fh, tx, ty, i);
  }
  if (tid == 0) *out = C;
}

/* The grid of a cell predicted at (px, py) with radius R. */
static __device__ __forceinline__ grid_task grid_of(const lt_cu_params &P, double R, double px, double py)
{
  grid_task G;
  G.ix = (int)lround(px);
  G.iy = (int)lround(py);
  G.search = P.search;
  G.S = 2 * P.search + 1;
  G.kmask = radius_mask(P, R);
  G.K = __popc(G.kmask);
  return G;
}

/* The one-block path: block b tracks cells b, b+grid, ... entirely (all
 * steps, the whole MGVF on this block). SH: windows in shared memory, else
 * in gwork (one slice per block). */
template <bool SH>
__global__ void __launch_bounds__(NT, 1) track_kernel(const float *__restrict__ frame, lt_cu_params P,
                                                      lt_leuk_cell *cells, int n, float *gwork,
                                                      size_t work_floats, int win_max, int *err)
{
  extern __shared__ __align__(16) float dsm[];
  __shared__ lt_leuk_cell C;
  __shared__ double red[2][NW];
  __shared__ reloc_smem RS;
  __shared__ float redmin[NW], redmax[NW];
  __shared__ double s_xc, s_yc;
  float *buf = SH ? dsm : gwork + (size_t)blockIdx.x * work_floats;
  double *gs = (double *)buf;
  const int tid = threadIdx.x;

  for (int ci = blockIdx.x; ci < n; ci += gridDim.x) {
    __syncthreads();
    if (tid == 0) C = cells[ci];
    __syncthreads();
    const double R = C.R, px = C.xc + C.vx, py = C.yc + C.vy;
    /* 2. re-localisation */
    const grid_task G = grid_of(P, R, px, py);
    gicov_tasks<4>(P, G.S * G.S * G.K, 0, NT, G, [&](int t, double g) { gs[G.slot(t)] = g; });
    __syncthreads();
    double qx, qy;
    relocate(frame, P, gs, G, C.sign, R, cell_tpl(P, C), px, py, &qx, &qy, RS);
    /* 3. window */
    int u1, v1, w, h;
    window_of(P, R, qx, qy, &u1, &v1, &w, &h);
    if (w < 3 || h < 3 || (long)w * h > win_max) {
      if (tid == 0) {
        if (w < 3 || h < 3) C.status = LT_CELL_LEFT;
        else atomicExch(err, 1);
        cells[ci] = C;
      }
      continue;
    }
    const int nwin = w * h;
    float *E = buf, *F0 = buf + nwin, *F1 = buf + 2 * nwin;
    __syncthreads(); /* gs (aliasing buf) fully read */
    /* 4. E, MGVF */
    edge_map(frame, P, u1, v1, w, h, E, F0, redmin, redmax);
    float *F;
    const int mit = mgvf_block(E, F0, F1, w, h, P, red, &F);
    float *fx = buf, *fy = (F == buf + nwin) ? buf + 2 * nwin : buf + nwin;
    __syncthreads();
    /* 5. normalised gradient of F, evolution */
    if (tid == 0) C.mgvf_iter = mit;
    evolve_cell(F, fx, fy, w, h, qx, qy, u1, v1, C, P, &s_xc, &s_yc);
    /* 6. */
    finish_cell(frame, P, C, s_xc, s_yc, gs, &cells[ci]);
  }
}

/* Split path, kernel 1 of 3 (steps 1-4), one CLUSTER of blocks per cell:
 * the re-localisation grid's GICOV tasks are shared by the cluster's
 * blocks, which store their scores straight into block 0's shared memory
 * (on one SM per cell it took 27 us when it summed in double, FP64-bound;
 * in float since gicovt, see gicov_lanes); after the
 * cluster barrier block 0 alone finds the best position and the sub-pixel
 * centre, writes the normalised E of the window to gwin[cell] and the
 * window to info[cell]. Two blocks per SM in the launch bounds: 64
 * registers, as before the cue's groups of lanes (without the 2 ptxas took
 * 110, one block per SM; no faster, docs/PERFORMANCE.md 2026-11-25). */
__global__ void __launch_bounds__(WIN_THREADS, 2) window_kernel(const float *__restrict__ frame, lt_cu_params P,
                                                     lt_leuk_cell *cells, int win_max, int *err, float *gwin,
                                                     lt_cu_win *info)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cl = cg::this_cluster();
  extern __shared__ __align__(16) double gsm[];
  __shared__ reloc_smem RS;
  __shared__ float redmin[16], redmax[16];
  const int CL = (int)cl.num_blocks(), rank = (int)cl.block_rank(), ci = blockIdx.x / CL;
  const int tid = threadIdx.x, nt = (int)blockDim.x;
  long long tp = clock64();
  const lt_leuk_cell *cp = cells + ci;
  const double R = cp->R, px = cp->xc + cp->vx, py = cp->yc + cp->vy;
  const int sign = cp->sign;
  const grid_task G = grid_of(P, R, px, py);
  const int T = G.S * G.S * G.K;
  double *gs0 = cl.map_shared_rank(gsm, 0);
  /* block 0's shared memory may be written only once it runs: a relaxed
   * cluster barrier (no data yet to order, ~50 ns instead of ~0.5 us) */
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  /* this block's tasks: [rank*T/CL, (rank+1)*T/CL) */
  const int t0 = (int)((long)rank * T / CL), t1 = (int)((long)(rank + 1) * T / CL);
  gicov_tasks<4>(P, t1 - t0, 0, nt, [&](int t, int *x, int *y, int *k) { G(t0 + t, x, y, k); },
      [&](int t, double g) { gs0[G.slot(t0 + t)] = g; });
  cl.sync();
  if (rank != 0) return;
  LT_CU_PROF(P, 0, 0, tp);
  double qx, qy;
  relocate(frame, P, gsm, G, sign, R, cell_tpl(P, *cp), px, py, &qx, &qy, RS);
  LT_CU_PROF(P, 0, 1, tp);
  int u1, v1, w, h;
  window_of(P, R, qx, qy, &u1, &v1, &w, &h);
  if (w < 3 || h < 3 || (long)w * h > win_max) {
    if (tid == 0) {
      if (w < 3 || h < 3) cells[ci].status = LT_CELL_LEFT;
      else atomicExch(err, 1);
      info[ci].skip = 1;
    }
    return;
  }
  edge_map(frame, P, u1, v1, w, h, gwin + (size_t)ci * win_max, NULL, redmin, redmax);
  if (tid == 0) {
    lt_cu_win I;
    I.qx = qx;
    I.qy = qy;
    I.u1 = u1;
    I.v1 = v1;
    I.w = w;
    I.h = h;
    I.skip = 0;
    info[ci] = I;
  }
  LT_CU_PROF(P, 0, 2, tp);
  if (P.prof && tid == 0) atomicAdd(&P.prof[7], 1ull);
#endif
}

/* Split path, kernel 3 of 3 (steps 5-6), one block per cell: F (from
 * mgvf_cluster_kernel, in gwin) and its normalised gradient into shared
 * memory, the evolution on warp 0, then the status GICOVs with the block. */
__global__ void __launch_bounds__(NT) snake_kernel(const float *__restrict__ frame, lt_cu_params P,
                                                   lt_leuk_cell *cells, int win_max, const float *gwin,
                                                   const lt_cu_win *info)
{
  __shared__ lt_leuk_cell C;
  __shared__ double s_xc, s_yc;
  __shared__ double gs[9 * LT_LEUK_MAX_RADII];
  extern __shared__ __align__(16) float Fs[];
  const int ci = blockIdx.x, tid = threadIdx.x;
  const lt_cu_win I = info[ci];
  if (I.skip) return;
  long long tp = clock64();
  if (tid == 0) C = cells[ci];
  const float *src = gwin + (size_t)ci * win_max;
  const int nwin = I.w * I.h;
  float *fx = Fs + nwin, *fy = Fs + 2 * nwin;
  for (int t = tid; t < nwin; t += blockDim.x) Fs[t] = src[t];
  __syncthreads();
  evolve_cell(Fs, fx, fy, I.w, I.h, I.qx, I.qy, I.u1, I.v1, C, P, &s_xc, &s_yc);
  LT_CU_PROF(P, 8, 0, tp);
  finish_cell(frame, P, C, s_xc, s_yc, gs, &cells[ci]);
  LT_CU_PROF(P, 8, 1, tp);
  if (P.prof && tid == 0) atomicAdd(&P.prof[15], 1ull);
}

/* MGVF of the windows in gwin, one CLUSTER of blocks per cell: block `rank`
 * holds rows [rank*rows, (rank+1)*rows) of E and of the two F buffers plus
 * one halo row above and below in its shared memory.
 *
 * No cluster-wide barrier per iteration: on the H100 barrier.cluster with
 * release/acquire semantics costs 0.42-0.72 us (measured, 44 clusters of
 * 1-8 x 256 threads), about the whole MGVF iteration we want. Instead each
 * block sends its first and last new row straight into its neighbours' halo
 * rows with st.async, which counts the bytes down on an mbarrier in the
 * receiving block (one per F buffer); a block waits for its own halo
 * mbarrier before the next iteration, and a __syncthreads orders its own
 * rows. Neighbours thus stay within one iteration of each other, which
 * double buffering makes safe: a block overwrites its neighbour's halo row
 * in buffer X (iteration i) only after it received the whole row that the
 * neighbour computed from that halo in iteration i - 1, so every read of it
 * is done. The edge rows are computed first in every
 * iteration, so the halos leave early. Every LT_MGVF_CHECK_EVERY-th
 * iteration each block st.asyncs its partial |change| to every block of the
 * cell (a second mbarrier pair), all sum the partials in rank order and take
 * the same exit. Same per-pixel arithmetic as mgvf_block. F replaces E in
 * gwin. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void mb_wait(uint64_t *bar, unsigned parity)
{
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

/* The largest t with t / n <= tol (n > 0), so that the convergence test
 * diff / n <= tol of mgvf.c is diff <= t, without a division on the
 * iteration's critical path. Correctly rounded division is monotone in
 * the dividend, so the diffs that pass form a down-set; tol * n is within
 * a few ulps of its bound, which the two walks find. (Their caps matter only
 * for tol below 1e-300, where the sums of float changes, 0 or >= 2^-149,
 * decide the same way either side.) */
static __device__ __forceinline__ double next_up(double x)
{
  if (x != x || x == INFINITY) return x;
  if (x == 0.0) return 0x1p-1074;
  const long long i = __double_as_longlong(x);
  return __longlong_as_double(x > 0.0 ? i + 1 : i - 1);
}

static __device__ double div_le_threshold(double tol, double n)
{
  double t = tol * n;
  for (int k = 0; k < 8 && !(t / n <= tol); k++) t = -next_up(-t);
  for (int k = 0; k < 8; k++) {
    const double u = next_up(t);
    if (!(u / n <= tol)) break;
    t = u;
  }
  return t;
}
/* One MGVF task of the cluster kernel: the vertical pixel pair at local
 * rows l, l+1 (l alone when it is the block's last row) of column j, as
 * its 12 shared-memory offsets (rows above, l, below l, below the pair;
 * columns j-1, j, j+1, borders replicated), the offsets of its two outputs
 * and their E values. */
struct mgvf_pair {
  int o[12], s1, s2, j;
  float e1, e2;
  bool two, up, dn; /* a second pixel; its top / bottom row goes to the neighbour above / below */
};

/* Task (q, j): pair number q in the order first, last, 2nd, 3rd, ... (the
 * edge rows first, so the halos leave early). */
static __device__ __forceinline__ mgvf_pair pair_of(int q, int j, int npair, int r0, int nr, int h, int w,
                                                    const float *E, bool has_up, bool has_dn)
{
  mgvf_pair t;
  const int pi = q == 0 ? 0 : q == 1 ? npair - 1 : q - 1;
  const int l = 1 + 2 * pi, gr = r0 - 1 + l;
  t.two = l < nr;
  const int lb = t.two ? l + 1 : l, grb = gr + t.two; /* the pair's bottom row */
  const int lu = gr > 0 ? l - 1 : l, ld = grb < h - 1 ? lb + 1 : lb;
  const int lc = t.two ? lb : ld; /* the row below the top pixel */
  const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
  const int rr[4] = {lu, l, lc, ld};
#pragma unroll
  for (int k = 0; k < 4; k++) {
    t.o[3 * k] = rr[k] * w + jl;
    t.o[3 * k + 1] = rr[k] * w + j;
    t.o[3 * k + 2] = rr[k] * w + jr;
  }
  t.s1 = l * w + j;
  t.s2 = lb * w + j;
  t.j = j;
  t.e1 = E[t.s1];
  t.e2 = E[t.s2];
  t.up = l == 1 && has_up;
  t.dn = lb == nr && has_dn;
  return t;
}

/* Where an iteration's edge rows go: the neighbours' halo rows in the
 * buffer this iteration writes, and their mbarriers. */
struct mgvf_halo {
  float *up, *dn;
  uint64_t *upbar, *dnbar;
};

/* One iteration of task t: cur -> nxt, the halo rows sent, |change| added
 * to *acc on check iterations. */
static __device__ __forceinline__ void pair_step(const mgvf_pair &t, const float *cur, float *nxt,
                                                 const mgvf_halo &hs, bool check, float ml, float il, double *acc)
{
  const float u0 = cur[t.o[0]], u1 = cur[t.o[1]], u2 = cur[t.o[2]];
  const float a0 = cur[t.o[3]], a1 = cur[t.o[4]], a2 = cur[t.o[5]];
  const float c0 = cur[t.o[6]], c1 = cur[t.o[7]], c2 = cur[t.o[8]];
  const float f1 = mgvf_update(a1, u1, c1, a0, a2, u2, c2, u0, c0, t.e1, ml, il);
  nxt[t.s1] = f1;
  if (check) *acc += (double)fabsf(f1 - a1);
  float fb = f1;
  if (t.two) {
    const float d0 = cur[t.o[9]], d1 = cur[t.o[10]], d2 = cur[t.o[11]];
    fb = mgvf_update(c1, a1, d1, c0, c2, a2, d2, a0, d0, t.e2, ml, il);
    nxt[t.s2] = fb;
    if (check) *acc += (double)fabsf(fb - c1);
  }
  if (t.up) cuda::ptx::st_async(hs.up + t.j, f1, hs.upbar);
  if (t.dn) cuda::ptx::st_async(hs.dn + t.j, fb, hs.dnbar);
}
#endif


#ifdef LT_MGVF_PROF /* experiment: per-phase cycles of the iteration (thread 0 of each block) */
#define MP_T(k) do { if (tid == 0) { long long t_ = clock64(); mp[k] += t_ - mpt; mpt = t_; } } while (0)
#else
#define MP_T(k) do { } while (0)
#endif
__global__ void __launch_bounds__(MGVF_THREADS_MAX, MGVF_MIN_BLOCKS) mgvf_cluster_kernel(float *gwin, const lt_cu_win *info,
                                                           lt_leuk_cell *cells, lt_cu_params P, int win_max,
                                                           int rows_cap, int wcap, int it_split)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 /* clusters: Hopper and newer */
  namespace cg = cooperative_groups;
  namespace ptx = cuda::ptx;
  cg::cluster_group cl = cg::this_cluster();
  extern __shared__ __align__(16) float dsm[];
  __shared__ double part[2][16];
  __shared__ double wpart[MGVF_THREADS_MAX / 32];
  __shared__ __align__(8) uint64_t hbar[2], rbar[2];
  const int CLn = (int)cl.num_blocks(), rank = (int)cl.block_rank();
  const int ci = blockIdx.x / CLn;
  const lt_cu_win I = info[ci];
  if (I.skip) return; /* the whole cluster */
  /* A cell that needed fewer than it_split iterations in the last frame
   * (all but the slowest ones) takes half the cluster: the other blocks
   * leave at once, and the slow cells share their SMs with fewer blocks.
   * (Read before any block of the cluster writes mgvf_iter.) */
  const int prev = cells[ci].mgvf_iter;
  const int CL = prev > 0 && prev < it_split ? (CLn + 1) / 2 : CLn;
  const int w = I.w, h = I.h, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, T = (int)blockDim.x;
  const int rows = (h + CL - 1) / CL, r0 = rank * rows, r1 = min(h, r0 + rows), nr = max(0, r1 - r0);
  const int CLe = (h + rows - 1) / rows; /* blocks that hold rows: 0..CLe-1 */
  const bool has_up = nr > 0 && rank > 0, has_dn = nr > 0 && r1 < h;
  const unsigned hbytes = (unsigned)((has_up + has_dn) * w * sizeof(float));
  const size_t plane = (size_t)(rows_cap + 2) * wcap;
  float *E = dsm, *A = dsm + plane, *B = dsm + 2 * plane;
  float *g = gwin + (size_t)ci * win_max;
  if (tid == 0) {
    ptx::mbarrier_init(&hbar[0], 1);
    ptx::mbarrier_init(&hbar[1], 1);
    ptx::mbarrier_init(&rbar[0], 1);
    ptx::mbarrier_init(&rbar[1], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  /* local row l <-> global row r0 - 1 + l; own rows 1..nr; halos 0, nr+1 */
  for (int t = tid; t < (nr + 2) * w; t += T) {
    const int l = t / w, j = t - l * w, gr = r0 - 1 + l;
    const float v = (gr >= 0 && gr < h) ? g[(size_t)gr * w + j] : 0.0f;
    E[t] = v;
    A[t] = v;
  }
  float *upA = has_up ? cl.map_shared_rank(A, rank - 1) : NULL;
  float *upB = has_up ? cl.map_shared_rank(B, rank - 1) : NULL;
  float *dnA = has_dn ? cl.map_shared_rank(A, rank + 1) : NULL;
  float *dnB = has_dn ? cl.map_shared_rank(B, rank + 1) : NULL;
  uint64_t *uphb = has_up ? cl.map_shared_rank(&hbar[0], rank - 1) : NULL;
  uint64_t *dnhb = has_dn ? cl.map_shared_rank(&hbar[0], rank + 1) : NULL;
  cl.sync(); /* every block's mbarriers initialised and its rows loaded */
  if (nr == 0) return; /* no rows (half cluster, or more blocks than rows): nobody sends to it */
  long long tp = clock64();
  const float ml = P.mgvf_ml, il = P.mgvf_il;
  const double thr = div_le_threshold(P.mgvf_tol, (double)w * h);
  /* this thread's tasks (pair_of): t = tid, tid + T, ... over npair x w,
   * (pair, column) advanced without a division per task. The first one (on
   * most windows the only one) is set up once, outside the iteration loop;
   * further ones (wide windows) per iteration. */
  const int npair = (nr + 1) >> 1;
  const int q0 = tid / w, j0 = tid - q0 * w;
  const bool t0 = q0 < npair;
  mgvf_pair first = {};
  if (t0) first = pair_of(q0, j0, npair, r0, nr, h, w, E, has_up, has_dn);
  int q1 = q0, j1 = j0 + T;
  while (j1 >= w) {
    j1 -= w;
    q1++;
  }
  int it = 0, nchk = 0, ran = 0; /* ran: iterations executed (one may be speculative) */
  int pend = -1;                  /* the posted check awaiting its sum: its rbar index, else -1 */
  unsigned pend_par = 0;
#ifdef LT_MGVF_PROF
  long long mp[4] = {0, 0, 0, 0}, mpt = clock64();
#endif
  if (nr > 0 && P.mgvf_max_iter > 0)
    for (;;) {
      const int b = it & 1; /* iteration `it` reads buffer b (A = 0), writes 1-b */
      const float *cur = b ? B : A;
      float *nxt = b ? A : B;
      float *upn = b ? upA : upB, *dnn = b ? dnA : dnB;
      /* hbar[x] counts the halo bytes arriving in buffer x; iteration i
       * writes buffer 1 - (i & 1), phase i >> 1 of its mbarrier */
      if (hbytes) {
        if (it > 0) mb_wait(&hbar[b], ((it - 1) >> 1) & 1); /* halos of cur, sent in it - 1 */
        if (tid == 0)
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &hbar[b ^ 1], hbytes);
      }
      MP_T(0);
      const bool cap = it + 1 == P.mgvf_max_iter;
      const bool check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 && !cap; /* at the cap it stops anyway */
      double acc = 0.0;
      const mgvf_halo hs = {upn + (size_t)(rows + 1) * w, dnn, uphb + (b ^ 1), dnhb + (b ^ 1)};
      if (t0) pair_step(first, cur, nxt, hs, check, ml, il, &acc);
      for (int q = q1, j = j1; q < npair;) {
        pair_step(pair_of(q, j, npair, r0, nr, h, w, E, has_up, has_dn), cur, nxt, hs, check, ml, il, &acc);
        j += T;
        while (j >= w) {
          j -= w;
          q++;
        }
      }
      MP_T(1);
      ran = it + 1;
      /* The convergence test of check iteration c is decided after
       * iteration c + 1 (speculative) has been computed: the partial sums
       * travel while it runs. c + 1 wrote the buffer that c read, so c's
       * result is intact; if c converged, c + 1 is discarded. */
      bool stop = false;
      if (pend >= 0) {
        mb_wait(&rbar[pend], pend_par);
        double diff = 0.0;
        for (int q = 0; q < CLe; q++) diff += part[pend][q];
        pend = -1;
        stop = diff <= thr; /* = diff / n <= tol: converged after iteration it - 1 */
      }
      if (check && !stop) { /* the |change| reduction only on check iterations */
        const int k = nchk & 1;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) wpart[warp] = acc;
        __syncthreads();
        if (tid == 0) {
          double sp = 0.0;
          for (int q = 0; q < (T >> 5); q++) sp += wpart[q];
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &rbar[k],
                                         (unsigned)(CLe * sizeof(double)));
          for (int q = 0; q < CLe; q++)
            ptx::st_async(cl.map_shared_rank(&part[k][rank], q), sp, cl.map_shared_rank(&rbar[k], q));
        }
        pend = k;
        pend_par = (nchk >> 1) & 1;
        nchk++;
      }
      MP_T(2);
      __syncthreads(); /* this block's new rows complete before they are read */
      MP_T(3);
      if (stop) break; /* it iterations count; the result is in cur */
      it++;
      if (cap) break;
    }
  /* the last iteration's halos (sent in ran - 1) may still be in flight:
   * land them before anyone can leave */
  if (hbytes && ran > 0) mb_wait(&hbar[1 - ((ran - 1) & 1)], ((ran - 1) >> 1) & 1);
  const float *res = (it & 1) ? B : A;
  for (int t = tid; t < nr * w; t += T) g[(size_t)r0 * w + t] = res[w + t];
  if (rank == 0 && tid == 0) cells[ci].mgvf_iter = it;
#ifdef LT_MGVF_PROF
  if (P.prof && tid == 0) {
    for (int k = 0; k < 4; k++) atomicAdd(&P.prof[18 + k], (unsigned long long)mp[k]);
    atomicAdd(&P.prof[22], (unsigned long long)it);
  }
#endif
  if (rank == 0) {
    LT_CU_PROF(P, 16, 0, tp);
    if (P.prof && tid == 0) atomicAdd(&P.prof[17], (unsigned long long)it);
  }
  /* No final cluster barrier: other blocks only ever st.async into this
   * block's shared memory, and it has waited for all of that above. */
#endif
}

/* MGVF of the windows in gwin, one block per cell, the whole window (E and
 * both F buffers) in shared memory sized for the launch's largest window:
 * the dense path for throughput (several videos in flight, or more cells
 * than the cluster path's blocks fit on the SMs at once). Several cells
 * share an SM and every cell converges on its own, without halos between
 * blocks. Thread t owns column t % w of the rows of strip t / w (the window's
 * rows cut into DENSE_THREADS / w strips) and walks down it with the 3x3
 * neighbourhood in registers: three shared-memory loads per pixel instead of
 * nine. Same pixel arithmetic (mgvf_update) and the same iteration and
 * convergence rule as mgvf_block: bit-identical F and iteration count.
 * 512 threads per cell (LT_CUDA_DENSE_THREADS=256: the first layout): when
 * a frame's largest window (~80 KB for R ~ 15 with the reference's 8R + 1 wide
 * windows, ~40 KB with the square ones since 2026-11-24) leaves room for two cells per
 * SM, they bring 32 warps instead of 16, and each thread's strip is half as
 * long (H100 2026-11-24: +3-4 % aggregate with ~40 cells per video, the
 * same with ~117). E in global memory instead (2/3 the shared memory, more
 * cells per SM) was slower: E then misses the smaller L1. */
#define DENSE_THREADS 512
/* One iteration of a thread's strip: rows [r0, r1) of column j of cur into
 * nxt (shared-memory offsets in int; jl, jr = the column's clamped
 * neighbours as offsets -1/0 and +1/0), |change| summed when CHECK. */
template <bool CHECK>
static __device__ __forceinline__ double dense_strip(const float *cur, float *nxt, const float *E, int o, int ou,
                                                     int olast, int n, int w, int dl_, int dr_, float ml, float il)
{
  double acc = 0.0;
  float ul = cur[ou + dl_], u = cur[ou], ur = cur[ou + dr_];
  float l = cur[o + dl_], c = cur[o], r = cur[o + dr_];
#pragma unroll 2
  for (int q = 0; q < n; q++, o += w) {
    const int od = o < olast ? o + w : o; /* the row below, the last row replicated */
    const float dl = cur[od + dl_], d = cur[od], dr = cur[od + dr_];
    const float fn = mgvf_update(c, u, d, l, r, ur, dr, ul, dl, E[o], ml, il);
    nxt[o] = fn;
    if (CHECK) acc += (double)fabsf(fn - c);
    ul = l;
    u = c;
    ur = r;
    l = dl;
    c = d;
    r = dr;
  }
  return acc;
}

/* One iteration of a thread's strip with the window TRANSPOSED in shared
 * memory (pc, pl, pr: the strip's first pixel in its column and in the
 * clamped left and right columns; pe, pn: E and the output there; n rows;
 * top, bottom: the strip holds the window's first, last row), |change|
 * summed when CHECK. Pixel (i, j) is at j * h + i, so a strip is
 * contiguous and its walk down the strip takes the loads' and the store's
 * offsets as immediates (no per-pixel address arithmetic, no clamp of the
 * row below: the last row is peeled). Lanes hold neighbouring columns, h
 * (= 2 round(2R) + 1, odd) floats apart: no bank conflicts. The vertical
 * pair's Heaviside terms are shared down the strip: pixel i's
 * min(F(i-1) - F(i), 0) is -max(F(i) - F(i-1), 0), the "down" term of
 * pixel i - 1 (IEEE subtraction is antisymmetric under round-to-nearest,
 * and x + (-y) = x - y exactly), one subtraction and one min fewer per
 * pixel; the sum gives the same bits (the only difference, +0 against -0
 * added to max(D, 0) >= +0, never shows). Same thread to pixel map, same
 * strips and sum order as the row-major layout: bit-identical F and
 * iteration count. The default (LT_CUDA_DENSE_ROWS=1: row-major). */
template <bool CHECK, bool OM = false>
static __device__ __forceinline__ double dense_col(const float *pc, const float *pl, const float *pr,
                                                   const float *pe, float *pn, int n, bool top, bool bottom,
                                                   float ml, float il, float om = 0.0f)
{
  double acc = 0.0;
  const int up = top ? 0 : -1;
  float ul = pl[up], u = pc[up], ur = pr[up];
  float l = pl[0], c = pc[0], r = pr[0];
  float mprev = -fminf(u - c, 0.0f); /* -min(dU, 0) of the strip's first pixel */
  auto px = [&](int q, float dl, float d, float dr) {
    const float dD = d - c, dL = l - c, dR = r - c;
    const float dUR = ur - c, dDR = dr - c, dUL = ul - c, dDL = dl - c;
    const float mD = fmaxf(dD, 0.0f);
    const float a = __fsub_rn(mD, mprev);
    const float b = __fadd_rn(fminf(dL, 0.0f), fmaxf(dR, 0.0f));
    const float g = __fadd_rn(__fmul_rn(0.5f, dUR), fmaxf(dDR, 0.0f));
    const float k = __fadd_rn(fminf(dUL, 0.0f), __fmul_rn(0.5f, dDL));
    const float s = __fadd_rn(__fadd_rn(a, b), __fadd_rn(g, k));
    const float fp = __fadd_rn(c, __fmul_rn(ml, s));
    const float e = pe[q];
    const float fj = __fsub_rn(fp, __fmul_rn(__fmul_rn(il, e), __fsub_rn(fp, e)));
    const float fn = OM ? col_relax(c, fj, om) : fj; /* OM: lt_mgvf_col's over-relaxed change */
    pn[q] = fn;
    if (CHECK) acc += (double)fabsf(fn - c);
    mprev = mD;
    ul = l;
    u = c;
    ur = r;
    l = dl;
    c = d;
    r = dr;
  };
  const int m = bottom ? n - 1 : n;
  /* four rows a step, then the last 0-3 as two straight-line steps (the
   * compiler's remainder loop of an unrolled loop took ~50 instructions a
   * row against ~36; strips are often 5-7 rows); the same rows in order */
  int q = 0;
#pragma unroll 1
  for (; q + 4 <= m; q += 4) {
    px(q, pl[q + 1], pc[q + 1], pr[q + 1]);
    px(q + 1, pl[q + 2], pc[q + 2], pr[q + 2]);
    px(q + 2, pl[q + 3], pc[q + 3], pr[q + 3]);
    px(q + 3, pl[q + 4], pc[q + 4], pr[q + 4]);
  }
  if (q + 2 <= m) {
    px(q, pl[q + 1], pc[q + 1], pr[q + 1]);
    px(q + 1, pl[q + 2], pc[q + 2], pr[q + 2]);
    q += 2;
  }
  if (q < m) px(q, pl[q + 1], pc[q + 1], pr[q + 1]);
  if (bottom) px(m, l, c, r); /* the last row: the row below replicated */
  return acc;
}

/* Shared-memory offset of window pixel t (row-major index i * w + j). */
template <bool TR>
static __device__ __forceinline__ int dense_at(int t, int w, int h)
{
  if (!TR) return t;
  const int i = t / w;
  return (t - i * w) * h + i;
}

/* One iteration of column j's strip, rows [r0, r1), in either layout. */
template <bool TR, bool CHECK>
static __device__ __forceinline__ double dense_column(const float *cur, float *nxt, const float *E, int j, int r0,
                                                      int r1, int w, int h, float ml, float il)
{
  if (TR) {
    const int o = j * h + r0, hl = j > 0 ? -h : 0, hr = j < w - 1 ? h : 0;
    return dense_col<CHECK>(cur + o, cur + o + hl, cur + o + hr, E + o, nxt + o, r1 - r0, r0 == 0, r1 == h, ml, il);
  }
  const int dl_ = j > 0 ? -1 : 0, dr_ = j < w - 1 ? 1 : 0;
  const int o = r0 * w + j, ou = (r0 > 0 ? r0 - 1 : 0) * w + j, olast = (h - 1) * w + j;
  return dense_strip<CHECK>(cur, nxt, E, o, ou, olast, r1 - r0, w, dl_, dr_, ml, il);
}

/* Thread tid's strip of nc columns (q0, q0 + DT, ... when nc >= DT) cut
 * into DT / nc strips of rows [r0, r1) of h; act: it has one. */
struct dense_map {
  int q0, r0, r1;
  bool act;
};
template <int DT>
static __device__ __forceinline__ dense_map dense_map_of(int nc, int h, int tid)
{
  dense_map m;
  int strips = nc > 0 ? DT / nc : 1;
  if (strips < 1) strips = 1;
  if (strips > h) strips = h;
  const int rows = (h + strips - 1) / strips;
  /* columns wider than the block: a thread takes columns q, q + T, ... */
  const int s = nc >= DT ? 0 : tid / nc;
  m.q0 = nc >= DT ? tid : tid - s * nc;
  m.r0 = s * rows;
  m.r1 = min(h, m.r0 + rows);
  m.act = nc > 0 && s < strips && m.r0 < m.r1;
  return m;
}

/* The dense MGVF kernel: DT threads per cell, BPS blocks per SM (launch
 * bounds), TR: the window transposed in shared memory (dense_col, the
 * default), else row-major (dense_strip, LT_CUDA_DENSE_ROWS=1). COL (TR
 * only): the column two-colour SOR (lt_mgvf_col, LT_MGVF_COL): each sweep
 * two passes of the strip walk, the even columns into nxt from cur, then
 * the odd ones with the columns beside them from nxt; the threads mapped
 * to the pass's columns (DT / (w / 2) strips), so none idles for the other
 * half. */
template <int DT, int BPS, bool TR, bool COL = false>
__global__ void __launch_bounds__(DT, BPS) mgvf_dense_kernel(float *gwin, const lt_cu_win *info,
                                                             lt_leuk_cell *cells, lt_cu_params P, int win_max)
{
  extern __shared__ __align__(16) float dsm[];
  __shared__ double red[2][DT / 32];
  const int ci = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const lt_cu_win I = info[ci];
  if (I.skip) return;
  const int w = I.w, h = I.h, n = w * h;
  float *E = dsm, *A = dsm + n, *B = dsm + 2 * n;
  float *g = gwin + (size_t)ci * win_max;
  for (int t = tid; t < n; t += DT) {
    const int o = dense_at<TR>(t, w, h);
    const float v = g[t];
    E[o] = v;
    A[o] = v;
  }
  const dense_map mj = dense_map_of<DT>(w, h, tid);
  const int j0 = mj.q0, r0 = mj.r0, r1 = mj.r1;
  const bool act = mj.act;
  /* COL: pass k's map over its (w + 1 - k) / 2 columns */
  const dense_map mc[2] = {dense_map_of<DT>(COL ? (w + 1) / 2 : 0, h, tid), dense_map_of<DT>(COL ? w / 2 : 0, h, tid)};
  const float ml = P.mgvf_ml, il = P.mgvf_il, om = P.mgvf_col;
  const double nd = (double)n;
  long long tp = clock64();
  __syncthreads();
  float *cur = A, *nxt = B;
  int it = 0, par = 0;
  while (it < P.mgvf_max_iter) {
    const bool check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == P.mgvf_max_iter;
    double acc = 0.0;
    if (COL) {
#pragma unroll
      for (int k = 0; k < 2; k++) {
        const float *side = k ? nxt : cur;
        const dense_map &m = mc[k];
        if (m.act)
          for (int q = m.q0; 2 * q + k < w; q += DT) {
            const int j = 2 * q + k, o = j * h + m.r0;
            const float *pl = j > 0 ? side + o - h : cur + o, *pr = j < w - 1 ? side + o + h : cur + o;
            acc += check ? dense_col<true, true>(cur + o, pl, pr, E + o, nxt + o, m.r1 - m.r0, m.r0 == 0, m.r1 == h,
                                                 ml, il, om)
                         : dense_col<false, true>(cur + o, pl, pr, E + o, nxt + o, m.r1 - m.r0, m.r0 == 0, m.r1 == h,
                                                  ml, il, om);
          }
        if (k == 0) __syncthreads();
      }
    } else if (act)
      for (int j = j0; j < w; j += DT)
        acc += check ? dense_column<TR, true>(cur, nxt, E, j, r0, r1, w, h, ml, il)
                     : dense_column<TR, false>(cur, nxt, E, j, r0, r1, w, h, ml, il);
    if (check) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) red[par][warp] = acc;
    }
    __syncthreads();
    double diff = 0.0;
    if (check)
      for (int q = 0; q < DT / 32; q++) diff += red[par][q];
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    par ^= 1;
    if (check && diff / nd <= P.mgvf_tol) break;
  }
  for (int t = tid; t < n; t += DT) g[t] = cur[dense_at<TR>(t, w, h)];
  if (tid == 0) cells[ci].mgvf_iter = it;
  LT_CU_PROF(P, 16, 0, tp);
  if (P.prof && tid == 0) atomicAdd(&P.prof[17], (unsigned long long)it);
}

/* MGVF of one window (test access): E in win[0..w*h), F out in win[win_max..]. */
template <bool SH>
__global__ void __launch_bounds__(NT, 1) mgvf_kernel(float *win, int w, int h, int win_max, lt_cu_params P,
                                                     float *gwork, int *iters)
{
  extern __shared__ __align__(16) float dsm[];
  __shared__ double red[2][NW];
  float *buf = SH ? dsm : gwork;
  const int n = w * h;
  for (int t = threadIdx.x; t < n; t += NT) buf[t] = buf[n + t] = win[t];
  __syncthreads();
  float *F;
  int it = mgvf_block(buf, buf + n, buf + 2 * n, w, h, P, red, &F);
  for (int t = threadIdx.x; t < n; t += NT) win[win_max + t] = F[t];
  if (threadIdx.x == 0) *iters = it;
}

/* The cluster MGVF's shared memory per block: E and two F buffers of the
 * largest window's rows for half a cluster (cells that were fast take half
 * of one) plus a halo row above and below. */
static size_t mgvf_cluster_smem(const lt_cu_ctx *c, int *rows_cap, int *wcap)
{
  const double Rmax = c->p.rmax + c->p.rstep;
  const int hx = lt_leuk_win_half_x(Rmax), hy = lt_leuk_win_half_y(Rmax), half = (c->cluster + 1) / 2;
  *wcap = 2 * hx + 1;
  *rows_cap = (2 * hy + 1 + half - 1) / half;
  return sizeof(float) * 3 * (size_t)(*rows_cap + 2) * *wcap;
}

/* the dense MGVF kernel of c's settings (threads per cell, layout) */
typedef void (*dense_kernel_fn)(float *, const lt_cu_win *, lt_leuk_cell *, lt_cu_params, int);
static dense_kernel_fn dense_fn(const lt_cu_ctx *c)
{
  if (c->kp.mgvf_col > 0.0f) /* LT_MGVF_COL: transposed only (LT_CUDA_DENSE_ROWS ignored) */
    return c->dense_threads == 256 ? mgvf_dense_kernel<256, 4, true, true>
           : c->dense_occ3         ? mgvf_dense_kernel<DENSE_THREADS, 3, true, true>
                                   : mgvf_dense_kernel<DENSE_THREADS, 2, true, true>;
  if (c->dense_threads == 256) return c->dense_rows ? mgvf_dense_kernel<256, 4, false> : mgvf_dense_kernel<256, 4, true>;
  if (c->dense_rows) return mgvf_dense_kernel<DENSE_THREADS, 2, false>;
  return c->dense_occ3 ? mgvf_dense_kernel<DENSE_THREADS, 3, true> : mgvf_dense_kernel<DENSE_THREADS, 2, true>;
}

int lt_cu_track_setup(lt_cu_ctx *c)
{
  const lt_leuk_params *p = &c->p;
  double Rmax = p->rmax + p->rstep;
  int hx = lt_leuk_win_half_x(Rmax), hy = lt_leuk_win_half_y(Rmax);
  c->win_max = (2 * hx + 1) * (2 * hy + 1);
  int S = 2 * p->search + 1, nr = lt_leuk_nradii(p);
  size_t need = sizeof(float) * 3 * (size_t)c->win_max;
  size_t gsb = sizeof(double) * (size_t)S * S * nr;
  if (gsb > need) need = gsb;
  if (sizeof(double) * 9 * nr > need) need = sizeof(double) * 9 * nr;
  c->track_smem = need;
  int dev = 0, optin = 0, sms = 1, major = 0;
  LT_CU(cudaGetDevice(&dev), "cudaGetDevice");
  LT_CU(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "querying shared memory");
  LT_CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "querying the SM count");
  LT_CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "querying the device");
  cudaFuncAttributes fa;
  LT_CU(cudaFuncGetAttributes(&fa, track_kernel<true>), "querying the tracking kernel");
  size_t static_smem = fa.sharedSizeBytes;
  c->track_in_shared = need + static_smem <= (size_t)optin;
  c->work_blocks = 2 * sms;
  if (c->track_in_shared) {
    LT_CU(cudaFuncSetAttribute(track_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the tracking kernel's shared memory");
    LT_CU(cudaFuncSetAttribute(mgvf_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the MGVF kernel's shared memory");
  } else {
    lt_info("cuda: tracking windows of %zu KB exceed the %d KB of shared memory per block; using global memory",
            need / 1024, optin / 1024);
    size_t bytes = need * c->work_blocks;
    cudaError_t e = cudaMalloc(&c->d_work, bytes);
    if (e != cudaSuccess) {
      lt_error("out of GPU memory allocating the tracking windows (%zu MB)", bytes >> 20);
      (void)cudaGetLastError();
      return LT_ERR_GPU;
    }
  }
  /* default on Hopper: the split path (window kernel on a cluster, MGVF on
   * a cluster of blocks per cell, snake kernel); LT_CUDA_MGVF=block keeps
   * the one-block path */
  const char *mv = getenv("LT_CUDA_MGVF");
  LT_CU(cudaFuncGetAttributes(&fa, window_kernel), "querying the window kernel");
  if (!(mv && !strcmp(mv, "block")) && major >= 9 && gsb + fa.sharedSizeBytes <= (size_t)optin &&
      sizeof(float) * 3 * c->win_max + 8192 <= (size_t)optin) {
    const char *cs = getenv("LT_CUDA_CLUSTER"), *ws = getenv("LT_CUDA_WCLUSTER");
    c->cluster = cs && atoi(cs) >= 2 && atoi(cs) <= 16 ? atoi(cs) : 8;
    c->wcluster = ws && atoi(ws) >= 1 && atoi(ws) <= 8 ? atoi(ws) : 4;
    const char *ts = getenv("LT_CUDA_MGVF_THREADS");
    c->mgvf_threads = ts && atoi(ts) >= 64 && atoi(ts) <= MGVF_THREADS_MAX && atoi(ts) % 32 == 0 ? atoi(ts) : MGVF_THREADS;
    if (c->cluster > 8)
      LT_CU(cudaFuncSetAttribute(mgvf_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
            "allowing large clusters");
    if (gsb > 48 * 1024)
      LT_CU(cudaFuncSetAttribute(window_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)gsb),
            "raising the window kernel's shared memory");
    if (sizeof(float) * 3 * c->win_max > 48 * 1024)
      LT_CU(cudaFuncSetAttribute(snake_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)(sizeof(float) * 3 * c->win_max)),
            "raising the snake kernel's shared memory");
    c->split_cap = 512;
    int rows_cap, wcap;
    const size_t csmem = mgvf_cluster_smem(c, &rows_cap, &wcap);
    const char *sp = getenv("LT_CUDA_MGVF_SPLIT");
    c->mgvf_split_pct = sp && atoi(sp) >= 0 && atoi(sp) <= 100 ? atoi(sp) : 60;
    if (csmem > 48 * 1024)
      LT_CU(cudaFuncSetAttribute(mgvf_cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)csmem),
            "raising the cluster MGVF kernel's shared memory");
    int err = lt_cu_buf_get(c, (void **)&c->d_gwin, sizeof(float) * (size_t)c->win_max * c->split_cap, 0,
                            "the tracking windows");
    if (!err) err = lt_cu_buf_get(c, (void **)&c->d_info, sizeof(lt_cu_win) * c->split_cap, 0, "the tracking windows");
    if (err) return err;
    /* the dense MGVF (one block per cell, the window in shared memory) */
    const size_t dsmem = sizeof(float) * 3 * (size_t)c->win_max;
    /* threads per cell of the dense MGVF and of the snake kernel beside it
     * (LT_CUDA_DENSE_THREADS=256, LT_CUDA_DENSE_SNAKE=256|1024: experiments) */
    const char *dt = getenv("LT_CUDA_DENSE_THREADS"), *snt = getenv("LT_CUDA_DENSE_SNAKE");
    c->dense_threads = dt && atoi(dt) == 256 ? 256 : DENSE_THREADS;
    c->dense_snake = snt && (atoi(snt) == 256 || atoi(snt) == 1024) ? atoi(snt) : NT / 2;
    /* LT_CUDA_DENSE_ROWS=1: the row-major layout (mgvf_dense_kernel), an experiment */
    const char *dr = getenv("LT_CUDA_DENSE_ROWS");
    c->dense_rows = dr && atoi(dr) == 1;
    /* LT_CUDA_DENSE_OCC=3: the transposed kernel compiled for 3 cells per SM (40 registers), an experiment */
    const char *doc = getenv("LT_CUDA_DENSE_OCC");
    c->dense_occ3 = doc && atoi(doc) == 3;
    c->dense_ok = dsmem + 2 * sizeof(double) * (c->dense_threads / 32) <= (size_t)optin;
    if (c->dense_ok && dsmem > 48 * 1024)
      LT_CU(cudaFuncSetAttribute(dense_fn(c), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dsmem),
            "raising the dense MGVF kernel's shared memory");
    c->mgvf_mode = mv && !strcmp(mv, "cluster") ? 1 : mv && !strcmp(mv, "dense") && c->dense_ok ? 2 : 0;
    if (c->kp.mgvf_col > 0.0f) { /* LT_MGVF_COL: no cluster kernel for it; every cell on the dense one */
      if (!c->dense_ok) {
        lt_error("LT_MGVF_COL: this GPU's shared memory cannot hold the dense MGVF's window (LT_CUDA_MGVF=block "
                 "runs it on the one-block path)");
        return LT_ERR_GPU;
      }
      c->mgvf_mode = 2;
    }
    c->sms = sms;
    lt_info("cuda: tracking split over clusters (window %d, MGVF %d blocks per cell%s)", c->wcluster, c->cluster,
            c->mgvf_mode == 1 ? "" : c->mgvf_mode == 2 ? "; dense MGVF forced" : "; dense MGVF with several videos");
  }
  return 0;
}

int lt_cu_track_launch(lt_cu_ctx *c, int n)
{
  size_t wf = c->track_smem / sizeof(float);
  if (c->track_in_shared)
    track_kernel<true><<<n, NT, c->track_smem, c->stream>>>(c->d_frame, c->kp, c->d_cells, n, NULL, wf,
                                                             c->win_max, c->d_err);
  else
    track_kernel<false><<<n < c->work_blocks ? n : c->work_blocks, NT, 0, c->stream>>>(
        c->d_frame, c->kp, c->d_cells, n, c->d_work, wf, c->win_max, c->d_err);
  LT_CU(cudaGetLastError(), "the tracking kernel launch");
  return 0;
}

/* a launch configuration with a cluster dimension */
static cudaLaunchConfig_t cluster_cfg(cudaLaunchAttribute *at, int blocks, int threads, size_t smem, int cl,
                                      cudaStream_t st)
{
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = cl;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cfg;
}

/* The split path: window kernel, cluster MGVF, snake kernel, in batches of
 * c->split_cap cells. */
int lt_cu_track_split_launch(lt_cu_ctx *c, int n)
{
  const int CL = c->cluster;
  int rows_cap, wcap;
  const size_t csmem = mgvf_cluster_smem(c, &rows_cap, &wcap);
  const int S = 2 * c->p.search + 1;
  const size_t gsb = sizeof(double) * (size_t)S * S * lt_leuk_nradii(&c->p);
  for (int b = 0; b < n; b += c->split_cap) {
    int k = n - b < c->split_cap ? n - b : c->split_cap;
    lt_leuk_cell *cells = c->d_cells + b;
    cudaLaunchAttribute at[1];
    lt_cu_tic(c, T_TWIN);
    cudaLaunchConfig_t cfg = cluster_cfg(at, k * c->wcluster, WIN_THREADS, gsb, c->wcluster, c->stream);
    for (int rep = c->twice & LT_TW_WINDOW ? 2 : 1; rep > 0; rep--) /* LT_CUDA_TWICE=window: the same bits twice */
      LT_CU(cudaLaunchKernelEx(&cfg, window_kernel, (const float *)c->d_frame, c->kp, cells, c->win_max, c->d_err,
                               c->d_gwin, c->d_info),
            "the tracking (window) kernel launch");
    lt_cu_toc(c, T_TWIN);
    lt_cu_tic(c, T_TMGVF);
    /* LT_CUDA_TWICE=mgvf: first on a copy of the windows (F replaces E in
     * place), =copy: only that copy */
    const int mrep = c->twice & LT_TW_MGVF ? 2 : 1;
    if (c->twice & (LT_TW_MGVF | LT_TW_COPY))
      LT_CU(cudaMemcpyAsync(c->d_gwin2, c->d_gwin, sizeof(float) * (size_t)c->win_max * k, cudaMemcpyDeviceToDevice,
                            c->stream),
            "copying the windows (LT_CUDA_TWICE)");
    for (int rep = mrep; rep > 0; rep--) {
      float *gw = rep > 1 ? c->d_gwin2 : c->d_gwin;
      if (c->dense) {
        dense_fn(c)<<<k, c->dense_threads, sizeof(float) * 3 * c->snake_win, c->stream>>>(
            gw, (const lt_cu_win *)c->d_info, cells, c->kp, c->win_max);
        LT_CU(cudaGetLastError(), "the dense MGVF kernel launch");
      } else {
        cfg = cluster_cfg(at, k * CL, c->mgvf_threads, csmem, CL, c->stream);
        LT_CU(cudaLaunchKernelEx(&cfg, mgvf_cluster_kernel, gw, (const lt_cu_win *)c->d_info, cells, c->kp,
                                 c->win_max, rows_cap, wcap, c->mgvf_split),
              "the cluster MGVF kernel launch");
      }
    }
    lt_cu_toc(c, T_TMGVF);
    lt_cu_tic(c, T_TSNAKE);
    /* One block per cell, whose evolution runs on one warp: 1024 threads
     * (64 registers each: one block per SM) while the cells fit on the SMs,
     * else 512 or 256 so that two or four cells share an SM in one wave
     * (the status scores and F's gradient then take more rounds); 512
     * beside the dense MGVF (c->dense_snake). */
    const int snt = c->dense ? c->dense_snake : k <= c->work_blocks / 2 ? NT : k <= c->work_blocks ? NT / 2 : NT / 4;
    if (c->twice & LT_TW_SNAKE) { /* LT_CUDA_TWICE=snake: first on a copy of the cells */
      LT_CU(cudaMemcpyAsync(c->d_cells2, cells, sizeof(lt_leuk_cell) * k, cudaMemcpyDeviceToDevice, c->stream),
            "copying the cells (LT_CUDA_TWICE)");
      snake_kernel<<<k, snt, sizeof(float) * 3 * c->snake_win, c->stream>>>(c->d_frame, c->kp, c->d_cells2,
                                                                         c->win_max, c->d_gwin, c->d_info);
    }
    snake_kernel<<<k, snt, sizeof(float) * 3 * c->snake_win, c->stream>>>(c->d_frame, c->kp, cells, c->win_max,
                                                                       c->d_gwin, c->d_info);
    LT_CU(cudaGetLastError(), "the tracking (snake) kernel launch");
    lt_cu_toc(c, T_TSNAKE);
  }
  return 0;
}

/* Test access: E in d_win[0..w*h), F to d_win[win_max..], the iteration
 * count to d_iters. With LT_CUDA_MGVF=dense on the split path the dense
 * kernel of the settings (layout, threads per cell) runs on cell slot 0,
 * else the one-block MGVF kernel. */
int lt_cu_mgvf_launch(lt_cu_ctx *c, int w, int h)
{
  if (c->cluster && c->mgvf_mode == 2 && c->dense_ok) {
    const size_t n = (size_t)w * h;
    lt_cu_win I;
    memset(&I, 0, sizeof I);
    I.w = w;
    I.h = h;
    LT_CU(cudaMemcpyAsync(c->d_gwin, c->d_win, sizeof(float) * n, cudaMemcpyDeviceToDevice, c->stream),
          "copying a window");
    LT_CU(cudaMemcpyAsync(c->d_info, &I, sizeof I, cudaMemcpyHostToDevice, c->stream), "uploading a window's size");
    dense_fn(c)<<<1, c->dense_threads, sizeof(float) * 3 * n, c->stream>>>(c->d_gwin, (const lt_cu_win *)c->d_info,
                                                                          c->d_cells, c->kp, c->win_max);
    LT_CU(cudaGetLastError(), "the dense MGVF kernel launch");
    LT_CU(cudaMemcpyAsync(c->d_win + c->win_max, c->d_gwin, sizeof(float) * n, cudaMemcpyDeviceToDevice, c->stream),
          "copying the MGVF field");
    LT_CU(cudaMemcpyAsync(c->d_iters, &c->d_cells[0].mgvf_iter, sizeof(int), cudaMemcpyDeviceToDevice, c->stream),
          "copying the MGVF iteration count");
    c->dev_cells = -1; /* cell 0's state on the device changed: the next track uploads them all */
    return 0;
  }
  if (c->track_in_shared)
    mgvf_kernel<true><<<1, NT, c->track_smem, c->stream>>>(c->d_win, w, h, c->win_max, c->kp, NULL, c->d_iters);
  else
    mgvf_kernel<false><<<1, NT, 0, c->stream>>>(c->d_win, w, h, c->win_max, c->kp, c->d_work, c->d_iters);
  LT_CU(cudaGetLastError(), "the MGVF kernel launch");
  return 0;
}
