/* track.cu - one tracking step for all cells without host round trips
 * (seeds/000 section 5.3). Two paths, the same arithmetic:
 *  - one launch (track_kernel MODE 0): block b tracks cells b, b+grid, ...
 *    with the cell's whole MGVF on that block (LT_CUDA_MGVF=block, or before
 *    Hopper);
 *  - three launches (default on sm_90+): MODE 1 (steps 1-4, E to global),
 *    mgvf_cluster_kernel (each cell's MGVF on a cluster of 8 blocks, rows
 *    split, halos through distributed shared memory), MODE 2 (steps 5-6).
 * Per cell, exactly lt_leuk_track_cell (track.c):
 *
 *  1. prediction p = centre + velocity;
 *  2. re-localisation: every (position within +-search of round(p), radius
 *     within one step of R) GICOV on its own thread (same double operations
 *     as lt_gicov_at), then per position the best radius and a block argmax
 *     (largest, strictly > 0, first in scan order on ties = the CPU loop),
 *     then the sub-pixel parabola through the best circle's four neighbours;
 *  3. window of (2*round(4R)+1) x (2*round(2R)+1), clamped to the frame;
 *  4. E = |gradient| of the window, normalised (block min/max), then MGVF
 *     (mgvf.c) iterated to convergence entirely in shared memory: pure Jacobi
 *     with two F buffers, ONE __syncthreads per iteration (the mean |change|
 *     is reduced per warp into a double-buffered partial array that every
 *     warp sums with the same shuffle butterfly after the barrier, so all
 *     threads take the same exit). The Heaviside is a select except in its
 *     1e-6 band around 0, where the exact formula is used (as mgvf.c). Non-contracted float arithmetic: bit-identical to
 *     the CPU except atanf in the |z| <= 1e-6 band of the Heaviside;
 *  5. gradient of F normalised, ellipse evolution (evolve.c) on warp 0, one
 *     lane per snaxel, the sums over snaxels in the CPU's order;
 *  6. GICOV within one pixel of the new centre over all radii, status.
 *
 * Shared memory: 3 windows of floats (E, F, F') = 3*(8R+1)*(4R+1)*4 bytes,
 * 189 KB for R = rmax + rstep = 22; the H100 grants 227 KB per block after
 * cudaFuncSetAttribute. When a device grants less, the same kernel runs
 * with the windows in global memory (one slice per resident block). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cooperative_groups.h>
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

static __device__ __forceinline__ float heav(float z)
{
  if (z > 1e-6f) return 1.0f;
  if (z < -1e-6f) return 0.0f;
  return __fadd_rn(0.5f, __fmul_rn(atanf(__fmul_rn(z, 1e10f)), (float)M_1_PI));
}

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

/* z in the band where the step differs from the exact Heaviside */
static __device__ __forceinline__ bool nearz(float z) { return fabsf(z) <= 1e-6f && z != 0.0f; }

/* One MGVF pixel: mgvf.c's pixel()/row_interior() bit for bit (no
 * contraction). H is a select unless an argument lies in the 1e-6 band
 * around 0 (rare), then exact; same sums in the same order. *c = old value. */
