/* refine.cu - detection refinement on the GPU: the spline snake of spline.c
 * (algorithm spec 4.2-4.7), one warp per candidate, reading the ROI gradients
 * that detect left on the device.
 *
 * The 36 spline samples are spread over the warp's lanes (lane and lane+32).
 * Each sample's contribution to its four control points goes to shared
 * memory; lanes 0..8 then add the contributions of their control point in
 * the CPU's loop order (segment i ascending, then sample j), so sums match
 * the CPU's up to contraction of a*b+c. Tables (B-spline basis, the 9x36
 * least-squares fit matrix) are built on the host by the same Gauss-Jordan
 * as spline.c and live in constant memory. Double precision throughout.
 *
 * The same kernel also refines ahead (issue 15): right after a split
 * detection (detect_start) it takes its jobs from the detection's maxima list
 * on the device, every maximum whose |GICOV| exceeds the threshold the
 * pipeline will apply (a band's: detect_start's lo) or else the lowest it can
 * apply (the entry ROI's, the next frame's band made ahead), on the
 * detection's stream beside the tracking, and
 * appends each result with its ROI index to a list (order by an atomic
 * counter; the host sorts it by index). A job's arithmetic does not depend on
 * where it came from or on the other jobs, so the pipeline's later refine of
 * any subset of those maxima is a lookup with the same bits. */
#include <math.h>
#include <string.h>
#include <cuda_runtime.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "leuk_cuda.h"

#define NS 4
#define NC LT_LEUK_CTRL
#define NP (NC * NS)
#define WARPS 4

__constant__ double c_basis[4][NS], c_dbasis[4][NS], c_fitA[NC][NP];

int lt_cu_refine_init(void)
{
  /* the CPU's own tables (spline.c), so both backends fit the same spline */
  double basis[4][NS], dbasis[4][NS], fitA[NC][NP];
  lt_spline_tables(basis, dbasis, fitA);
  LT_CU(cudaMemcpyToSymbol(c_basis, basis, sizeof basis), "uploading the spline tables");
  LT_CU(cudaMemcpyToSymbol(c_dbasis, dbasis, sizeof dbasis), "uploading the spline tables");
  LT_CU(cudaMemcpyToSymbol(c_fitA, fitA, sizeof fitA), "uploading the spline tables");
  return 0;
}

typedef struct warp_smem {
  double Cx[NC], Cy[NC];
  double px[NP], py[NP];       /* initial circle, then final samples */
  double tx[NP][4], ty[NP][4]; /* per-sample contributions */
} warp_smem;

/* Spline sample k (segment i, sample j) of the curve with control points C. */
static __device__ __forceinline__ void spl(const double *C, int k, double *v, double *dv)
{
  int i = k / NS, j = k - i * NS;
  double a = 0, b = 0;
  for (int q = 0; q < 4; q++) {
    double c = C[(i - 1 + q + NC) % NC];
    a += c_basis[q][j] * c;
    b += c_dbasis[q][j] * c;
  }
  *v = a;
  *dv = b;
}

/* Jobs in[0..n) into out[0..n), one per warp; or, with in NULL, the jobs
 * of the maxima list maxbuf (count at [0], entries from [4], at most maxcap)
 * whose |GICOV| exceeds lo, warps striding over the list, into the list
 * ahead (count at [0], entries from [4], at most acap). */
