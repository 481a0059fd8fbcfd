/* corr.cu - the CUDA backend of the tumour mode: Pearson correlation of all
 * templates over all shifts of one frame (conventions in tumor/corr.h; the
 * CPU exact implementation is the specification).
 *
 * Per frame: the union of the templates' search regions (clipped to the
 * frame) goes up - for 8-bit frames as bytes, only the rows of the
 * windows copied into double-buffered pinned staging, converted to B - 128
 * on the GPU, and for the next frame already during this one's work
 * (prefetch, second stream); other frames as B - 128 floats. One launch of
 * the frame kernel (corr_kernel.cuh) computes the tiles' window and cross
 * sums, and the last block of each template adds its tiles in a fixed order
 * (deterministic), forms r and finds the peak with its sub-pixel offset;
 * only the peaks come back (the maps when asked), with one synchronisation
 * per frame. The last block writes the peaks straight into mapped pinned
 * host memory (no copy after the kernel; LT_TUMOR_ZC=0: a device buffer and
 * a download as before), one buffer per input buffer; the launch (and the
 * download) are one CUDA Graph per input buffer. submit/collect run two
 * frames deep: the next frame's upload (second stream) and launch go out
 * before the host waits for the previous frame's peaks. When the input is
 * read through a memory map (a y4m file), the map is registered with CUDA
 * (page-locked, read-only) and a pipelined frame goes up by one 2D copy of
 * the region straight out of the map on the second stream, overlapping the
 * previous frame's kernel: the host copies no bytes (LT_TUMOR_DMA=0: the
 * staging as before).
 * The templates (centred, float), sum Tc and sum Tc^2 (double) are uploaded
 * once by create(), which also allocates everything. The frame kernel is
 * the NVRTC-specialised one when available (nvrtc.cu), else the generic one
 * compiled here.
 *
 * Sizes (plan()): bands of at most 16 template rows (the specialised kernel
 * cuts the height evenly), chunks of at most 128 columns, shift blocks of at
 * most 32 dx times 32 dy, 4 dy per thread, column stripes so that about 256
 * threads per SM are busy (at most 512 per block, whole warps). */
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

/* The generic kernel: every size a run-time value but the band height and
 * the shifts per thread, fixed here (plan() uses the same when NVRTC is out). */
#define LT_TK_GEN_RB 16
#define LT_TK_GEN_DYN 4
__global__ void __launch_bounds__(512) lt_tumor_generic(lt_tk_params p)
{
  extern __shared__ double lt_tk_smem[]; /* doubles: 8-byte aligned */
  lt_tk_frame<0, 0, LT_TK_GEN_RB, LT_TK_GEN_DYN, 0, 0, 0, 0>(p, (float *)lt_tk_smem);
}

typedef struct cuda_ctx {
  lt_tumor_setup s; /* tpl -> geom */
  lt_tumor_template *geom;
  int K, npos, roi_x, roi_y, roi_w, roi_h;
  /* the plan (plan()): band rows, dy per thread, chunk width, dx per block,
   * dy groups, column stripes, shift blocks, tiles per template (most) */
  int rb, dyn, cwc, sxb, ng, ns, nsbx, nsb, nt_max, threads;
  size_t smem;
  float *h_roi, *d_roi, *d_scores, *d_tc;
  /* the 8-bit path: double-buffered pinned staging and device regions, the
   * prefetch of the next frame on ustream */
  unsigned char *h_st8[2], *d_roi8[2];
  cudaEvent_t ev_up[2]; /* upload into buffer i done (the last kernel reading it: ev_fin[i]) */
  /* the input's memory map, registered (map()): frames in it go up from
   * there (dma_frame); reg_size 0: none */
  const unsigned char *reg_base;
  size_t reg_size;
  /* LT_TUMOR_DMA experiments: 0 off; 2 the whole rows up, the region cut on
   * the GPU; 3 the upload on the frame's stream (fewer calls, no overlap) */
  int no_dma, dma_rows, dma_same;
  unsigned char *d_rows[2]; /* dma_rows: the rows' bytes per buffer */
  cudaStream_t ustream;
  int cur8, pref_buf, no_prefetch;
  const unsigned char *pref_req, *pref_src;
  /* the peaks per graph (input buffer): pinned host memory, mapped (the
   * kernel writes d_pkm[g] = h_pk[g]) or, with zc 0, downloaded from d_pk */
  lt_tk_pk *h_pk[3], *d_pkm[3], *d_pk;
  int zc;
  cudaEvent_t ev_fin[3]; /* graph g's frame done (peaks in h_pk[g]) */
  int q[2], nq;          /* submitted, not collected: their graphs, oldest first */
  int *d_done; /* per template: the kernel's count of finished blocks */
  int *seg, nseg; /* the 8-bit staging's row segments (build_segments) */
  int stage_threads; /* threads copying them (stage8) */
  /* LT_TUMOR_TIMING=1: per-frame host times (s) and GPU time (ms), summed */
  int timing, nt;
  double t_pre, t_stage, t_sync, g_ms;
  cudaEvent_t tev[3][2];
  double *d_part, *d_sum_tc, *d_ta;
  long long *d_tc_off;
  int *d_tdim;
  cudaStream_t stream;
  cudaLibrary_t lib;
  cudaKernel_t spec;
  int have_lib;
  /* the per-frame work (both kernels and the peaks' download) as one CUDA
   * Graph per input buffer: 0/1 the 8-bit buffers, 2 the float region */
  cudaGraphExec_t graph[3];
  int use_graph;
  /* the pipeline's graphs per 8-bit buffer: the staged region's upload and
   * the frame work, so that submit is one launch and one event */
  cudaGraphExec_t pgraph[2];
  int use_pgraph;
  lt_tumor_stats st;
} cuda_ctx;

