/* corr.cu - the CUDA backend of the tumour mode: Pearson correlation of all
 * templates over all shifts of one frame (conventions in tumor/corr.h; the
 * CPU exact implementation is the specification).
 *
 * Per frame: the union of the templates' search regions (clipped to the
 * frame) is copied, as B - 128, into a pinned staging buffer and uploaded;
 * one launch of the partial-sum kernel covers every template, shift block
 * and tile group (corr_kernel.cuh), one launch of lt_tumor_reduce adds the
 * groups in a fixed order (deterministic) and forms r; the scores come back.
 * The templates (centred, float), their per-tile sums of Tc, sum Tc and
 * sum Tc^2 (double) are uploaded once by create(), which also allocates
 * everything. The partial kernel is the NVRTC-specialised one when
 * available (nvrtc.cu), else the generic one compiled here.
 *
 * Sizes: main tile min(16, template side); shift block SX x SY with SX the
 * power of two >= 2H+1 (at most 32) and SX*SY <= 128 threads; tile groups so
 * that about 4 blocks per SM are in flight (at most 64 groups). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "tumor/tumor_cuda.h"

/* The kernel text: compiled here (generic) and kept as a string for NVRTC. */
#define LT_TUMOR_KERNEL_CODE(...) __VA_ARGS__
#include "corr_kernel.cuh"
#undef LT_TUMOR_KERNEL_CODE
#define LT_TUMOR_KERNEL_CODE(...) static const char lt_tumor_kernel_src[] = #__VA_ARGS__;
#include "corr_kernel.cuh"
#undef LT_TUMOR_KERNEL_CODE

__global__ void lt_tumor_generic(lt_tk_params p)
{
  extern __shared__ float lt_tk_smem[];
  lt_tk_partial<0, 0, 0, 0, 0, 0>(p, lt_tk_smem);
}

struct lt_tk_red {
  const double *part;
  const int *tdim;
  const double *sum_tc, *ta; /* per template */
  float *scores;
  int K, V, H, nx, npos, ngroups_max, group_tiles, tlw, tlh, roi_x, roi_y, roi_w, roi_h;
};

__global__ void lt_tumor_reduce(lt_tk_red r)
{
  const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= (long long)r.K * r.npos) return;
  const int k = (int)(q / r.npos), pos = (int)(q % r.npos);
  const int w = r.tdim[4 * k], h = r.tdim[4 * k + 1], x = r.tdim[4 * k + 2], y = r.tdim[4 * k + 3];
  const int dy = pos / r.nx - r.V, dx = pos % r.nx - r.H;
  const int wr = y + dy - r.roi_y, wc = x + dx - r.roi_x;
  if (wr < 0 || wc < 0 || wr + h > r.roi_h || wc + w > r.roi_w) {
    r.scores[q] = -1.0f; /* LT_TUMOR_OUTSIDE */
    return;
  }
  const int ntiles = ((w + r.tlw - 1) / r.tlw) * ((h + r.tlh - 1) / r.tlh);
  const int ng = (ntiles + r.group_tiles - 1) / r.group_tiles;
  double s1 = 0, s2 = 0, sc = 0;
  for (int g = 0; g < ng; g++) {
    const double *p = r.part + ((long long)k * r.ngroups_max + g) * 3 * r.npos + pos;
    s1 += p[0];
    s2 += p[r.npos];
    sc += p[2 * r.npos];
  }
  const double n = (double)w * h, flat = 1e-6 * n; /* LT_TUMOR_FLAT_VAR */
  double bb = s2 - s1 * s1 / n;
  const double cross = sc - (s1 / n) * r.sum_tc[k];
  double v = 0.0;
  if (r.ta[k] > flat && bb > flat) {
    v = cross / sqrt(r.ta[k] * bb);
    v = v > 1.0 ? 1.0 : v < -1.0 ? -1.0 : v;
  }
  r.scores[q] = (float)v;
}

typedef struct cuda_ctx {
  lt_tumor_setup s; /* tpl -> geom */
  lt_tumor_template *geom;
  int K, npos, roi_x, roi_y, roi_w, roi_h;
  int tlw, tlh, sx, sy, nsb, ngroups, group_tiles;
  size_t smem;
  float *h_roi, *d_roi, *d_scores, *d_tc;
  double *d_part, *d_tile_tc, *d_sum_tc, *d_ta;
  long long *d_tc_off;
  int *d_tdim, *d_tile_off;
  cudaStream_t stream;
  cudaLibrary_t lib;
  cudaKernel_t spec;
  int have_lib;
  lt_tumor_stats st;
} cuda_ctx;

