/* detect.cu - detection kernels (algorithm spec 3.1-3.5; seeds/000 section
 * 5.3): gradient of the ROI, GICOV map over all radii, MG = GICOV^2, grey
 * dilation with a disc fused with the local-maxima test. Three launches per
 * detect, no host round trip between them.
 *
 *  gradient_kernel  lt_gradient on the ROI crop (central differences inside,
 *                   one-sided at the borders) straight from the frame: the
 *                   refinement's maps (the GICOV kernels sample the frame's
 *                   gradient, which equals it wherever a circle that fits
 *                   samples; circle_stats).
 *  gicov_kernel     one thread per pixel; for every radius whose circle fits
 *                   (radius_k + 1 px from the borders, as gicov.c) the 150 stencil
 *                   samples of the outward gradient, one-pass sums in float
 *                   shifted by the first sample, in stencil order, exactly
 *                   lt_gicov_map's operations (non-contracted), so the map
 *                   is bit-identical to the CPU's. Keeps the sign: the winning circle has the
 *                   largest mean^2/var, strictly greater, starting at 0.
 *  gicov_radii_kernel the same with one thread per (pixel, radius) and the
 *                   winner picked in radius order (the default for ROIs
 *                   larger than band_cap pixels; LT_CUDA_GICOV=pixel
 *                   selects gicov_kernel);
 *  gicov_task_kernel + gicov_pick_kernel  the same map of a narrow ROI (the
 *                   entry band): only the circles that fit (two pixels side
 *                   by side a thread), then the winner.
 *  dilate_max_kernel 32x32 output tile + disc halo in shared memory; each
 *                   output is the max over the disc's row runs (half-widths
 *                   computed as dilate.c does); out-of-image = 0, which is
 *                   the CPU's "skip, floor 0" since MG >= 0. A pixel with
 *                   MG != 0 and DIL == MG is appended to the maxima list
 *                   with an atomic counter; the host sorts the (few) entries
 *                   by index, which gives the CPU's scan order exactly. A
 *                   band's detection lists only the maxima over its caller's
 *                   threshold (detect_start's lo; the others are never used)
 *                   and tests only those pixels. */
#include <cuda_runtime.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "leuk_cuda.h"

#define DIL_TILE 32
#define DIL_ROWS 8 /* threads in y; each does DIL_TILE/DIL_ROWS rows */
#define DIL_MAXR 63 /* dilate.c's cap on the disc radius */

__global__ void gradient_kernel(const float *__restrict__ frame, int fw, lt_rect roi, float *gx, float *gy,
                                int *count, int *acount)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x == 0 && y == 0) {
    *count = 0;
    *acount = 0; /* the refinement ahead's list (refine.cu), made after this detection on its stream */
  }
  int w = roi.w, h = roi.h;
  if (x >= w || y >= h) return;
  const float *row = frame + (size_t)(roi.y + y) * fw + roi.x;
  float vx;
  if (w == 1) vx = 0.0f;
  else if (x == 0) vx = row[1] - row[0];
  else if (x == w - 1) vx = row[w - 1] - row[w - 2];
  else vx = __fmul_rn(row[x + 1] - row[x - 1], 0.5f);
  float vy;
  if (h == 1) {
    vy = 0.0f;
  } else {
    const float *up = row - (y > 0 ? fw : 0), *dn = row + (y < h - 1 ? fw : 0);
    float scale = (y > 0 && y < h - 1) ? 0.5f : 1.0f;
    vy = __fmul_rn(dn[x] - up[x], scale);
  }
  gx[(size_t)y * w + x] = vx;
  gy[(size_t)y * w + x] = vy;
}