static void cuda_unmap(void *p);

static void cuda_destroy(void *p)
{
  cuda_ctx *c = (cuda_ctx *)p;
  if (!c) return;
  cuda_unmap(c);
  if (c->stream) cudaStreamSynchronize(c->stream);
  for (int i = 0; i < 3; i++)
    if (c->graph[i]) cudaGraphExecDestroy(c->graph[i]);
  for (int i = 0; i < 2; i++)
    if (c->pgraph[i]) cudaGraphExecDestroy(c->pgraph[i]);
  cudaFreeHost(c->h_roi);
  cudaFree(c->d_roi);
  cudaFree(c->d_scores);
  cudaFree(c->d_tc);
  cudaFree(c->d_part);
  cudaFree(c->d_sum_tc);
  cudaFree(c->d_ta);
  cudaFree(c->d_tc_off);
  cudaFree(c->d_tdim);
  if (c->ustream) cudaStreamSynchronize(c->ustream);
  for (int i = 0; i < 2; i++) {
    cudaFreeHost(c->h_st8[i]);
    cudaFree(c->d_roi8[i]);
    if (c->ev_up[i]) cudaEventDestroy(c->ev_up[i]);
  }
  for (int i = 0; i < 3; i++) {
    cudaFreeHost(c->h_pk[i]);
    if (c->ev_fin[i]) cudaEventDestroy(c->ev_fin[i]);
  }
  cudaFree(c->d_pk);
  cudaFree(c->d_done);
  if (c->ustream) cudaStreamDestroy(c->ustream);
  if (c->stream) cudaStreamDestroy(c->stream);
  if (c->have_lib) cudaLibraryUnload(c->lib);
  if (c->timing && c->nt > 0)
    fprintf(stderr,
            "tumor cuda timing over %d frames, us/frame: start (staging, upload, launch) %.2f, next frame's "
            "staging %.2f, wait %.2f; GPU (graph start to end) %.2f\n",
            c->nt, 1e6 * c->t_pre / c->nt, 1e6 * c->t_stage / c->nt, 1e6 * c->t_sync / c->nt, 1e3 * c->g_ms / c->nt);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      if (c->tev[i][j]) cudaEventDestroy(c->tev[i][j]);
  free(c->seg);
  free(c->geom);
  free(c);
}

static int env_int(const char *name, int def, int lo, int hi)
{
  const char *v = getenv(name);
  if (!v || !*v) return def;
  int x = atoi(v);
  return x < lo ? lo : x > hi ? hi : x;
}

/* Bytes of shared memory of a block (corr_kernel.cuh): the stage (template
 * tile, region) or the stripes' sums, then the row sums (doubles); the
 * finish's scratch. */
static size_t plan_smem(int rb, int dyn, int cwc, int sxb, int ng, int threads)
{
  size_t off = (size_t)rb * cwc + (size_t)(rb + ng * dyn - 1) * (cwc + sxb - 1);
  off = off > (size_t)threads * dyn ? off : (size_t)threads * dyn;
  off += off & 1;
  size_t n = off + (size_t)(rb + ng * dyn - 1) * sxb * 4;
  n = n > (size_t)2 * threads + 1 ? n : (size_t)2 * threads + 1;
  return sizeof(float) * n;
}

/* Block sizes for band height rb and dy per thread dyn: chunks of at most
 * 128 columns; a shift block of at most 32 dx and 32 dy (fewer dy when its
 * shared memory would pass 48 KB); column stripes of at most 256 / rb
 * columns (a thread's float sum of Tc B over at most 256 pixels per tile)
 * and enough of them that about 256 threads per SM are busy; at most 512
 * threads per block. */