static __device__ __forceinline__ float mgvf_pixel(const float *ru, const float *rc, const float *rd, int j,
                                                   int w, float e, float ml, float il, float *cp)
{
  const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
  const float c = rc[j];
  const float dU = ru[j] - c, dD = rd[j] - c, dL = rc[jl] - c, dR = rc[jr] - c;
  const float dUR = ru[jr] - c, dDR = rd[jr] - c, dUL = ru[jl] - c, dDL = rd[jl] - c;
  float s;
  if (!(nearz(dU) | nearz(dD) | nearz(dL) | nearz(dR) | nearz(__fmul_rn(2.0f, dDR)) |
        nearz(__fmul_rn(2.0f, dUL)))) {
    s = -dU > 1e-6f ? dU : 0.0f;
    s = __fadd_rn(s, dD > 1e-6f ? dD : 0.0f);
    s = __fadd_rn(s, -dL > 1e-6f ? dL : 0.0f);
    s = __fadd_rn(s, dR > 1e-6f ? dR : 0.0f);
    s = __fadd_rn(s, __fmul_rn(0.5f, dUR));
    s = __fadd_rn(s, __fmul_rn(2.0f, dDR) > 1e-6f ? dDR : 0.0f);
    s = __fadd_rn(s, __fmul_rn(-2.0f, dUL) > 1e-6f ? dUL : 0.0f);
    s = __fadd_rn(s, __fmul_rn(0.5f, dDL));
  } else {
    s = __fmul_rn(heav(-dU), dU);
    s = __fadd_rn(s, __fmul_rn(heav(dD), dD));
    s = __fadd_rn(s, __fmul_rn(heav(-dL), dL));
    s = __fadd_rn(s, __fmul_rn(heav(dR), dR));
    s = __fadd_rn(s, __fmul_rn(0.5f, dUR));
    s = __fadd_rn(s, __fmul_rn(heav(__fmul_rn(2.0f, dDR)), dDR));
    s = __fadd_rn(s, __fmul_rn(heav(__fmul_rn(-2.0f, dUL)), dUL));
    s = __fadd_rn(s, __fmul_rn(0.5f, dDL));
  }
  const float fp = __fadd_rn(c, __fmul_rn(ml, s));
  *cp = c;
  return __fsub_rn(fp, __fmul_rn(__fmul_rn(il, e), __fsub_rn(fp, e)));
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

typedef struct evo_smem {
  double h[NSX], vf[NSX], vfx[NSX], vfy[NSX], d[NSX];
} evo_smem;

/* lt_evolve on warp 0 (F, fx, fy already computed). */
static __device__ int evolve_warp(const float *F, const float *fx, const float *fy, int w, int h, double *xc,
                                  double *yc, double *r, double R, double ey, const lt_cu_params &P,
                                  evo_smem &S)
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
    if (on) {
      S.h[j] = hypot(sxk - sx, syk - sy);
      S.vf[j] = lt_interp(F, w, h, sx, sy);
      S.vfx[j] = lt_interp(fx, w, h, sx, sy);
      S.vfy[j] = lt_interp(fy, w, h, sx, sy);
    }
    __syncwarp();
    double L = 0, sf = 0, sfx = 0, sfy = 0;
    for (int q = 0; q < NSX; q++) {
      L += S.h[q];
      sf += S.vf[q];
      sfx += S.vfx[q];
      sfy += S.vfy[q];
    }
    if (!(L > 0)) break;
    double vfmean = sf / L, vfxmean = sfx / L, vfymean = sfy / L;
    double nx = x + DELTA * L_EDGE * vfxmean;
    double ny = (y + DELTA * L_EDGE * vfymean + DELTA * L_PATH * ey) / (1 + DELTA * L_PATH);
    double diff = fabs(nx - x) + fabs(ny - y);
    double nr = 0;
    if (on) {
      double vfr = (S.vf[j] + S.vfx[j] * (sx - x) + S.vfy[j] * (sy - y) - vfmean) / L;
      nr = (rj + DELTA * L_EDGE * vfr + DELTA * L_SIZE * R) / (1 + DELTA * L_SIZE);
    }
    __syncwarp(); /* everyone has read S.vf before S.d aliases nothing, but keep order simple */
    if (on) S.d[j] = fabs(nr - rj);
    __syncwarp();
    for (int q = 0; q < NSX; q++) diff += S.d[q];
    if (on) rj = nr;
    x = nx;
    y = ny;
    __syncwarp();
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

/* (value, index) argmax: larger value wins, ties go to the smaller index. */
static __device__ __forceinline__ void better(double &v, int &p, double v2, int p2)
{
  if (v2 > v || (v2 == v && p2 < p)) {
    v = v2;
    p = p2;
  }
}

/* MODE 0: the whole step. MODE 1: steps 1-4 only, E to gwin[cell], the
 * window to info[cell]. MODE 2: steps 5-6 on F from gwin[cell] (computed by
 * mgvf_cluster_kernel). */
template <bool SH, int MODE>
__global__ void __launch_bounds__(NT, 1) track_kernel(const float *__restrict__ frame, lt_cu_params P,
                                                      lt_leuk_cell *cells, int n, float *gwork,
                                                      size_t work_floats, int win_max, int *err,
                                                      float *gwin, lt_cu_win *info)
{
  extern __shared__ __align__(16) float dsm[];
  __shared__ lt_leuk_cell C;
  __shared__ double red[2][NW];
  __shared__ double redv[NW];
  __shared__ int redp[NW];
  __shared__ float redmin[NW], redmax[NW];
  __shared__ evo_smem ES;
  __shared__ double s_xc, s_yc;
  __shared__ int s_it;
  float *buf = SH ? dsm : gwork + (size_t)blockIdx.x * work_floats;
  double *gs = (double *)buf;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int fw = P.fw, fh = P.fh;

  for (int ci = blockIdx.x; ci < n; ci += gridDim.x) {
    __syncthreads();
    if (tid == 0) C = cells[ci];
    __syncthreads();
    const double R = C.R;
    const int sign = C.sign;
    const double px = C.xc + C.vx, py = C.yc + C.vy;
    double qx, qy;
    int u1, v1, w, h, mit = 0;
    const double oldx = C.xc, oldy = C.yc;
    float *F = buf;
    if constexpr (MODE == 2) {
      const lt_cu_win I = info[ci];
      if (I.skip) continue;
      qx = I.qx;
      qy = I.qy;
      u1 = I.u1;
      v1 = I.v1;
      w = I.w;
      h = I.h;
      mit = C.mgvf_iter;
      const float *src = gwin + (size_t)ci * win_max;
      for (int t = tid; t < w * h; t += NT) F[t] = src[t];
      __syncthreads();
    } else {

    /* 2. re-localisation */
    const int ix = (int)lround(px), iy = (int)lround(py);
    unsigned kmask = 0;
    for (int k = 0; k < P.nradii; k++)
      if (!(R > 0 && fabs(P.radius[k] - R) > P.rstep + 1e-9)) kmask |= 1u << k;
    const int K = __popc(kmask);
    const int S = 2 * P.search + 1, NPOS = S * S, T = NPOS * K;
    for (int t = tid; t < T; t += NT) {
      int pos = t / K, kk = t - pos * K;
      unsigned m = kmask;
      for (int q = 0; q < kk; q++) m &= m - 1;
      int k = __ffs(m) - 1;
      int dy = pos / S - P.search, dx = pos % S - P.search;
      gs[t] = lt_cu_gicov_at(frame, fw, fh, ix + dx, iy + dy, P, k);
    }
    __syncthreads();
    double bv = 0.0;
    int bp = 0x7fffffff;
    for (int pos = tid; pos < NPOS; pos += NT) {
      double b = -INFINITY;
      for (int kk = 0; kk < K; kk++) {
        double g = gs[pos * K + kk];
        if (sign * g > b) b = sign * g;
      }
      /* best_gicov returns b*sign; the caller compares sign*(b*sign) = b */
      if (K > 0 && b > 0.0) better(bv, bp, b, pos);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      double v2 = __shfl_xor_sync(0xffffffffu, bv, o);
      int p2 = __shfl_xor_sync(0xffffffffu, bp, o);
      better(bv, bp, v2, p2);
    }
    if (lane == 0) {
      redv[warp] = bv;
      redp[warp] = bp;
    }
    __syncthreads();
    bv = 0.0;
    bp = 0x7fffffff;
    for (int q = 0; q < NW; q++) better(bv, bp, redv[q], redp[q]);
    qx = px;
    qy = py;
    if (bp != 0x7fffffff) {
      qx = ix + (bp % S - P.search);
      qy = iy + (bp / S - P.search);
      /* sub-pixel: parabola through the scores of the best circle (track.c) */
      double b = -INFINITY;
      int kb = 0;
      for (int kk = 0; kk < K; kk++) {
        double g = gs[bp * K + kk];
        if (sign * g > b) {
          b = sign * g;
          kb = kk;
        }
      }
      unsigned m = kmask;
      for (int q = 0; q < kb; q++) m &= m - 1;
      const int kq = __ffs(m) - 1, x0 = (int)qx, y0 = (int)qy;
      __syncthreads(); /* gs read by all before it is reused */
      if (tid < 4) {
        int ddx = tid == 0 ? -1 : tid == 1 ? 1 : 0, ddy = tid == 2 ? -1 : tid == 3 ? 1 : 0;
        gs[tid] = sign * lt_cu_gicov_at(frame, fw, fh, x0 + ddx, y0 + ddy, P, kq);
      }
      __syncthreads();
      const double sl = gs[0], sr = gs[1], su = gs[2], sd = gs[3];
      const double cxv = sl - 2 * bv + sr, cyv = su - 2 * bv + sd;
      if (cxv < 0) qx += fmax(-0.5, fmin(0.5, 0.5 * (sl - sr) / cxv));
      if (cyv < 0) qy += fmax(-0.5, fmin(0.5, 0.5 * (su - sd) / cyv));
    }

    /* 3. window */
    const int hx = (int)(4 * R + 0.5), hy = (int)(2 * R + 0.5);
    u1 = (int)floor(qx) - hx;
    int u2 = (int)floor(qx) + hx;
    v1 = (int)floor(qy) - hy;
    int v2 = (int)floor(qy) + hy;
    if (u1 < 0) u1 = 0;
    if (v1 < 0) v1 = 0;
    if (u2 > fw - 1) u2 = fw - 1;
    if (v2 > fh - 1) v2 = fh - 1;
    w = u2 - u1 + 1;
    h = v2 - v1 + 1;
    if (w < 3 || h < 3 || (long)w * h > win_max) {
      if (tid == 0) {
        if (w < 3 || h < 3) C.status = LT_CELL_LEFT;
        else atomicExch(err, 1);
        cells[ci] = C;
        if (MODE == 1) info[ci].skip = 1;
      }
      continue;
    }
    const int nwin = w * h;
    float *E = buf, *F0 = buf + nwin, *F1 = buf + 2 * nwin;
    __syncthreads(); /* gs (aliasing buf) fully read */

    /* 4. E = |gradient| of the window, normalised */
    float lo = INFINITY, hi = -INFINITY;
    for (int i = warp; i < h; i += NW)
      for (int j = lane; j < w; j += 32) {
        float gxv, gyv;
        grad_at(frame + (size_t)v1 * fw + u1, fw, w, h, i, j, &gxv, &gyv);
        float e = __fsqrt_rn(__fadd_rn(__fmul_rn(gxv, gxv), __fmul_rn(gyv, gyv)));
        E[i * w + j] = e;
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
    for (int q = 1; q < NW; q++) {
      lo = fminf(lo, redmin[q]);
      hi = fmaxf(hi, redmax[q]);
    }
    const double scale = 1.0 / ((double)hi - lo + 0x1p-52);
    for (int t = tid; t < nwin; t += NT) {
      float e = (float)((double)(E[t] - lo) * scale);
      E[t] = e;
      F0[t] = e;
    }
    __syncthreads();
    if constexpr (MODE == 1) {
      float *dst = gwin + (size_t)ci * win_max;
      for (int t = tid; t < nwin; t += NT) dst[t] = E[t];
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
      continue;
    } else {
      mit = mgvf_block(E, F0, F1, w, h, P, red, &F);
    }
    }
    float *fx = buf + w * h, *fy = buf + 2 * w * h;
    if (MODE == 0) {
      fx = buf;
      fy = (F == buf + w * h) ? buf + 2 * w * h : buf + w * h;
    }
    __syncthreads();

    /* 5. normalised gradient of F, evolution */
    for (int i = warp; i < h; i += NW)
      for (int j = lane; j < w; j += 32) {
        float a, b;
        grad_at(F, w, w, h, i, j, &a, &b);
        float m = __fsqrt_rn(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b)));
        if (m > 0) {
          a = a / m;
          b = b / m;
        }
        fx[i * w + j] = a;
        fy[i * w + j] = b;
      }
    __syncthreads();
    if (warp == 0) {
      double xc = qx - u1, yc = qy - v1;
      int eit = evolve_warp(F, fx, fy, w, h, &xc, &yc, C.r, R, qy - v1, P, ES);
      if (lane == 0) {
        s_xc = xc + u1;
        s_yc = yc + v1;
        s_it = eit;
        if (MODE == 0) C.mgvf_iter = mit;
        C.evolve_iter = eit;
      }
    }
    __syncthreads();

    /* 6. GICOV near the new centre over all radii, status */
    const double nxc = s_xc, nyc = s_yc;
    const int cx = (int)lround(nxc), cy = (int)lround(nyc);
    const int T2 = 9 * P.nradii;
    for (int t = tid; t < T2; t += NT) {
      int pos = t / P.nradii, k = t - pos * P.nradii;
      gs[t] = lt_cu_gicov_at(frame, fw, fh, cx + pos % 3 - 1, cy + pos / 3 - 1, P, k);
    }
    __syncthreads();
    if (tid == 0) {
      double bg = 0;
      for (int pos = 0; pos < 9; pos++) {
        double b = -INFINITY;
        for (int k = 0; k < P.nradii; k++) {
          double g = gs[pos * P.nradii + k];
          if (sign * g > b) b = sign * g;
        }
        double g = b == -INFINITY ? 0.0 : b * sign;
        if (sign * g > sign * bg) bg = g;
      }
      C.xc = nxc;
      C.yc = nyc;
      C.vx = nxc - oldx;
      C.vy = nyc - oldy;
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
      cells[ci] = C;
    }
  }
}