/* Mean and variance of the outward gradient on the N stencil samples of
 * circle k at pixel (x, y) of the ROI, with gicov.c's operations in its
 * order (lt_gicov_map): the first sample's g = gx cos + gy sin (K, the
 * shift) and per further sample d = g - K, both as fused multiply-adds in
 * float, summed as sum += d, sq = fma(d, d, sq) in stencil order; then
 * mean = K + sum / N and var = (sq - sum * sum / N) / (N - 1) in double
 * (not contracted), so the map is bit-identical to the CPU's. The samples come from the frame's
 * gradient P.gradf (float2, one 8-byte load): a circle that fits in the
 * ROI (radius_k + 1 px from its borders) samples only the ROI's interior
 * pixels, where the ROI crop's central differences (lt_gradient) are the
 * frame's, to the bit. (Until 2026-11-24 the sums were in double from a
 * double2 gradient: 6 FP64 operations and 16 bytes a sample, the FP64 pipe
 * and L1 the limits; docs/PERFORMANCE.md.)
 * NF = LT_CU_TRIG_N (npoints is the default 150; detect's default): the
 * loop unrolled, cos/sin from T, a kernel parameter, so each multiply
 * reads its factor from the constant bank, the offsets two per load and
 * each sample's address one 32-bit add and one wide multiply-add from the
 * pixel's index (not 64-bit pointer arithmetic), and NP pixels per thread,
 * x, x + S, ... (S = 32, or 1 for the band's tasks; the offsets, constants
 * and addresses shared, the next pixel's sample at an immediate offset).
 * The same operations in the same order per pixel, so the same bits.
 * NF = 0: any npoints, the tables from global memory
 * (LT_CUDA_GICOV_TRIG=0 forces it), one pixel. */
template <int NF, int NP, int S = 32>
__device__ __forceinline__ void circle_stats_n(const lt_rect &roi, int x, int y, int k, const lt_cu_params &P,
                                               const lt_cu_trig &T, double *mean, double *var)
{
  static_assert(NF % 2 == 0 && (NF > 0 || NP == 1), "the offsets go two per load; NP > 1 needs NF");
  const int N = NF ? NF : P.npoints;
  float sum[NP], sq[NP], K[NP];
#pragma unroll
  for (int q = 0; q < NP; q++) sum[q] = sq[q] = K[q] = 0.0f;
  auto gval = [](const float2 g, const float cs, const float sn) { return __fmaf_rn(g.x, cs, __fmul_rn(g.y, sn)); };
  auto add = [&](int q, const float2 g, const float cs, const float sn) {
    const float d = __fmaf_rn(g.x, cs, __fmaf_rn(g.y, sn, -K[q]));
    sum[q] = __fadd_rn(sum[q], d);
    sq[q] = __fmaf_rn(d, d, sq[q]);
  };
  if (NF) {
    const int pix = (roi.y + y) * P.fw + roi.x + x;
    const int2 *off2 = (const int2 *)(P.off + k * NF); /* 8-byte aligned: NF even, P.off 256-aligned */
#pragma unroll
    for (int t = 0; t < NF; t += 2) {
      const int2 o = __ldg(off2 + t / 2);
      const float2 *a0 = P.gradf + (pix + o.x), *a1 = P.gradf + (pix + o.y);
#pragma unroll
      for (int q = 0; q < NP; q++) {
        const float2 g0 = __ldg(a0 + S * q), g1 = __ldg(a1 + S * q);
        if (t == 0) K[q] = gval(g0, T.c[0], T.s[0]); /* the shift, not itself added (gicov.c) */
        else add(q, g0, T.c[t], T.s[t]);
        add(q, g1, T.c[t + 1], T.s[t + 1]);
      }
    }
  } else {
    const int *off = P.off + k * N;
    const float2 *c0 = P.gradf + (size_t)(roi.y + y) * P.fw + roi.x + x;
    K[0] = gval(__ldg(c0 + __ldg(off)), __ldg(P.cosv), __ldg(P.sinv));
#pragma unroll 5
    for (int t = 1; t < N; t++) add(0, __ldg(c0 + __ldg(off + t)), __ldg(P.cosv + t), __ldg(P.sinv + t));
  }
#pragma unroll
  for (int q = 0; q < NP; q++) lt_cu_gicov_stats(K[q], sum[q], sq[q], N, mean + q, var + q);
}