static void plan(cuda_ctx *c, int rb, int dyn, int sm_count)
{
  int maxw = 1;
  for (int k = 0; k < c->K; k++) maxw = c->geom[k].w > maxw ? c->geom[k].w : maxw;
  const int nx = 2 * c->s.shift_h + 1, ny = 2 * c->s.shift_v + 1;
  c->rb = rb;
  c->dyn = dyn;
  c->cwc = maxw < 128 ? maxw : 128;
  c->sxb = nx < 32 ? nx : 32;
  c->nsbx = (nx + c->sxb - 1) / c->sxb;
  int ns_min = 1;
  while (((c->cwc + ns_min - 1) / ns_min) * rb > 256) ns_min++;
  int gmax = 32 / dyn > 0 ? 32 / dyn : 1;
  if (gmax > 512 / (c->sxb * ns_min)) gmax = 512 / (c->sxb * ns_min) > 0 ? 512 / (c->sxb * ns_min) : 1;
  /* the block's shared memory (see below) within the default 48 KB */
  while (gmax > 1 && plan_smem(rb, dyn, c->cwc, c->sxb, gmax, 512) > 48 * 1024) gmax--;
  const int groups = (ny + dyn - 1) / dyn, nsby = (groups + gmax - 1) / gmax;
  c->ng = (groups + nsby - 1) / nsby;
  c->nsb = c->nsbx * nsby;
  c->nt_max = 1;
  for (int k = 0; k < c->K; k++) {
    const int t = ((c->geom[k].w + c->cwc - 1) / c->cwc) * ((c->geom[k].h + rb - 1) / rb);
    c->nt_max = t > c->nt_max ? t : c->nt_max;
  }
  const int per = c->sxb * c->ng;
  const long blocks = (long)c->K * c->nt_max * c->nsb;
  const long want = (long)env_int("LT_TUMOR_THREADS_PER_SM", 256, 32, 2048) * sm_count;
  long ns = (want + blocks * per - 1) / (blocks * per);
  ns = ns > 512 / per ? 512 / per : ns;
  ns = ns > c->cwc ? c->cwc : ns;
  ns = ns < ns_min ? ns_min : ns;
  c->ns = (int)ns;
  c->threads = (per * c->ns + 31) / 32 * 32; /* whole warps; the extra threads have empty stripes */
  c->smem = plan_smem(rb, dyn, c->cwc, c->sxb, c->ng, c->threads);
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

/* Centred float templates, sum Tc and sum Tc^2 (of the float values the
 * kernel uses) and the geometry, uploaded once. */
static int upload_templates(cuda_ctx *c, const lt_tumor_setup *s)
{
  long long total = 0;
  for (int k = 0; k < c->K; k++) total += (long long)s->tpl[k].w * s->tpl[k].h;
  float *tc = (float *)malloc(sizeof(float) * total);
  double *stc = (double *)malloc(sizeof(double) * c->K), *ta = (double *)malloc(sizeof(double) * c->K);
  long long *off = (long long *)malloc(sizeof(long long) * c->K);
  int *dim = (int *)malloc(sizeof(int) * 4 * c->K);
  int e = 0;
  if (!tc || !stc || !ta || !off || !dim) {
    lt_error("out of memory (tumor CUDA templates)");
    e = LT_ERR_NOMEM;
    goto done;
  }
  {
    long long o = 0;
    for (int k = 0; k < c->K; k++) {
      const lt_tumor_template *t = &s->tpl[k];
      const int n = t->w * t->h;
      double sum = 0;
      for (int i = 0; i < n; i++) sum += t->px[i];
      const double mean = sum / n;
      double a = 0, b = 0;
      for (int i = 0; i < n; i++) {
        float v = (float)(t->px[i] - mean);
        tc[o + i] = v;
        a += v;
        b += (double)v * v;
      }
      stc[k] = a;
      ta[k] = b;
      off[k] = o;
      dim[4 * k] = t->w;
      dim[4 * k + 1] = t->h;
      dim[4 * k + 2] = t->x;
      dim[4 * k + 3] = t->y;
      o += n;
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
  UP(c->d_sum_tc, stc, sizeof(double) * c->K);
  UP(c->d_ta, ta, sizeof(double) * c->K);
  UP(c->d_tc_off, off, sizeof(long long) * c->K);
  UP(c->d_tdim, dim, sizeof(int) * 4 * c->K);
#undef UP
done:
  free(tc);
  free(stc);
  free(ta);
  free(off);
  free(dim);
  return e;
}

static int all_same_size(const lt_tumor_setup *s)
{
  for (int k = 1; k < s->ntemplates; k++)
    if (s->tpl[k].w != s->tpl[0].w || s->tpl[k].h != s->tpl[0].h) return 0;
  return 1;
}

static int build_segments(cuda_ctx *c);

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
  {
    const char *pv = getenv("LT_TUMOR_PREFETCH"); /* experiment: 0 = no prefetch of the next frame */
    c->no_prefetch = pv && strcmp(pv, "0") == 0;
    const char *gv = getenv("LT_TUMOR_GRAPH"); /* experiment: 0 = plain launches instead of the graph */
    c->use_graph = !(gv && strcmp(gv, "0") == 0);
    const char *uv = getenv("LT_TUMOR_UPGRAPH"); /* experiment: 0 = the pipeline's upload outside the graph */
    c->use_pgraph = c->use_graph && !(uv && strcmp(uv, "0") == 0);
    const char *tv = getenv("LT_TUMOR_TIMING"); /* experiment: 1 = time the steps of match_peaks */
    c->timing = tv && strcmp(tv, "1") == 0;
    const char *zv = getenv("LT_TUMOR_ZC"); /* experiment: 0 = peaks downloaded after the kernel */
    c->zc = !(zv && strcmp(zv, "0") == 0);
    const char *mv = getenv("LT_TUMOR_DMA"); /* experiment: 0 = frames in a map staged as the others */
    c->no_dma = mv && strcmp(mv, "0") == 0;
    c->dma_rows = mv && strcmp(mv, "2") == 0;
    c->dma_same = mv && strcmp(mv, "3") == 0;
  }
  int dev = 0, sms = 1;
  cudaError_t de = cudaGetDevice(&dev);
  if (de == cudaSuccess) de = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (de != cudaSuccess) {
    e = lt_cuda_fail(de, "tumor: device attributes");
    goto fail;
  }
  roi_of(c);
  if ((e = build_segments(c))) goto fail;
  {
    /* 4 threads stage 64 KB or more of windows (experiment:
     * LT_TUMOR_STAGE_THREADS, another number; 1 = one thread) */
    size_t staged = 0;
    for (int i = 0; i < c->nseg; i++) staged += (size_t)(c->seg[3 * i + 2] - c->seg[3 * i + 1]);
    const char *sv = getenv("LT_TUMOR_STAGE_THREADS");
    c->stage_threads = staged >= 65536 ? 4 : 1;
    if (sv && atoi(sv) >= 1 && atoi(sv) <= 64) c->stage_threads = atoi(sv);
  }
  if ((e = upload_templates(c, s))) goto fail;
  {
    /* the specialised kernel: bands of at most 16 rows cut evenly, dy per
     * thread 4 (experiments: LT_TUMOR_RB, LT_TUMOR_DYN) */
    const char *env = getenv("LT_TUMOR_NVRTC");
    int want = !(env && strcmp(env, "0") == 0) && all_same_size(s);
    if (want) {
      const int h = s->tpl[0].h, nb = (h + 15) / 16;
      plan(c, env_int("LT_TUMOR_RB", (h + nb - 1) / nb, 1, 16), env_int("LT_TUMOR_DYN", 4, 1, 8), sms);
      lt_tk_spec sp = {s->tpl[0].w, s->tpl[0].h, c->rb, c->dyn, c->sxb, c->ng, c->ns, c->cwc, c->threads};
      e = lt_tk_nvrtc_get(lt_tumor_kernel_src, &sp, &c->lib, &c->spec, &c->st);
      if (e < 0) goto fail;
    } else
      e = 1;
    c->have_lib = e == 0;
    c->st.specialised = e == 0;
    if (e) plan(c, LT_TK_GEN_RB, LT_TK_GEN_DYN, sms);
    e = 0;
  }
  {
    const size_t roi_n = (size_t)(c->roi_w > 0 ? c->roi_w : 1) * (c->roi_h > 0 ? c->roi_h : 1);
    const size_t part_n = (size_t)c->K * c->nt_max * 3 * c->npos;
    cudaError_t ce = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaMallocHost((void **)&c->h_roi, sizeof(float) * roi_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_roi, sizeof(float) * roi_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_part, sizeof(double) * part_n);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_scores, sizeof(float) * (size_t)c->K * c->npos);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&c->ustream, cudaStreamNonBlocking);
    for (int i = 0; i < 2 && ce == cudaSuccess; i++) {
      ce = cudaMallocHost((void **)&c->h_st8[i], roi_n);
      if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_roi8[i], roi_n);
      if (ce == cudaSuccess) ce = cudaMemset(c->d_roi8[i], 0, roi_n);
      if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&c->ev_up[i], cudaEventDisableTiming);
      if (ce == cudaSuccess) memset(c->h_st8[i], 0, roi_n); /* parts outside every window stay 0 */
    }
    for (int i = 0; i < 3 && ce == cudaSuccess; i++) {
      ce = cudaHostAlloc((void **)&c->h_pk[i], sizeof(lt_tk_pk) * c->K, c->zc ? cudaHostAllocMapped : 0);
      if (ce == cudaSuccess && c->zc) ce = cudaHostGetDevicePointer((void **)&c->d_pkm[i], c->h_pk[i], 0);
      if (ce == cudaSuccess) ce = cudaEventCreateWithFlags(&c->ev_fin[i], cudaEventDisableTiming);
    }
    if (ce == cudaSuccess && !c->zc) ce = cudaMalloc((void **)&c->d_pk, sizeof(lt_tk_pk) * c->K);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&c->d_done, sizeof(int) * c->K);
    if (ce == cudaSuccess) ce = cudaMemset(c->d_done, 0, sizeof(int) * c->K);
    for (int i = 0; i < 6 && c->timing && ce == cudaSuccess; i++) ce = cudaEventCreate(&c->tev[i / 2][i % 2]);
    if (ce == cudaSuccess) ce = cudaMemset(c->d_roi, 0, sizeof(float) * roi_n);
    if (ce != cudaSuccess) {
      e = lt_cuda_fail(ce, "tumor CUDA buffers");
      goto fail;
    }
  }
  snprintf(c->st.kernel, sizeof c->st.kernel, "cuda %s: bands %d, chunks %d, shifts %dx%dx%d, %d stripes, %d thr%s%s",
           c->st.specialised ? "nvrtc" : "generic", c->rb, c->cwc, c->sxb, c->ng, c->dyn, c->ns, c->threads,
           c->use_graph ? ", graph" : "", c->zc ? ", zc" : "");
  c->st.setup_s = lt_now() - t0;
  *out = c;
  return 0;