/* MGVF of the windows in gwin, one CLUSTER of blocks per cell: block `rank`
 * holds rows [rank*rows, (rank+1)*rows) of E and of the two F buffers plus
 * one halo row above and below in its shared memory. Each iteration a block
 * updates its rows, stores its first/last new row straight into the
 * neighbours' halo rows (distributed shared memory), adds its |change| into
 * every block's partial slot, and the cluster barrier ends the iteration;
 * every block then sums the partials in rank order and takes the same exit.
 * Same per-pixel arithmetic as mgvf_block. F replaces E in gwin. */
__global__ void __launch_bounds__(256) mgvf_cluster_kernel(float *gwin, const lt_cu_win *info,
                                                           lt_leuk_cell *cells, lt_cu_params P, int win_max,
                                                           int rows_cap, int wcap)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 /* clusters: Hopper and newer */
  namespace cg = cooperative_groups;
  cg::cluster_group cl = cg::this_cluster();
  extern __shared__ __align__(16) float dsm[];
  __shared__ double part[2][16];
  __shared__ double wpart[8];
  const int CL = (int)cl.num_blocks(), rank = (int)cl.block_rank();
  const int ci = blockIdx.x / CL;
  const lt_cu_win I = info[ci];
  if (I.skip) return; /* the whole cluster */
  const int w = I.w, h = I.h, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int rows = (h + CL - 1) / CL, r0 = rank * rows, r1 = min(h, r0 + rows), nr = max(0, r1 - r0);
  const size_t plane = (size_t)(rows_cap + 2) * wcap;
  float *E = dsm, *A = dsm + plane, *B = dsm + 2 * plane;
  float *g = gwin + (size_t)ci * win_max;
  /* local row l <-> global row r0 - 1 + l; own rows 1..nr; halos 0, nr+1 */
  for (int t = tid; t < (nr + 2) * w; t += blockDim.x) {
    int l = t / w, j = t - l * w, gr = r0 - 1 + l;
    float v = (gr >= 0 && gr < h && (l <= nr + 1)) ? g[(size_t)gr * w + j] : 0.0f;
    E[(size_t)l * w + j] = v;
    A[(size_t)l * w + j] = v;
  }
  float *upA = rank > 0 ? cl.map_shared_rank(A, rank - 1) : NULL;
  float *upB = rank > 0 ? cl.map_shared_rank(B, rank - 1) : NULL;
  float *dnA = rank < CL - 1 ? cl.map_shared_rank(A, rank + 1) : NULL;
  float *dnB = rank < CL - 1 ? cl.map_shared_rank(B, rank + 1) : NULL;
  cl.sync();
  const float ml = P.mgvf_ml, il = P.mgvf_il;
  const double n = (double)w * h;
  const int l0 = tid / w, j0 = tid - l0 * w; /* this thread's first pixel */
  float *cur = A, *nxt = B;
  bool curA = true;
  int it = 0, par = 0;
  while (it < P.mgvf_max_iter) {
    float *up = curA ? upB : upA, *dn = curA ? dnB : dnA; /* neighbours' nxt */
    const bool check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == P.mgvf_max_iter;
    double acc = 0.0;
    /* (row, column) of this thread's pixels advanced without a division
     * per pixel: the stride (blockDim.x) is at most two rows' worth */
    for (int l = 1 + l0, j = j0; l <= nr;) {
      const int gr = r0 - 1 + l;
      const float *rc = cur + (size_t)l * w;
      const float *ru = cur + (size_t)(gr > 0 ? l - 1 : l) * w;
      const float *rd = cur + (size_t)(gr < h - 1 ? l + 1 : l) * w;
      const float e = E[(size_t)l * w + j];
      float c;
      const float fn = mgvf_pixel(ru, rc, rd, j, w, e, ml, il, &c);
      nxt[(size_t)l * w + j] = fn;
      if (l == 1 && up) up[(size_t)(rows + 1) * w + j] = fn;   /* the block above's bottom halo */
      if (l == nr && r1 < h && dn) dn[j] = fn;                 /* the block below's top halo */
      if (check) acc += (double)fabsf(fn - c);
      j += (int)blockDim.x;
      while (j >= w) {
        j -= w;
        l++;
      }
    }
    if (check) { /* the |change| reduction only on check iterations */
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) wpart[warp] = acc;
      __syncthreads();
      if (tid < CL) {
        double b = 0.0;
        for (int q = 0; q < (int)(blockDim.x >> 5); q++) b += wpart[q];
        double *dst = cl.map_shared_rank(&part[par][0], tid);
        dst[rank] = b;
      }
    }
    cl.sync();
    double diff = 0.0;
    if (check)
      for (int q = 0; q < CL; q++) diff += part[par][q];
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    curA = !curA;
    par ^= 1;
    if (check && diff / n <= P.mgvf_tol) break;
  }
  for (int t = tid; t < nr * w; t += blockDim.x) {
    const int l = 1 + t / w, j = t - (l - 1) * w;
    g[(size_t)(r0 - 1 + l) * w + j] = cur[(size_t)l * w + j];
  }
  if (rank == 0 && tid == 0) cells[ci].mgvf_iter = it;
  cl.sync(); /* nobody leaves while a neighbour may still write its halo */