/* one pixel */
template <int NF>
__device__ __forceinline__ void circle_stats(const lt_rect &roi, int x, int y, int k, const lt_cu_params &P,
                                             const lt_cu_trig &T, double *mean, double *var)
{
  circle_stats_n<NF, 1>(roi, x, y, k, P, T, mean, var);
}

template <int NF>
__global__ void gicov_kernel(lt_rect roi, int w, int h, lt_cu_params P, const __grid_constant__ lt_cu_trig T,
                             float *gicov, float *mg, unsigned char *ridx)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float out = 0.0f;
  int bk = 0;
  {
    double best = 0.0;
    for (int k = 0; k < P.nradii; k++) {
      /* circle k where it and its gradient stencil fit (gicov.c) */
      const int b = P.border_all ? P.border_all : P.radius[k] + 1;
      if (x < b || x >= w - b || y < b || y >= h - b) continue;
      double mean, var;
      circle_stats<NF>(roi, x, y, k, P, T, &mean, &var);
      double score = var > 0.0 ? __dmul_rn(mean, mean) / var : 0.0;
      if (score > best) {
        best = score;
        bk = k;
        out = (float)(mean / sqrt(var));
      }
    }
  }
  size_t i = (size_t)y * w + x;
  gicov[i] = out;
  mg[i] = __fmul_rn(out, out);
  ridx[i] = (unsigned char)bk;
}

/* The same map with one thread per (pixel, radius): each thread does the
 * 150 samples of one circle (the sums in the same order as gicov_kernel),
 * then the first radius thread of each pixel picks the winner in radius
 * order with the same strict comparison from 0. 13 times more threads with
 * 1/13 of the serial work each: a band of the entry ROI (~12 000 pixels)
 * fills the GPU instead of a third of it. Bit-identical to gicov_kernel.
 * NP pixels per thread (x, x + 32, ...; 2 with the fixed sample count):
 * the circle's offsets, constants and addresses serve both (H100
 * 2026-11-24, ncu: see circle_stats_n). */