fail:
  cuda_destroy(c);
  return e;
}

/* Launches the frame kernel over the region (floats in d_roi, or bytes in
 * roi8): maps in d_scores, peaks in d_pk. An empty region still runs it
 * (every shift outside: maps -1, no peak). */
static int launch(cuda_ctx *c, int g, const unsigned char *roi8)
{
  lt_tk_params kp;
  kp.roi = c->d_roi;
  kp.roi8 = roi8;
  kp.roi_x = c->roi_x;
  kp.roi_y = c->roi_y;
  kp.roi_w = c->roi_w;
  kp.roi_h = c->roi_h;
  kp.tc = c->d_tc;
  kp.tc_off = c->d_tc_off;
  kp.tdim = c->d_tdim;
  kp.part = c->d_part;
  kp.sum_tc = c->d_sum_tc;
  kp.ta = c->d_ta;
  kp.scores = c->d_scores;
  kp.pk = c->zc ? c->d_pkm[g] : c->d_pk;
  kp.done = c->d_done;
  kp.K = c->K;
  kp.V = c->s.shift_v;
  kp.H = c->s.shift_h;
  kp.nx = 2 * c->s.shift_h + 1;
  kp.ny = 2 * c->s.shift_v + 1;
  kp.npos = c->npos;
  kp.nt_max = c->nt_max;
  kp.nsb = c->nsb;
  kp.nsbx = c->nsbx;
  kp.sxb = c->sxb;
  kp.ng = c->ng;
  kp.ns = c->ns;
  kp.cwc = c->cwc;
  dim3 grid((unsigned)((long)c->K * c->nt_max * c->nsb)), block(c->threads);
  if (c->have_lib) {
    void *args[] = {&kp};
    LT_CU(cudaLaunchKernel((const void *)c->spec, grid, block, args, c->smem, c->stream), "tumor kernel (nvrtc)");
  } else {
    lt_tumor_generic<<<grid, block, c->smem, c->stream>>>(kp);
    LT_CU(cudaGetLastError(), "tumor kernel (generic)");
  }
  return 0;
}