__global__ void __launch_bounds__(32 * WARPS) refine_kernel(const float *__restrict__ gx,
                                                            const float *__restrict__ gy, int w, int h,
                                                            const lt_cu_refine_in *in, int n,
                                                            const int *maxbuf, int maxcap, double lo,
                                                            double delta, double dt, int iters, double border,
                                                            int x_off, int y_off, int fw, int fh,
                                                            lt_cu_refine_out *out, int *ahead, int acap)
{
  __shared__ warp_smem S[WARPS];
  const int lane = threadIdx.x & 31, wi = threadIdx.x >> 5;
  warp_smem &s = S[wi];
  const int total = in ? n : min(maxbuf[0], maxcap);
  const int stride = in ? n : gridDim.x * WARPS;
  for (int cand = blockIdx.x * WARPS + wi; cand < total; cand += stride) { /* whole warps */
    lt_cu_refine_in J;
    int idx = 0;
    if (in) {
      J = in[cand];
    } else {
      const lt_cu_max m = ((const lt_cu_max *)(maxbuf + 4))[cand];
      if (!(fabsf(m.gicov) > lo)) continue;
      idx = m.idx;
      J.x0 = m.idx % w; /* as cu_refine: the maximum's ROI coordinates */
      J.y0 = m.idx / w;
      J.r0 = m.radius;
      J.sign = m.gicov >= 0 ? 1 : -1;
      J.pad = 0;
    }
    for (int k = lane; k < NP; k += 32) {
      double t = k * 2.0 * M_PI / NP;
      s.px[k] = J.x0 + J.r0 * cos(t);
      s.py[k] = J.y0 + J.r0 * sin(t);
    }
    __syncwarp();
    if (lane < NC) {
      double ax = 0, ay = 0;
      for (int k = 0; k < NP; k++) {
        ax += c_fitA[lane][k] * s.px[k];
        ay += c_fitA[lane][k] * s.py[k];
      }
      s.Cx[lane] = ax;
      s.Cy[lane] = ay;
    }
    __syncwarp();
    const double step = (J.sign >= 0 ? 1.0 : -1.0) * dt;
    for (int it = 0; it < iters; it++) {
      for (int k = lane; k < NP; k += 32) {
        int j = k % NS;
        double X, Xs, Y, Ys;
        spl(s.Cx, k, &X, &Xs);
        spl(s.Cy, k, &Y, &Ys);
        double D = sqrt(Xs * Xs + Ys * Ys);
        if (!(D > 0)) {
          for (int q = 0; q < 4; q++) s.tx[k][q] = s.ty[k][q] = 0.0;
          continue;
        }
        double D3 = D * D * D, Nx = Ys / D, Ny = -Xs / D;
        double X1 = X + delta * Nx, Y1 = Y + delta * Ny;
        double X2 = X - delta * Nx, Y2 = Y - delta * Ny;
        double Ix1 = lt_interp(gx, w, h, X1, Y1), Iy1 = lt_interp(gy, w, h, X1, Y1);
        double Ix2 = lt_interp(gx, w, h, X2, Y2), Iy2 = lt_interp(gy, w, h, X2, Y2);
        double XY = Xs * Ys, XX = Xs * Xs, YY = Ys * Ys;
        for (int q = 0; q < 4; q++) {
          double A = c_basis[q][j], Bd = c_dbasis[q][j];
          double Tx1 = A - delta * XY * Bd / D3, Tx2 = -delta * (Bd / D - XX * Bd / D3);
          double Tx3 = A + delta * XY * Bd / D3, Tx4 = delta * (Bd / D - XX * Bd / D3);
          double Ty1 = delta * (Bd / D - YY * Bd / D3), Ty2 = A + delta * XY * Bd / D3;
          double Ty3 = -delta * (Bd / D - YY * Bd / D3), Ty4 = A - delta * XY * Bd / D3;
          s.tx[k][q] = Tx1 * Ix1 + Tx2 * Iy1 - Tx3 * Ix2 - Tx4 * Iy2;
          s.ty[k][q] = Ty1 * Ix1 + Ty2 * Iy1 - Ty3 * Ix2 - Ty4 * Iy2;
        }
      }
      __syncwarp();
      if (lane < NC) {
        const int c = lane;
        double dx = 0, dy = 0;
        for (int i = 0; i < NC; i++) {
          int q = (c - i + 1 + 2 * NC) % NC; /* (i - 1 + q) % NC == c */
          if (q >= 4) continue;
          for (int j = 0; j < NS; j++) {
            dx += s.tx[i * NS + j][q];
            dy += s.ty[i * NS + j][q];
          }
        }
        s.Cx[c] += step * dx;
        s.Cy[c] += step * dy;
      }
      __syncwarp();
    }
    for (int k = lane; k < NP; k += 32) {
      double X, Xs, Y, Ys;
      spl(s.Cx, k, &X, &Xs);
      spl(s.Cy, k, &Y, &Ys);
      s.px[k] = X;
      s.py[k] = Y;
    }
    __syncwarp();
    if (lane == 0) {
      double mx = 0, my = 0;
      for (int c = 0; c < NC; c++) {
        mx += s.Cx[c];
        my += s.Cy[c];
      }
      mx /= NC;
      my /= NC;
      double mr = 0;
      int inside = 1;
      for (int k = 0; k < NP; k++) {
        mr += hypot(s.px[k] - mx, s.py[k] - my);
        double fx = s.px[k] + x_off, fy = s.py[k] + y_off;
        if (!(fx > border && fy > border && fx < fw - border && fy < fh - border)) inside = 0;
      }
      lt_cu_refine_out o;
      o.x = mx + x_off;
      o.y = my + y_off;
      o.r = mr / NP;
      o.ok = inside;
      o.pad = 0;
      if (in) {
        out[cand] = o;
      } else {
        const int slot = atomicAdd(ahead, 1);
        if (slot < acap) {
          lt_cu_refine_ahead *list = (lt_cu_refine_ahead *)(ahead + 4);
          list[slot].idx = idx;
          list[slot].pad = 0;
          list[slot].o = o;
        }
      }
    }
    __syncwarp(); /* lane 0 has read s before the warp's next job writes it */
  }
}

int lt_cu_refine_launch(lt_cu_ctx *c, int n)
{
  const lt_rect *roi = &c->last_roi;
  for (int rep = c->twice & LT_TW_REFINE ? 2 : 1; rep > 0; rep--) { /* LT_CUDA_TWICE=refine: the same jobs twice */
    refine_kernel<<<(n + WARPS - 1) / WARPS, 32 * WARPS, 0, c->stream>>>(
        c->ds.gx, c->ds.gy, roi->w, roi->h, c->d_rin, n, NULL, 0, 0.0, c->p.snake_delta, c->p.snake_dt,
        c->p.snake_iter, c->p.border, roi->x, roi->y, c->fw, c->fh, c->d_rout, NULL, 0);
    LT_CU(cudaGetLastError(), "the refinement kernel launch");
  }
  return 0;
}

/* After the detection on st whose maxima it refines: that detection's
 * gradient kernel cleared the list's count (one launch less than a memset). */
int lt_cu_refine_ahead_launch(lt_cu_ctx *c, const lt_rect *roi, double lo, cudaStream_t st)
{
  const int blocks = 2 * (c->sms > 0 ? c->sms : 1);
  refine_kernel<<<blocks, 32 * WARPS, 0, st>>>(c->ds.gx, c->ds.gy, roi->w, roi->h, NULL, 0, c->ds.maxbuf,
                                               (int)c->max_cap, lo, c->p.snake_delta, c->p.snake_dt,
                                               c->p.snake_iter, c->p.border, roi->x, roi->y, c->fw, c->fh, NULL,
                                               c->ds.ahead, c->ahead_cap);
  LT_CU(cudaGetLastError(), "the refinement-ahead kernel launch");
  return 0;
}