template <int NF, int NP>
__global__ void __launch_bounds__(1024)
    gicov_radii_kernel(lt_rect roi, int w, int h, lt_cu_params P, const __grid_constant__ lt_cu_trig T, float *gicov,
                       float *mg, unsigned char *ridx)
{
  constexpr int BW = 32 * NP; /* pixels of a block's row: thread tx takes tx, tx + 32, ... */
  extern __shared__ double shs[]; /* score[nradii][BW], then float g[nradii][BW] */
  const int tx = threadIdx.x, k = threadIdx.y, nr = P.nradii;
  const int x0 = blockIdx.x * BW + tx, y = blockIdx.y;
  double *score = shs;
  float *gk = (float *)(shs + nr * BW);
  double sc[NP], mean[NP], var[NP];
  float g[NP];
  bool fit[NP];
  const int b = P.border_all ? P.border_all : P.radius[k] + 1;
  const bool yfit = !(y < b || y >= h - b); /* the same for the warp (one radius, one row) */
#pragma unroll
  for (int q = 0; q < NP; q++) {
    const int x = x0 + 32 * q;
    fit[q] = x < w && yfit && !(x < b || x >= w - b);
    sc[q] = 0.0;
    g[q] = 0.0f;
  }
  if (yfit && x0 + 32 * (NP - 1) < w) {
    /* all NP pixels, also those within b of the ROI's left or right border
     * (their sums are thrown away), so that the lanes of a warp take one path
     * (ncu, H100 2026-11-24: the border lanes' one-at-a-time path beside it
     * cost 15-20 % more FP64 instructions over a 640-px ROI). Their samples
     * stay in the frame's gradient: rows within the ROI (yfit), a column
     * off a row's end lands on the next or previous row (at most radius
     * px, and rows y - radius >= 1 and y + radius <= h - 2 exist). */
    circle_stats_n<NF, NP>(roi, x0, y, k, P, T, mean, var);
  } else { /* the last columns: the pixels whose circle fits, one at a time */
#pragma unroll
    for (int q = 0; q < NP; q++) {
      mean[q] = var[q] = 0.0;
      if (fit[q]) circle_stats_n<NF, 1>(roi, x0 + 32 * q, y, k, P, T, &mean[q], &var[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < NP; q++) {
    if (fit[q] && var[q] > 0.0) {
      sc[q] = __dmul_rn(mean[q], mean[q]) / var[q];
      g[q] = (float)(mean[q] / sqrt(var[q]));
    }
    score[k * BW + tx + 32 * q] = sc[q];
    gk[k * BW + tx + 32 * q] = g[q];
  }
  __syncthreads();
  if (k != 0) return;
#pragma unroll
  for (int q = 0; q < NP; q++) {
    const int x = x0 + 32 * q, c = tx + 32 * q;
    if (x >= w) break;
    double best = 0.0;
    float out = 0.0f;
    int bk = 0;
    for (int j = 0; j < nr; j++)
      if (score[j * BW + c] > best) {
        best = score[j * BW + c];
        bk = j;
        out = gk[j * BW + c];
      }
    size_t i = (size_t)y * w + x;
    gicov[i] = out;
    mg[i] = __fmul_rn(out, out);
    ridx[i] = (unsigned char)bk;
  }
}

/* The GICOV map of a narrow ROI (the entry band), bit-identical to
 * gicov_radii_kernel, in two launches. gicov_task_kernel: one thread per
 * NP pixels side by side (x, x + 1: one task) and radius whose circle fits
 * them, and only those, packed radius by radius (a 53-px band left 60 % of
 * gicov_radii_kernel's lanes idle on the border pixels of the large radii);
 * the score and signed GICOV go to score/gk[k][pixel]. NP = 2 with the
 * fixed sample count (the second pixel's samples at the next address: the
 * offsets, constants and address shared; a row's odd last pixel alone),
 * LT_CUDA_BAND_NP=1 one pixel a thread.
 * gicov_pick_kernel: per pixel the winner in radius order (the same strict
 * comparison from 0). */
typedef struct band_tasks {
  int start[LT_LEUK_MAX_RADII + 1]; /* first task of radius k; start[nr] = all */
  int b[LT_LEUK_MAX_RADII];         /* border of radius k */
} band_tasks;
static_assert(sizeof(lt_rect) + sizeof(lt_cu_params) + sizeof(lt_cu_trig) + sizeof(band_tasks) + 64 <= 4096,
              "the GICOV kernels' parameters fit the 4 KB of a launch");

template <int NF, int NP>
__global__ void __launch_bounds__(256) gicov_task_kernel(lt_rect roi, lt_cu_params P, const __grid_constant__ lt_cu_trig T,
                                                         band_tasks B, double *score, float *gk)
{
  const int t = blockIdx.x * blockDim.x + threadIdx.x, nr = P.nradii, w = roi.w, h = roi.h;
  if (t >= B.start[nr]) return;
  int k = 0;
  while (t >= B.start[k + 1]) k++;
  static_assert(NP == 1 || NP == 2, "one or two pixels a task");
  const int b = B.b[k], nx = w - 2 * b, nt = (nx + NP - 1) / NP, loc = t - B.start[k];
  int y = b + loc / nt, x = b + loc % nt * NP, q0 = 0;
  /* a row's odd last pixel: the pair that ends with it (the first one's
   * sums thrown away; with nx = 1 the pixel left of the border, whose
   * samples are still in the frame: the circle has radius <= b - 1), so
   * that no lane of a warp takes another path (ncu, H100 2026-11-24: a
   * one-pixel path beside the pair cost 1.5x the FP64 instructions) */
  if (NP == 2 && x == w - b - 1 && nx % 2) {
    x--;
    q0 = 1;
  }
  double mean[NP], var[NP];
  circle_stats_n<NF, NP, 1>(roi, x, y, k, P, T, mean, var);
#pragma unroll
  for (int q = 0; q < NP; q++) {
    if (q < q0) continue;
    double sc = 0.0;
    float gv = 0.0f;
    if (var[q] > 0.0) {
      sc = __dmul_rn(mean[q], mean[q]) / var[q];
      gv = (float)(mean[q] / sqrt(var[q]));
    }
    const size_t i = (size_t)k * w * h + (size_t)y * w + x + q;
    score[i] = sc;
    gk[i] = gv;
  }
}

__global__ void gicov_pick_kernel(int w, int h, lt_cu_params P, band_tasks B, const double *__restrict__ score,
                                  const float *__restrict__ gk, float *gicov, float *mg, unsigned char *ridx)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= w * h) return;
  const int y = i / w, x = i - y * w;
  double best = 0.0;
  float out = 0.0f;
  int bk = 0;
  for (int k = 0; k < P.nradii; k++) {
    const int b = B.b[k];
    if (x < b || x >= w - b || y < b || y >= h - b) continue;
    const size_t j = (size_t)k * w * h + i;
    if (score[j] > best) {
      best = score[j];
      bk = k;
      out = gk[j];
    }
  }
  gicov[i] = out;
  mg[i] = __fmul_rn(out, out);
  ridx[i] = (unsigned char)bk;
}

/* The disc dilation of mg and its maxima (v != 0 and no value in the disc
 * above v). dil == NULL (the detections: the dilated map is only read by
 * get_map, which dilates again, lt_cu_dilate_launch): no map, and a pixel
 * stops at the first value in its disc above its own, from the centre row
 * outwards (max is exact in any order: the same maxima as the full disc);
 * maxbuf == NULL: the map only.
 * lo > 0 (a band's detection: its caller takes only maxima with |GICOV| >
 * lo, detect_start): only those pixels are tested and listed, and with no
 * map a tile without one stops before loading its halo. Exact for those
 * maxima: a pixel over lo is a maximum unless a value in its disc is
 * larger, and such a value is over lo too, so it is in the map as before. */
__global__ void dilate_max_kernel(const float *__restrict__ mg, const float *__restrict__ gicov,
                                  const unsigned char *__restrict__ ridx, int w, int h, int rr,
                                  lt_cu_params P, float *dil, int *maxbuf, int cap, double lo)
{
  extern __shared__ float tile[];
  const int TW = DIL_TILE + 2 * rr;
  int *half = (int *)(tile + TW * TW);
  const int bx0 = blockIdx.x * DIL_TILE, by0 = blockIdx.y * DIL_TILE;
  const int tid = threadIdx.y * DIL_TILE + threadIdx.x, nt = DIL_TILE * DIL_ROWS;
  const int ox = bx0 + threadIdx.x;
  /* a pixel the list may take (the same float-to-double comparison as the
   * pipeline's and refine_kernel's) */
  auto over = [&](size_t i) { return lo <= 0.0 || (double)fabsf(gicov[i]) > lo; };
  if (!dil && lo > 0.0) {
    int any = 0;
    for (int j = threadIdx.y; j < DIL_TILE; j += DIL_ROWS) {
      const int oy = by0 + j;
      if (ox < w && oy < h) {
        const size_t i = (size_t)oy * w + ox;
        any |= mg[i] != 0.0f && over(i);
      }
    }
    if (!__syncthreads_or(any)) return; /* the whole block: no thread is past this barrier */
  }
  for (int i = tid; i < TW * TW; i += nt) {
    int ty = i / TW, tx = i - ty * TW;
    int gyy = by0 - rr + ty, gxx = bx0 - rr + tx;
    tile[i] = (gxx >= 0 && gxx < w && gyy >= 0 && gyy < h) ? mg[(size_t)gyy * w + gxx] : 0.0f;
  }
  for (int dy = -rr + tid; dy <= rr; dy += nt) {
    int hw = 0;
    while ((hw + 1) * (hw + 1) + dy * dy <= rr * rr) hw++;
    half[dy + rr] = hw;
  }
  __syncthreads();
  lt_cu_max *list = maxbuf ? (lt_cu_max *)(maxbuf + 4) : NULL;
  for (int j = threadIdx.y; j < DIL_TILE; j += DIL_ROWS) {
    const int oy = by0 + j;
    if (ox >= w || oy >= h) continue;
    const float *centre = tile + (j + rr) * TW + threadIdx.x + rr;
    const float v = *centre;
    size_t i = (size_t)oy * w + ox;
    int is_max;
    if (dil) {
      float m = 0.0f;
      for (int dy = -rr; dy <= rr; dy++) {
        const int hw = half[dy + rr];
        const float *row = centre + dy * TW;
        for (int dx = -hw; dx <= hw; dx++) m = fmaxf(m, row[dx]);
      }
      dil[i] = m;
      is_max = v != 0.0f && m == v && over(i);
    } else {
      is_max = v != 0.0f && over(i);
      for (int a = 0; a <= rr && is_max; a++)
        for (int s = a ? -1 : 1; s <= 1 && is_max; s += 2) {
          const int dy = s * a, hw = half[dy + rr];
          const float *row = centre + dy * TW;
          for (int dx = -hw; dx <= hw; dx++)
            if (row[dx] > v) {
              is_max = 0;
              break;
            }
        }
    }
    if (list && is_max) {
      int pos = atomicAdd(maxbuf, 1);
      if (pos < cap) {
        lt_cu_max e;
        e.idx = (int)i;
        e.gicov = gicov[i];
        e.radius = P.radius[ridx[i]];
        list[pos] = e;
      }
    }
  }
}

/* The dilation's launch: the map (dil) and/or the maxima (maxbuf; lo > 0:
 * only those with |GICOV| > lo). */
static int dilate_launch(lt_cu_ctx *c, int w, int h, float *dil, int *maxbuf, double lo)
{
  int rr = c->p.dilate_radius < DIL_MAXR ? c->p.dilate_radius : DIL_MAXR;
  if (rr < 0) rr = 0;
  int TW = DIL_TILE + 2 * rr;
  size_t smem = sizeof(float) * TW * TW + sizeof(int) * (2 * rr + 1);
  static int attr_set = 0;
  if (smem > 48 * 1024 && !attr_set) {
    LT_CU(cudaFuncSetAttribute(dilate_max_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
          "raising the dilation kernel's shared memory");
    attr_set = 1;
  }
  dim3 b2(DIL_TILE, DIL_ROWS), g2((w + DIL_TILE - 1) / DIL_TILE, (h + DIL_TILE - 1) / DIL_TILE);
  dilate_max_kernel<<<g2, b2, smem, c->stream>>>(c->ds.mg, c->ds.gicov, c->ds.ridx, w, h, rr, c->kp, dil, maxbuf,
                                                 (int)c->max_cap, lo);
  LT_CU(cudaGetLastError(), "the dilation kernel launch");
  return 0;
}

/* The dilated map of the last detection (its mg is still on the device),
 * for get_map when the detection made only the maxima. */
int lt_cu_dilate_launch(lt_cu_ctx *c, const lt_rect *roi)
{
  int err = dilate_launch(c, roi->w, roi->h, c->d_dil, NULL, 0.0);
  if (!err) c->dil_valid = 1;
  return err;
}

static int detect_launch(lt_cu_ctx *c, const lt_rect *roi, double lo);

/* LT_CUDA_TWICE=band|full (a measurement aid): the whole detection twice
 * (the gradient kernel clears the lists' counts, so the second is the
 * first's bits) */
int lt_cu_detect_launch(lt_cu_ctx *c, const lt_rect *roi, double lo)
{
  int err = 0;
  if (c->twice & (lo > 0.0 ? LT_TW_BAND : LT_TW_FULL)) err = detect_launch(c, roi, lo);
  return err ? err : detect_launch(c, roi, lo);
}

static int detect_launch(lt_cu_ctx *c, const lt_rect *roi, double lo)
{
  const int w = roi->w, h = roi->h;
  dim3 b(32, 8), g((w + 31) / 32, (h + 7) / 8);
  lt_cu_tic(c, T_GRAD);
  gradient_kernel<<<g, b, 0, c->stream>>>(c->d_frame, c->fw, *roi, c->ds.gx, c->ds.gy, c->ds.maxbuf,
                                               c->ds.ahead);
  LT_CU(cudaGetLastError(), "the gradient kernel launch");
  lt_cu_toc(c, T_GRAD);
  lt_cu_tic(c, T_GICOV);
  for (int rep = c->twice & LT_TW_GICOV ? 2 : 1; rep > 0; rep--) { /* LT_CUDA_TWICE=gicov: twice, the same maps */
    if (!c->gicov_per_pixel && (size_t)w * h <= c->band_cap) { /* a narrow ROI: only the circles that fit */
      band_tasks B;
      const int nr = c->kp.nradii, np = c->gicov_fixed && c->band_np == 2 ? 2 : 1;
      B.start[0] = 0;
      for (int k = 0; k < nr; k++) {
        const int b = c->kp.border_all ? c->kp.border_all : c->kp.radius[k] + 1;
        B.b[k] = b;
        const int nx = w - 2 * b, ny = h - 2 * b;
        B.start[k + 1] = B.start[k] + (nx > 0 && ny > 0 ? (nx + np - 1) / np * ny : 0); /* tasks of np pixels */
      }
      if (B.start[nr] > 0) {
        auto task = !c->gicov_fixed ? gicov_task_kernel<0, 1>
                    : np == 2       ? gicov_task_kernel<LT_CU_TRIG_N, 2>
                                    : gicov_task_kernel<LT_CU_TRIG_N, 1>;
        task<<<(B.start[nr] + 255) / 256, 256, 0, c->stream>>>(*roi, c->kp, c->trig, B, c->ds.bscore, c->ds.bgk);
      }
      gicov_pick_kernel<<<(w * h + 255) / 256, 256, 0, c->stream>>>(w, h, c->kp, B, c->ds.bscore, c->ds.bgk,
                                                                     c->ds.gicov, c->ds.mg, c->ds.ridx);
    } else if (c->gicov_per_pixel) {
      auto pix = c->gicov_fixed ? gicov_kernel<LT_CU_TRIG_N> : gicov_kernel<0>;
      pix<<<g, b, 0, c->stream>>>(*roi, w, h, c->kp, c->trig, c->ds.gicov, c->ds.mg, c->ds.ridx);
    } else {
      /* fixed sample count: two pixels per thread (x, x + 32; LT_CUDA_GICOV_NP=4: four) */
      const int nr = c->kp.nradii, np = c->gicov_fixed ? (c->gicov_np == 4 ? 4 : 2) : 1;
      dim3 br(32, nr), gr((w + 32 * np - 1) / (32 * np), h);
      auto radii = !c->gicov_fixed ? gicov_radii_kernel<0, 1>
                   : np == 4       ? gicov_radii_kernel<LT_CU_TRIG_N, 4>
                                   : gicov_radii_kernel<LT_CU_TRIG_N, 2>;
      radii<<<gr, br, (sizeof(double) + sizeof(float)) * 32 * np * nr, c->stream>>>(*roi, w, h, c->kp, c->trig,
                                                                                   c->ds.gicov, c->ds.mg, c->ds.ridx);
    }
    LT_CU(cudaGetLastError(), "the GICOV kernel launch");
  }
  lt_cu_toc(c, T_GICOV);
  lt_cu_tic(c, T_DILATE);
  c->dil_valid = c->dil_full; /* LT_CUDA_DILMAP=1: the map with the maxima, as before */
  if (c->twice & LT_TW_DILATE) { /* LT_CUDA_TWICE=dilate: first into a second list */
    LT_CU(cudaMemsetAsync(c->d_max2, 0, sizeof(int), c->stream), "clearing LT_CUDA_TWICE's maxima");
    int err = dilate_launch(c, w, h, c->dil_full ? c->d_dil : NULL, c->d_max2, lo);
    if (err) return err;
  }
  int err = dilate_launch(c, w, h, c->dil_full ? c->d_dil : NULL, c->ds.maxbuf, lo);
  if (err) return err;
  lt_cu_toc(c, T_DILATE);
  return 0;
}