/* Captures into *out the frame work for buffer g: with `upload`, the copy
 * of staging buffer g to d_roi8[g] first; the kernel on roi8; the peaks'
 * download when not mapped. 0, or 1 (and *out NULL) when it could not be
 * made, with the reason in *why. */
static int capture_graph(cuda_ctx *c, int g, int upload, const unsigned char *roi8, cudaGraphExec_t *out,
                         const char **why)
{
  cudaGraph_t gr = NULL;
  cudaError_t ce = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
  int e = ce == cudaSuccess ? 0 : 1;
  if (!e && upload)
    e = cudaMemcpyAsync(c->d_roi8[g], c->h_st8[g], (size_t)c->roi_w * c->roi_h, cudaMemcpyHostToDevice, c->stream) !=
        cudaSuccess;
  if (!e) e = launch(c, g, roi8) != 0;
  if (!e && !c->zc)
    e = cudaMemcpyAsync(c->h_pk[g], c->d_pk, sizeof(lt_tk_pk) * c->K, cudaMemcpyDeviceToHost, c->stream) !=
        cudaSuccess;
  if (ce == cudaSuccess) ce = cudaStreamEndCapture(c->stream, &gr);
  if (!e && ce == cudaSuccess) ce = cudaGraphInstantiate(out, gr, 0);
  if (gr) cudaGraphDestroy(gr);
  if (e || ce != cudaSuccess) {
    (void)cudaGetLastError();
    *out = NULL;
    *why = cudaGetErrorString(ce);
    return 1;
  }
  return 0;
}

/* The per-frame work on the stream: the kernel and the peaks' download,
 * replayed from graph g (captured at its first use) unless graphs are off
 * or their capture failed (then plain launches, from then on). */
static int run_frame(cuda_ctx *c, int g, const unsigned char *roi8)
{
  const char *why;
  if (c->use_graph && !c->graph[g] && capture_graph(c, g, 0, roi8, &c->graph[g], &why)) {
    c->use_graph = 0;
    lt_info("tumor: no CUDA Graph for the frame work (%s); plain launches", why);
  }
  if (c->use_graph) {
    LT_CU(cudaGraphLaunch(c->graph[g], c->stream), "tumor frame graph");
    return 0;
  }
  int e = launch(c, g, roi8);
  if (e || c->zc) return e;
  LT_CU(cudaMemcpyAsync(c->h_pk[g], c->d_pk, sizeof(lt_tk_pk) * c->K, cudaMemcpyDeviceToHost, c->stream),
        "tumor peaks download");
  return 0;
}

/* The float path: the region as B - 128 floats, uploaded on the stream. */
static int upload_float(cuda_ctx *c, const float *frame)
{
  if (c->roi_w <= 0 || c->roi_h <= 0) return 0;
  for (int r = 0; r < c->roi_h; r++) {
    const float *src = frame + (size_t)(c->roi_y + r) * c->s.frame_w + c->roi_x;
    float *dst = c->h_roi + (size_t)r * c->roi_w;
    for (int j = 0; j < c->roi_w; j++) dst[j] = src[j] - 128.0f;
  }
  LT_CU(cudaMemcpyAsync(c->d_roi, c->h_roi, sizeof(float) * c->roi_w * c->roi_h, cudaMemcpyHostToDevice, c->stream),
        "tumor frame upload");
  return 0;
}

/* The search windows (clipped to the frame) as row segments: per row of the
 * region, the union of the windows that cover it, merged (overlapping
 * windows copied once). c->seg: nseg triples y, x0, x1 (frame coordinates). */
static int build_segments(cuda_ctx *c)
{
  const int fw = c->s.frame_w, fh = c->s.frame_h, V = c->s.shift_v, H = c->s.shift_h;
  const size_t cap = (size_t)(c->roi_h > 0 ? c->roi_h : 1) * c->K;
  int *iv = (int *)malloc(sizeof(int) * 2 * c->K);
  c->seg = (int *)malloc(sizeof(int) * 3 * cap);
  c->nseg = 0;
  if (!iv || !c->seg) {
    free(iv);
    lt_error("out of memory (tumor CUDA backend)");
    return LT_ERR_NOMEM;
  }
  for (int y = c->roi_y; y < c->roi_y + c->roi_h; y++) {
    int m = 0;
    for (int k = 0; k < c->K; k++) {
      const lt_tumor_template *t = &c->geom[k];
      int x0 = t->x - H, x1 = t->x + H + t->w, y0 = t->y - V, y1 = t->y + V + t->h;
      x0 = x0 < 0 ? 0 : x0;
      y0 = y0 < 0 ? 0 : y0;
      x1 = x1 > fw ? fw : x1;
      y1 = y1 > fh ? fh : y1;
      if (x1 <= x0 || y < y0 || y >= y1) continue;
      int j = m++; /* insertion by x0 */
      for (; j > 0 && iv[2 * (j - 1)] > x0; j--) {
        iv[2 * j] = iv[2 * (j - 1)];
        iv[2 * j + 1] = iv[2 * (j - 1) + 1];
      }
      iv[2 * j] = x0;
      iv[2 * j + 1] = x1;
    }
    for (int j = 0; j < m;) {
      int x0 = iv[2 * j], x1 = iv[2 * j + 1];
      for (j++; j < m && iv[2 * j] <= x1; j++) x1 = iv[2 * j + 1] > x1 ? iv[2 * j + 1] : x1;
      c->seg[3 * c->nseg] = y;
      c->seg[3 * c->nseg + 1] = x0;
      c->seg[3 * c->nseg + 2] = x1;
      c->nseg++;
    }
  }
  free(iv);
  return 0;
}