static void cuda_destroy(void *p)
{
  cuda_ctx *c = (cuda_ctx *)p;
  if (!c) return;
  if (c->stream) cudaStreamSynchronize(c->stream);
  cudaFreeHost(c->h_roi);
  cudaFree(c->d_roi);
  cudaFree(c->d_scores);
  cudaFree(c->d_tc);
  cudaFree(c->d_part);
  cudaFree(c->d_tile_tc);
  cudaFree(c->d_sum_tc);
  cudaFree(c->d_ta);
  cudaFree(c->d_tc_off);
  cudaFree(c->d_tdim);
  cudaFree(c->d_tile_off);
  if (c->stream) cudaStreamDestroy(c->stream);
  if (c->have_lib) cudaLibraryUnload(c->lib);
  free(c->geom);
  free(c);
}

static int pow2ceil(int v)
{
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

static void plan(cuda_ctx *c, int sm_count)
{
  int maxw = 1, maxh = 1, max_tiles = 1;
  for (int k = 0; k < c->K; k++) {
    maxw = c->geom[k].w > maxw ? c->geom[k].w : maxw;
    maxh = c->geom[k].h > maxh ? c->geom[k].h : maxh;
  }
  c->tlw = maxw < 16 ? maxw : 16;
  c->tlh = maxh < 16 ? maxh : 16;
  const int nx = 2 * c->s.shift_h + 1, ny = 2 * c->s.shift_v + 1;
  c->sx = pow2ceil(nx) < 32 ? pow2ceil(nx) : 32;
  c->sy = 128 / c->sx;
  if (c->sy > pow2ceil(ny)) c->sy = pow2ceil(ny);
  c->nsb = ((nx + c->sx - 1) / c->sx) * ((ny + c->sy - 1) / c->sy);
  for (int k = 0; k < c->K; k++) {
    int t = ((c->geom[k].w + c->tlw - 1) / c->tlw) * ((c->geom[k].h + c->tlh - 1) / c->tlh);
    max_tiles = t > max_tiles ? t : max_tiles;
  }
  long want = (4L * sm_count + (long)c->K * c->nsb - 1) / ((long)c->K * c->nsb);
  int ng = (int)(want < 1 ? 1 : want > 64 ? 64 : want);
  if (ng > max_tiles) ng = max_tiles;
  c->group_tiles = (max_tiles + ng - 1) / ng;
  c->ngroups = (max_tiles + c->group_tiles - 1) / c->group_tiles;
  c->smem = sizeof(float) * ((size_t)(c->tlw + c->sx - 1) * (c->tlh + c->sy - 1) + (size_t)c->tlw * c->tlh);
}

/* Union of the search regions, clipped to the frame (may be empty). */
static void roi_of(cuda_ctx *c)
{
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -(1 << 30), y1 = -(1 << 30);
  for (int k = 0; k < c->K; k++) {
    const lt_tumor_template *t = &c->geom[k];
    x0 = t->x - c->s.shift_h < x0 ? t->x - c->s.shift_h : x0;
    y0 = t->y - c->s.shift_v < y0 ? t->y - c->s.shift_v : y0;
    x1 = t->x + c->s.shift_h + t->w > x1 ? t->x + c->s.shift_h + t->w : x1;
    y1 = t->y + c->s.shift_v + t->h > y1 ? t->y + c->s.shift_v + t->h : y1;
  }
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > c->s.frame_w ? c->s.frame_w : x1;
  y1 = y1 > c->s.frame_h ? c->s.frame_h : y1;
  c->roi_x = x0;
  c->roi_y = y0;
  c->roi_w = x1 > x0 ? x1 - x0 : 0;
  c->roi_h = y1 > y0 ? y1 - y0 : 0;
}

/* Centred float templates, per-tile sums, sum Tc and sum Tc^2 (of the float
 * values the kernel uses), uploaded once. */
static int upload_templates(cuda_ctx *c, const lt_tumor_setup *s)
{
  long long total = 0, ntile_total = 0;
  for (int k = 0; k < c->K; k++) {
    total += (long long)s->tpl[k].w * s->tpl[k].h;
    ntile_total += (long long)((s->tpl[k].w + c->tlw - 1) / c->tlw) * ((s->tpl[k].h + c->tlh - 1) / c->tlh);
  }
  float *tc = (float *)malloc(sizeof(float) * total);
  double *ttc = (double *)calloc(ntile_total, sizeof(double));
  double *stc = (double *)malloc(sizeof(double) * c->K), *ta = (double *)malloc(sizeof(double) * c->K);
  long long *off = (long long *)malloc(sizeof(long long) * c->K);
  int *toff = (int *)malloc(sizeof(int) * c->K), *dim = (int *)malloc(sizeof(int) * 4 * c->K);
  int e = 0;
  if (!tc || !ttc || !stc || !ta || !off || !toff || !dim) {
    lt_error("out of memory (tumor CUDA templates)");
    e = LT_ERR_NOMEM;
    goto done;
  }
  {
    long long o = 0, to = 0;
    for (int k = 0; k < c->K; k++) {
      const lt_tumor_template *t = &s->tpl[k];
      const int n = t->w * t->h, tx = (t->w + c->tlw - 1) / c->tlw;
      double sum = 0;
      for (int i = 0; i < n; i++) sum += t->px[i];
      const double mean = sum / n;
      double a = 0, b = 0;
      for (int i = 0; i < n; i++) {
        float v = (float)(t->px[i] - mean);
        tc[o + i] = v;
        a += v;
        b += (double)v * v;
        ttc[to + (i / t->w / c->tlh) * tx + (i % t->w) / c->tlw] += v;
      }
      stc[k] = a;
      ta[k] = b;
      off[k] = o;
      toff[k] = (int)to;
      dim[4 * k] = t->w;
      dim[4 * k + 1] = t->h;
      dim[4 * k + 2] = t->x;
      dim[4 * k + 3] = t->y;
      o += n;
      to += (long long)tx * ((t->h + c->tlh - 1) / c->tlh);
    }
  }
#define UP(dst, src, bytes)                                                                  \
  do {                                                                                       \
    cudaError_t e_ = cudaMalloc((void **)&(dst), (bytes));                                   \
    if (e_ == cudaSuccess) e_ = cudaMemcpy((dst), (src), (bytes), cudaMemcpyHostToDevice);  \
    if (e_ != cudaSuccess) {                                                                 \
      e = lt_cuda_fail(e_, "tumor template upload");                                         \
      goto done;                                                                             \
    }                                                                                        \
  } while (0)
  UP(c->d_tc, tc, sizeof(float) * total);
  UP(c->d_tile_tc, ttc, sizeof(double) * ntile_total);
  UP(c->d_sum_tc, stc, sizeof(double) * c->K);
  UP(c->d_ta, ta, sizeof(double) * c->K);
  UP(c->d_tc_off, off, sizeof(long long) * c->K);
  UP(c->d_tile_off, toff, sizeof(int) * c->K);
  UP(c->d_tdim, dim, sizeof(int) * 4 * c->K);
#undef UP
done:
  free(tc);
  free(ttc);
  free(stc);
  free(ta);
  free(off);
  free(toff);
  free(dim);
  return e;
}

static int all_same_size(const lt_tumor_setup *s)
{
  for (int k = 1; k < s->ntemplates; k++)
    if (s->tpl[k].w != s->tpl[0].w || s->tpl[k].h != s->tpl[0].h) return 0;
  return 1;
}

static int cuda_create(void **out, const lt_tumor_setup *s)
{
  const double t0 = lt_now();
  *out = NULL;
  int e = lt_tumor_setup_check(s);
  if (e) return e;
  cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
  if (!c || !(c->geom = (lt_tumor_template *)calloc(s->ntemplates, sizeof *c->geom))) {
    free(c);
    lt_error("out of memory (tumor CUDA backend)");
    return LT_ERR_NOMEM;
  }
  c->s = *s;
  c->K = s->ntemplates;
  c->npos = lt_tumor_npos(s);
  for (int k = 0; k < c->K; k++) {
    c->geom[k] = s->tpl[k];
    c->geom[k].px = NULL;
  }
  c->s.tpl = c->geom;
  int dev = 0, sms = 1;
  cudaError_t de = cudaGetDevice(&dev);
  if (de == cudaSuccess) de = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (de != cudaSuccess) {
    e = lt_cuda_fail(de, "tumor: device attributes");
    goto fail;
  }
  roi_of(c);
  plan(c, sms);
  if ((e = upload_templates(c, s))) goto fail;
  {
    const size_t roi_n = (size_t)(c->roi_w > 0 ? c->roi_w : 1) * (c->roi_h > 0 ? c->roi_h : 1);
    const size_t part_n = (size_t)c->K * c->ngroups * 3 * c->npos;
    cudaError_t ce = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaMallocHost((void **)&c->h_roi, sizeof(float) * roi_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_roi, sizeof(float) * roi_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_part, sizeof(double) * part_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_scores, sizeof(float) * (size_t)c->K * c->npos);
    if (ce != cudaSuccess) {
      e = lt_cuda_fail(ce, "tumor CUDA buffers");
      goto fail;
    }
  }
  {
    const char *env = getenv("LT_TUMOR_NVRTC");
    int want = !(env && strcmp(env, "0") == 0) && all_same_size(s);
    lt_tk_spec sp = {s->tpl[0].w, s->tpl[0].h, c->tlw, c->tlh, c->sx, c->sy};
    e = want ? lt_tk_nvrtc_get(lt_tumor_kernel_src, &sp, &c->lib, &c->spec, &c->st) : 1;
    if (e < 0) goto fail;
    c->have_lib = e == 0;
    c->st.specialised = e == 0;
    e = 0;
  }
  snprintf(c->st.kernel, sizeof c->st.kernel, "cuda %s: tiles %dx%d, shift blocks %dx%d, %d group(s) of %d tiles",
           c->st.specialised ? "nvrtc" : "generic", c->tlw, c->tlh, c->sx, c->sy, c->ngroups, c->group_tiles);
  c->st.setup_s = lt_now() - t0;
  *out = c;
  return 0;
fail:
  cuda_destroy(c);
  return e;
}

static int cuda_match(void *p, const float *frame, float *scores)
{
  cuda_ctx *c = (cuda_ctx *)p;
  if (c->roi_w > 0 && c->roi_h > 0) {
    for (int r = 0; r < c->roi_h; r++) {
      const float *src = frame + (size_t)(c->roi_y + r) * c->s.frame_w + c->roi_x;
      float *dst = c->h_roi + (size_t)r * c->roi_w;
      for (int j = 0; j < c->roi_w; j++) dst[j] = src[j] - 128.0f;
    }
    LT_CU(cudaMemcpyAsync(c->d_roi, c->h_roi, sizeof(float) * c->roi_w * c->roi_h, cudaMemcpyHostToDevice,
                          c->stream),
          "tumor frame upload");
    lt_tk_params kp;
    kp.roi = c->d_roi;
    kp.roi_x = c->roi_x;
    kp.roi_y = c->roi_y;
    kp.roi_w = c->roi_w;
    kp.roi_h = c->roi_h;
    kp.tc = c->d_tc;
    kp.tc_off = c->d_tc_off;
    kp.tdim = c->d_tdim;
    kp.tile_tc = c->d_tile_tc;
    kp.tile_off = c->d_tile_off;
    kp.part = c->d_part;
    kp.V = c->s.shift_v;
    kp.H = c->s.shift_h;
    kp.nx = 2 * c->s.shift_h + 1;
    kp.npos = c->npos;
    kp.ngroups_max = c->ngroups;
    kp.group_tiles = c->group_tiles;
    kp.tlw = c->tlw;
    kp.tlh = c->tlh;
    kp.sx = c->sx;
    kp.sy = c->sy;
    dim3 grid(c->ngroups, c->nsb, c->K), block(c->sx * c->sy);
    if (c->have_lib) {
      void *args[] = {&kp};
      LT_CU(cudaLaunchKernel((const void *)c->spec, grid, block, args, c->smem, c->stream), "tumor kernel (nvrtc)");
    } else {
      lt_tumor_generic<<<grid, block, c->smem, c->stream>>>(kp);
      LT_CU(cudaGetLastError(), "tumor kernel (generic)");
    }
  }
  lt_tk_red r;
  r.part = c->d_part;
  r.tdim = c->d_tdim;
  r.sum_tc = c->d_sum_tc;
  r.ta = c->d_ta;
  r.scores = c->d_scores;
  r.K = c->K;
  r.V = c->s.shift_v;
  r.H = c->s.shift_h;
  r.nx = 2 * c->s.shift_h + 1;
  r.npos = c->npos;
  r.ngroups_max = c->ngroups;
  r.group_tiles = c->group_tiles;
  r.tlw = c->tlw;
  r.tlh = c->tlh;
  r.roi_x = c->roi_x;
  r.roi_y = c->roi_y;
  r.roi_w = c->roi_w;
  r.roi_h = c->roi_h;
  const long long total = (long long)c->K * c->npos;
  lt_tumor_reduce<<<(unsigned)((total + 255) / 256), 256, 0, c->stream>>>(r);
  LT_CU(cudaGetLastError(), "tumor reduce kernel");
  LT_CU(cudaMemcpyAsync(scores, c->d_scores, sizeof(float) * total, cudaMemcpyDeviceToHost, c->stream),
        "tumor scores download");
  LT_CU(cudaStreamSynchronize(c->stream), "tumor frame");
  return 0;
}

static void cuda_stats(const void *p, lt_tumor_stats *st)
{
  *st = ((const cuda_ctx *)p)->st;
}

extern "C" const lt_tumor_backend lt_tumor_backend_cuda = {
    "cuda", cuda_create, cuda_destroy, cuda_match, cuda_stats,
};