#endif
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

int lt_cu_track_setup(lt_cu_ctx *c)
{
  const lt_leuk_params *p = &c->p;
  double Rmax = p->rmax + p->rstep;
  int hx = (int)(4 * Rmax + 0.5), hy = (int)(2 * Rmax + 0.5);
  c->win_max = (2 * hx + 1) * (2 * hy + 1);
  int S = 2 * p->search + 1, nr = lt_leuk_nradii(p);
  size_t need = sizeof(float) * 3 * (size_t)c->win_max;
  size_t gsb = sizeof(double) * (size_t)S * S * nr;
  if (gsb > need) need = gsb;
  if (sizeof(double) * 9 * nr > need) need = sizeof(double) * 9 * nr;
  c->track_smem = need;
  int dev = 0, optin = 0, sms = 1;
  LT_CU(cudaGetDevice(&dev), "cudaGetDevice");
  LT_CU(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "querying shared memory");
  LT_CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "querying the SM count");
  cudaFuncAttributes fa;
  LT_CU(cudaFuncGetAttributes(&fa, track_kernel<true, 0>), "querying the tracking kernel");
  size_t static_smem = fa.sharedSizeBytes;
  c->track_in_shared = need + static_smem <= (size_t)optin;
  c->work_blocks = 2 * sms;
  if (c->track_in_shared) {
    LT_CU(cudaFuncSetAttribute(track_kernel<true, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the tracking kernel's shared memory");
    LT_CU(cudaFuncSetAttribute(track_kernel<true, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the tracking kernel's shared memory");
    LT_CU(cudaFuncSetAttribute(track_kernel<true, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the tracking kernel's shared memory");
    LT_CU(cudaFuncSetAttribute(mgvf_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need),
          "raising the MGVF kernel's shared memory");
    const char *mv = getenv("LT_CUDA_MGVF");
    int major = 0;
    LT_CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "querying the device");
    /* default on Hopper: MGVF split over a cluster of blocks per cell
     * (2.3x faster tracking at 30 cells on the H100); LT_CUDA_MGVF=block
     * keeps each cell's MGVF on one block */
    if (!(mv && !strcmp(mv, "block")) && major >= 9) {
      const char *cs = getenv("LT_CUDA_CLUSTER");
      c->cluster = cs && atoi(cs) >= 2 && atoi(cs) <= 16 ? atoi(cs) : 8;
      if (c->cluster > 8)
        LT_CU(cudaFuncSetAttribute(mgvf_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
              "allowing large clusters");
      c->split_cap = 512;
      const double Rm = p->rmax + p->rstep;
      const int wc = 2 * (int)(4 * Rm + 0.5) + 1, hc = 2 * (int)(2 * Rm + 0.5) + 1;
      const size_t csmem = sizeof(float) * 3 * (size_t)((hc + c->cluster - 1) / c->cluster + 2) * wc;
      if (csmem > 48 * 1024)
        LT_CU(cudaFuncSetAttribute(mgvf_cluster_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)csmem),
              "raising the cluster MGVF kernel's shared memory");
      size_t bytes = sizeof(float) * (size_t)c->win_max * c->split_cap;
      cudaError_t e = cudaMalloc(&c->d_gwin, bytes);
      if (e == cudaSuccess) e = cudaMalloc(&c->d_info, sizeof(lt_cu_win) * c->split_cap);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        lt_error("out of GPU memory allocating the tracking windows (%zu MB)", bytes >> 20);
        return LT_ERR_GPU;
      }
      lt_info("cuda: MGVF on clusters of %d blocks", c->cluster);
    }
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
  return 0;
}

int lt_cu_track_launch(lt_cu_ctx *c, int n)
{
  size_t wf = c->track_smem / sizeof(float);
  if (c->track_in_shared)
    track_kernel<true, 0><<<n, NT, c->track_smem, c->stream>>>(c->d_frame, c->kp, c->d_cells, n, NULL, wf,
                                                                c->win_max, c->d_err, NULL, NULL);
  else
    track_kernel<false, 0><<<n < c->work_blocks ? n : c->work_blocks, NT, 0, c->stream>>>(
        c->d_frame, c->kp, c->d_cells, n, c->d_work, wf, c->win_max, c->d_err, NULL, NULL);
  LT_CU(cudaGetLastError(), "the tracking kernel launch");
  return 0;
}

/* The split path (LT_CUDA_MGVF=cluster): steps 1-4, cluster MGVF, steps 5-6,
 * in batches of c->split_cap cells. */
int lt_cu_track_split_launch(lt_cu_ctx *c, int n)
{
  size_t wf = c->track_smem / sizeof(float);
  const int CL = c->cluster;
  const double Rmax = c->p.rmax + c->p.rstep;
  const int hx = (int)(4 * Rmax + 0.5), hy = (int)(2 * Rmax + 0.5);
  const int wcap = 2 * hx + 1, hcap = 2 * hy + 1, rows_cap = (hcap + CL - 1) / CL;
  const size_t csmem = sizeof(float) * 3 * (size_t)(rows_cap + 2) * wcap;
  for (int b = 0; b < n; b += c->split_cap) {
    int k = n - b < c->split_cap ? n - b : c->split_cap;
    lt_leuk_cell *cells = c->d_cells + b;
    track_kernel<true, 1><<<k, NT, c->track_smem, c->stream>>>(c->d_frame, c->kp, cells, k, NULL, wf, c->win_max,
                                                               c->d_err, c->d_gwin, c->d_info);
    LT_CU(cudaGetLastError(), "the tracking (window) kernel launch");
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(k * CL);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = csmem;
    cfg.stream = c->stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CL;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    LT_CU(cudaLaunchKernelEx(&cfg, mgvf_cluster_kernel, c->d_gwin, (const lt_cu_win *)c->d_info, cells, c->kp,
                             c->win_max, rows_cap, wcap),
          "the cluster MGVF kernel launch");
    track_kernel<true, 2><<<k, NT, c->track_smem, c->stream>>>(c->d_frame, c->kp, cells, k, NULL, wf, c->win_max,
                                                               c->d_err, c->d_gwin, c->d_info);
    LT_CU(cudaGetLastError(), "the tracking (snake) kernel launch");
  }
  return 0;
}

int lt_cu_mgvf_launch(lt_cu_ctx *c, int w, int h)
{
  if (c->track_in_shared)
    mgvf_kernel<true><<<1, NT, c->track_smem, c->stream>>>(c->d_win, w, h, c->win_max, c->kp, NULL, c->d_iters);
  else
    mgvf_kernel<false><<<1, NT, 0, c->stream>>>(c->d_win, w, h, c->win_max, c->kp, c->d_work, c->d_iters);
  LT_CU(cudaGetLastError(), "the MGVF kernel launch");
  return 0;
}