/* Copies the search windows' segments from the 8-bit frame into staging
 * buffer dst (ROI layout); the rest of the region is never read by a window
 * that counts. By c->stage_threads threads (OpenMP) when the region is
 * large: the copy is on the frame's critical path, and the frame's bytes
 * may come cold from memory (a memory-mapped input). */
static void stage8(const cuda_ctx *c, const unsigned char *frame8, unsigned char *dst)
{
  const int fw = c->s.frame_w;
#pragma omp parallel for schedule(static) num_threads(c->stage_threads) if (c->stage_threads > 1)
  for (int i = 0; i < c->nseg; i++) {
    const int y = c->seg[3 * i], x0 = c->seg[3 * i + 1], x1 = c->seg[3 * i + 2];
    memcpy(dst + (size_t)(y - c->roi_y) * c->roi_w + (x0 - c->roi_x), frame8 + (size_t)y * fw + x0, (size_t)(x1 - x0));
  }
}

/* Buffer i's staging is free (its last upload done), then fills it with
 * frame8 and uploads it on stream st after the last kernel reading d_roi8[i]. */
static int upload8(cuda_ctx *c, int i, const unsigned char *frame8, cudaStream_t st)
{
  LT_CU(cudaEventSynchronize(c->ev_up[i]), "waiting for a tumor frame upload");
  stage8(c, frame8, c->h_st8[i]);
  LT_CU(cudaStreamWaitEvent(st, c->ev_fin[i], 0), "ordering the tumor frame uploads");
  LT_CU(cudaMemcpyAsync(c->d_roi8[i], c->h_st8[i], (size_t)c->roi_w * c->roi_h, cudaMemcpyHostToDevice, st),
        "tumor frame upload");
  LT_CU(cudaEventRecord(c->ev_up[i], st), "tumor frame upload");
  return 0;
}

static int cuda_match(void *p, const float *frame, float *scores)
{
  cuda_ctx *c = (cuda_ctx *)p;
  int e = upload_float(c, frame);
  if (!e) e = launch(c, 2, NULL);
  if (e) return e;
  LT_CU(cudaMemcpyAsync(scores, c->d_scores, sizeof(float) * (size_t)c->K * c->npos, cudaMemcpyDeviceToHost,
                        c->stream),
        "tumor scores download");
  LT_CU(cudaStreamSynchronize(c->stream), "tumor frame");
  return 0;
}

static int cuda_prefetch(void *p, const unsigned char *frame8)
{
  cuda_ctx *c = (cuda_ctx *)p;
  if (!c->no_prefetch) c->pref_req = frame8;
  return 0;
}

/* Starts one frame: the region up (8-bit: only the windows' rows, or
 * nothing when the prefetch already sent it; on ustream when side is set),
 * the frame graph (kernel; peaks into h_pk[*g]), its end recorded
 * (ev_fin[*g]; for an 8-bit buffer *g is the buffer: its last reader). */
static int start_frame(cuda_ctx *c, const float *frame, const unsigned char *frame8, int side, int *g)
{
  const int have_roi = c->roi_w > 0 && c->roi_h > 0;
  const unsigned char *roi8 = NULL;
  int e = 0, buf = -1;
  if (frame8 && have_roi) {
    if (frame8 == c->pref_src) { /* already on its way into d_roi8[pref_buf] */
      buf = c->pref_buf;
      LT_CU(cudaStreamWaitEvent(c->stream, c->ev_up[buf], 0), "waiting for the prefetched frame");
    } else {
      buf = c->cur8 ^ 1;
      if ((e = upload8(c, buf, frame8, side ? c->ustream : c->stream))) return e;
      if (side) LT_CU(cudaStreamWaitEvent(c->stream, c->ev_up[buf], 0), "waiting for the frame upload");
    }
    c->cur8 = buf;
    roi8 = c->d_roi8[buf];
  } else if (!frame8 && (e = upload_float(c, frame)))
    return e;
  c->pref_src = NULL;
  *g = buf >= 0 ? buf : 2;
  if (c->timing) LT_CU(cudaEventRecord(c->tev[*g][0], c->stream), "tumor timing");
  if ((e = run_frame(c, *g, roi8))) return e;
  if (c->timing) LT_CU(cudaEventRecord(c->tev[*g][1], c->stream), "tumor timing");
  LT_CU(cudaEventRecord(c->ev_fin[*g], c->stream), "tumor kernels");
  return 0;
}

/* Template k's peaks from graph g's buffer (its frame done). */
static int take_peaks(cuda_ctx *c, int g, lt_tumor_peak *peaks)
{
  if (c->timing) {
    float ms = 0;
    LT_CU(cudaEventElapsedTime(&ms, c->tev[g][0], c->tev[g][1]), "tumor timing");
    c->g_ms += ms;
    c->nt++;
  }
  for (int k = 0; k < c->K; k++) {
    const lt_tk_pk *q = &c->h_pk[g][k];
    lt_tumor_peak *o = &peaks[k];
    memset(o, 0, sizeof *o);
    o->tpl = k;
    o->dy = q->dy;
    o->dx = q->dx;
    o->row = c->geom[k].y + q->dy;
    o->col = c->geom[k].x + q->dx;
    o->score = q->score;
    o->dy_sub = q->dy_sub;
    o->dx_sub = q->dx_sub;
  }
  return 0;
}

/* One frame: started (start_frame), the maps down when asked, the next
 * frame's upload started on the second stream while this one computes, one
 * synchronisation. Not while frames are submitted and not collected. */
static int cuda_match_peaks(void *p, const float *frame, const unsigned char *frame8, float *scores,
                            lt_tumor_peak *peaks)
{
  cuda_ctx *c = (cuda_ctx *)p;
  const double t0 = c->timing ? lt_now() : 0;
  const unsigned char *pref = c->pref_req;
  c->pref_req = NULL;
  int e, g = 0; /* set by start_frame when it succeeds */
  if (c->nq) {
    lt_error("tumor cuda: match_peaks with %d frame(s) submitted and not collected", c->nq);
    return LT_ERR_INTERNAL;
  }
  if ((e = start_frame(c, frame, frame8, 0, &g))) return e;
  const double t2 = c->timing ? lt_now() : 0;
  if (scores)
    LT_CU(cudaMemcpyAsync(scores, c->d_scores, sizeof(float) * (size_t)c->K * c->npos, cudaMemcpyDeviceToHost,
                          c->stream),
          "tumor scores download");
  if (pref && c->roi_w > 0 && c->roi_h > 0 && pref != frame8) { /* the next frame travels while this one computes */
    const int nb = (g < 2 ? g : c->cur8) ^ 1;
    if ((e = upload8(c, nb, pref, c->ustream))) return e;
    c->pref_src = pref;
    c->pref_buf = nb;
  }
  const double t3 = c->timing ? lt_now() : 0;
  LT_CU(cudaStreamSynchronize(c->stream), "tumor frame");
  if (c->timing) {
    const double t4 = lt_now();
    c->t_pre += t2 - t0; /* start_frame: staging, upload, launch */
    c->t_stage += t3 - t2;
    c->t_sync += t4 - t3;
  }
  return take_peaks(c, g, peaks);
}

/* The pipeline's graph for 8-bit buffer g (captured at its first use):
 * the upload of staging buffer g, the kernel, the peaks' download when not
 * mapped. 1 when it could not be made (then no such graphs from then on). */
static int pipe_graph(cuda_ctx *c, int g)
{
  const char *why;
  if (c->pgraph[g]) return 0;
  if (capture_graph(c, g, 1, c->d_roi8[g], &c->pgraph[g], &why)) {
    c->use_pgraph = 0;
    lt_info("tumor: no CUDA Graph for the pipeline (%s); separate upload", why);
    return 1;
  }
  return 0;
}

/* The input's memory map: registered (page-locked, read-only for the GPU)
 * when it is at most LT_TUMOR_PIN_MB MB (default 1024: every page of it is
 * read in and locked here, before the first frame). Failure only leaves
 * the staging in place. */
static void cuda_map(void *p, const void *base, size_t size)
{
  cuda_ctx *c = (cuda_ctx *)p;
  const double t0 = lt_now();
  if (c->no_dma || c->reg_size || !size || c->roi_w <= 0 || c->roi_h <= 0) return;
  if (size > (size_t)env_int("LT_TUMOR_PIN_MB", 1024, 0, 1 << 20) << 20) {
    lt_debug("tumor: input map of %zu MB not registered (LT_TUMOR_PIN_MB)", size >> 20);
    return;
  }
  int dev = 0, ro = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, dev) != cudaSuccess || !ro) {
    (void)cudaGetLastError();
    lt_info("tumor: this GPU cannot read a read-only host mapping; frames staged");
    return;
  }
  const cudaError_t ce = cudaHostRegister((void *)base, size, cudaHostRegisterReadOnly);
  if (ce != cudaSuccess) {
    (void)cudaGetLastError();
    lt_info("tumor: input map not registered with CUDA (%s); frames staged", cudaGetErrorString(ce));
    return;
  }
  c->reg_base = (const unsigned char *)base;
  c->reg_size = size;
  const size_t span = (size_t)(c->roi_h - 1) * c->s.frame_w + c->roi_w;
  for (int i = 0; i < 2 && c->dma_rows; i++)
    if (cudaMalloc((void **)&c->d_rows[i], span) != cudaSuccess) {
      (void)cudaGetLastError();
      c->dma_rows = 0;
    }
  const size_t n = strlen(c->st.kernel);
  snprintf(c->st.kernel + n, sizeof c->st.kernel - n, ", map");
  c->st.setup_s += lt_now() - t0;
  lt_debug("tumor: input map of %zu bytes registered in %.1f ms", size, 1e3 * (lt_now() - t0));
}

static void cuda_unmap(void *p)
{
  cuda_ctx *c = (cuda_ctx *)p;
  if (!c->reg_size) return;
  if (c->ustream) cudaStreamSynchronize(c->ustream);
  if (c->stream) cudaStreamSynchronize(c->stream);
  cudaHostUnregister((void *)c->reg_base);
  c->reg_base = NULL;
  c->reg_size = 0;
  for (int i = 0; i < 2; i++) {
    cudaFree(c->d_rows[i]);
    c->d_rows[i] = NULL;
  }
}

/* A pipelined frame lying in the registered map: its region goes up by one
 * 2D copy out of the map on ustream into d_roi8[g] (after the last kernel
 * that read that buffer), the frame graph runs after it. 1 when the frame
 * is not in the map (nothing done), 0 when started, < 0 on error. */
static int dma_frame(cuda_ctx *c, const unsigned char *frame8, int g)
{
  const size_t fw = (size_t)c->s.frame_w;
  const unsigned char *src = frame8 + (size_t)c->roi_y * fw + c->roi_x;
  const size_t span = (size_t)(c->roi_h - 1) * fw + c->roi_w;
  if (!c->reg_size || frame8 < c->reg_base || (size_t)(src - c->reg_base) > c->reg_size ||
      c->reg_size - (size_t)(src - c->reg_base) < span)
    return 1;
  cudaStream_t us = c->dma_same ? c->stream : c->ustream;
  if (!c->dma_same) LT_CU(cudaStreamWaitEvent(us, c->ev_fin[g], 0), "ordering the tumor frame uploads");
  if (c->dma_rows && c->d_rows[g]) { /* experiment: one plain copy of the rows, the cut on the GPU */
    LT_CU(cudaMemcpyAsync(c->d_rows[g], src, span, cudaMemcpyHostToDevice, us), "tumor frame upload (map)");
    LT_CU(cudaMemcpy2DAsync(c->d_roi8[g], (size_t)c->roi_w, c->d_rows[g], fw, (size_t)c->roi_w, (size_t)c->roi_h,
                            cudaMemcpyDeviceToDevice, us),
          "tumor frame upload (map)");
  } else
    LT_CU(cudaMemcpy2DAsync(c->d_roi8[g], (size_t)c->roi_w, src, fw, (size_t)c->roi_w, (size_t)c->roi_h,
                            cudaMemcpyHostToDevice, us),
          "tumor frame upload (map)");
  if (!c->dma_same) {
    LT_CU(cudaEventRecord(c->ev_up[g], us), "tumor frame upload");
    LT_CU(cudaStreamWaitEvent(c->stream, c->ev_up[g], 0), "waiting for the frame upload");
  }
  c->pref_src = NULL;
  c->cur8 = g;
  if (c->timing) LT_CU(cudaEventRecord(c->tev[g][0], c->stream), "tumor timing");
  int e = run_frame(c, g, c->d_roi8[g]);
  if (e) return e;
  if (c->timing) LT_CU(cudaEventRecord(c->tev[g][1], c->stream), "tumor timing");
  LT_CU(cudaEventRecord(c->ev_fin[g], c->stream), "tumor kernels");
  return 0;
}

/* The two-deep pipeline: a frame in the registered map sent up out of it
 * (dma_frame), else its bytes staged and sent up (in the frame's graph, or
 * on the second stream), its graph launched after them; no wait for the
 * GPU (but for a staging buffer whose previous upload is still running). */
static int cuda_submit(void *p, const unsigned char *frame8)
{
  cuda_ctx *c = (cuda_ctx *)p;
  const double t0 = c->timing ? lt_now() : 0;
  int e, g;
  if (!frame8 || c->roi_w <= 0 || c->roi_h <= 0 || c->nq >= 2) {
    lt_error("tumor cuda: submit needs an 8-bit frame, a search region and at most one frame in flight");
    return LT_ERR_INTERNAL;
  }
  c->pref_req = NULL;
  g = c->cur8 ^ 1;
  e = frame8 != c->pref_src ? dma_frame(c, frame8, g) : 1; /* 1: not in the map */
  if (e < 0) return e;
  if (e && c->use_pgraph && frame8 != c->pref_src && !pipe_graph(c, g)) {
    /* staging buffer g: its last upload is done (a frame that used it was
     * collected; a prefetch into it waited for); d_roi8[g]: its readers are
     * earlier on the stream, or collected (match_peaks after a drain) */
    LT_CU(cudaEventSynchronize(c->ev_up[g]), "waiting for a tumor frame upload");
    stage8(c, frame8, c->h_st8[g]);
    c->pref_src = NULL;
    c->cur8 = g;
    if (c->timing) LT_CU(cudaEventRecord(c->tev[g][0], c->stream), "tumor timing");
    LT_CU(cudaGraphLaunch(c->pgraph[g], c->stream), "tumor frame graph");
    if (c->timing) LT_CU(cudaEventRecord(c->tev[g][1], c->stream), "tumor timing");
    LT_CU(cudaEventRecord(c->ev_fin[g], c->stream), "tumor kernels");
  } else if (e && (e = start_frame(c, NULL, frame8, 1, &g)))
    return e;
  c->q[c->nq++] = g;
  if (c->timing) c->t_pre += lt_now() - t0;
  return 0;
}

static int cuda_collect(void *p, lt_tumor_peak *peaks)
{
  cuda_ctx *c = (cuda_ctx *)p;
  const double t0 = c->timing ? lt_now() : 0;
  if (c->nq <= 0) {
    lt_error("tumor cuda: collect without a submitted frame");
    return LT_ERR_INTERNAL;
  }
  const int g = c->q[0];
  c->q[0] = c->q[1];
  c->nq--;
  LT_CU(cudaEventSynchronize(c->ev_fin[g]), "tumor frame");
  if (c->timing) c->t_sync += lt_now() - t0;
  return take_peaks(c, g, peaks);
}

static void cuda_stats(const void *p, lt_tumor_stats *st)
{
  *st = ((const cuda_ctx *)p)->st;
}

extern "C" const lt_tumor_backend lt_tumor_backend_cuda = {
    "cuda", cuda_create, cuda_destroy, cuda_match, cuda_stats, cuda_match_peaks, cuda_prefetch, cuda_submit,
    cuda_collect, cuda_map, cuda_unmap,
};
