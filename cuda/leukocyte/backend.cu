/* backend.cu - the CUDA backend of the leukocyte stage table (leuk.h), the
 * counterpart of src/leukocyte/cpu.c.
 *
 * create allocates everything once for the full frame and max_cells (maps,
 * maxima list, refinement jobs, cell states, pinned staging); no stage
 * allocates, but set_frame the float staging once, at the first frame that
 * is not 8-bit, and detect_end a pageable list for more maxima than come
 * back with their count (max_prefix). The work goes to one stream, except
 * the detection (its own stream at a lower priority, see detect_start) and
 * the next frame's upload; each stage does one small upload, its launches
 * and one small download, then synchronises (the pipeline needs the results
 * on the host anyway):
 *   set_frame  frame -> pinned 8-bit staging (float staging when a pixel is
 *              not an integer 0..255), async upload, widen on the device;
 *              two staging buffers so a frame can be staged while the last
 *              upload is still in flight;
 *   detect     3 kernels (gradient, GICOV, dilation+maxima), 1 D2H of the
 *              maxima count and list (a second only for > 4096 maxima);
 *              also in two halves (detect_start, detect_end) so that the
 *              pipeline queues the tracking between them: the entry band's
 *              detection, and every detect_every frames the whole entry
 *              ROI's, then runs on its own stream beside the tracking, no
 *              round trip of its own (launched by cu_track right after the
 *              tracking's kernels);
 *   refine     1 kernel, 1 H2D + 1 D2H; after a split detection none: its
 *              maxima over the pipeline's threshold (detect_start's lo) were
 *              refined ahead on the detection's stream during the tracking
 *              (refine.cu) and refine looks its jobs up in that list
 *              (LT_CUDA_AHEAD=0: off; off by default with several videos in
 *              flight, leuktrack --jobs K > 1; detect_end then waits for the
 *              maxima only, refine for the refinements ahead when it has jobs);
 *   track      1 H2D + 1 D2H of the cell states and, on Hopper, 3 kernels for
 *              all cells (window, cluster MGVF, snake; track.cu), else 1;
 *              LT_CUDA_MGVF=block forces the 1-kernel path, LT_CUDA_CLUSTER=N
 *              (2..16, default 8) sets the cluster size; while several
 *              contexts live (leuktrack --jobs K) the MGVF runs dense, one
 *              block per cell (LT_CUDA_MGVF=dense|cluster forces one).
 * LT_CUDA_TIMING=1 in the environment times every stage and kernel with
 * CUDA events and prints a table to stderr at destroy. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "leuk_cuda.h"

#define MAX_PREFIX 4096 /* maxima copied back with the count */
#define AHEAD_CAP 4096   /* refinements ahead per detection (more: refine does its own) */
#define AHEAD_PREFIX 256 /* ... copied back with the count */
#define LT_CUDA_TAIL_DEFAULT 4 /* LT_CUDA_TAIL: the batch tail's videos running, at most (tail_check) */
/* Refinement jobs per launch (more go in several): their pinned staging is
 * part of every context's block. Pinned memory is what made the first
 * contexts slow when 16 are created at once (H100 2026-11-24: 16 threads
 * each allocating 30 MB of device and 11.5 MB of pinned memory took 91 ms,
 * with 1.5 MB pinned 23 ms), so the pinned block holds only what a frame
 * copies: this, the maxima's prefix and the 8-bit staging (the float staging
 * is allocated at the first frame that needs it). */
#define REFINE_CAP 4096

static const char *const tnames[T_N] = {"upload", "detect(all)", "gradient", "gicov", "dilate+maxima",
                                  "refine", "track", "track:window", "track:mgvf", "track:snake",
                                        "refine(ahead)"};

void lt_cu_tic(lt_cu_ctx *c, int k) { lt_cuda_timer_tic(&c->tm, k, c->stream); }
void lt_cu_toc(lt_cu_ctx *c, int k) { lt_cuda_timer_toc(&c->tm, k, c->stream); }
/* After a synchronise: add the elapsed times of the events just recorded. */
static void timing_collect(lt_cu_ctx *c, const int *ks, int nk) { lt_cuda_timer_collect(&c->tm, ks, nk); }

/* The frame's float pixels (from 8-bit src8 into dst, or already in srcf)
 * and its gradient: (p[1] - p[-1]) / 2, (p[w] - p[-w]) / 2 at interior
 * pixels, exactly what lt_gicov_at computes on the fly (0 on the border,
 * where no stencil point lies), in float: what the GICOV maps (detect.cu)
 * and the tracking's lt_gicov_at (track.cu) sample. */
__global__ void frame_kernel(const unsigned char *__restrict__ src8, const float *__restrict__ srcf, float *dst,
                             float2 *grad, int fw, int fh)
{
  const size_t n = (size_t)fw * fh, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  auto v = [&](size_t k) { return src8 ? (float)src8[k] : srcf[k]; };
  if (src8) dst[i] = v(i);
  const int y = (int)(i / fw), x = (int)(i - (size_t)y * fw);
  float gx = 0.0f, gy = 0.0f;
  if (x > 0 && x < fw - 1 && y > 0 && y < fh - 1) {
    gx = __fmul_rn(__fsub_rn(v(i + 1), v(i - 1)), 0.5f);
    gy = __fmul_rn(__fsub_rn(v(i + fw), v(i - fw)), 0.5f);
  }
  grad[i] = make_float2(gx, gy);
}

/* The frame gradient the kernels sample (frame_kernel's). */
static void frame_grad_set(lt_cu_ctx *c, float2 *g) { c->kp.gradf = g; }

/* frame_kernel on st (LT_CUDA_TWICE=frame: twice, the same bits) */
static void frame_launch(const lt_cu_ctx *c, cudaStream_t st, const unsigned char *src8, const float *srcf, float *dst,
                         float2 *grad, int fw, int fh)
{
  const size_t n = (size_t)fw * fh;
  for (int rep = c->twice & LT_TW_FRAME ? 2 : 1; rep > 0; rep--)
    frame_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(src8, srcf, dst, grad, fw, fh);
}

/* The stencil's sample offsets within a frame row-major of `width`. */
static cudaError_t upload_offsets(int *d_off, const lt_stencil *st, int n, int width)
{
  int *off = (int *)malloc(sizeof(int) * (size_t)n);
  if (!off) return cudaErrorMemoryAllocation;
  for (int i = 0; i < n; i++) off[i] = st->dy[i] * width + st->dx[i];
  cudaError_t e = cudaMemcpy(d_off, off, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice);
  free(off);
  return e;
}

/* The stencil's cos and sin in float, as gicov.c's map takes them
 * (detect.cu's tables for any sample count). */
static cudaError_t upload_trigf(float *d_cos, float *d_sin, const lt_stencil *st)
{
  const int N = st->npoints;
  float *t = (float *)malloc(sizeof(float) * 2 * (size_t)N);
  if (!t) return cudaErrorMemoryAllocation;
  for (int i = 0; i < N; i++) {
    t[i] = (float)st->cosv[i];
    t[N + i] = (float)st->sinv[i];
  }
  cudaError_t e = cudaMemcpy(d_cos, t, sizeof(float) * N, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(d_sin, t + N, sizeof(float) * N, cudaMemcpyHostToDevice);
  free(t);
  return e;
}

/* The stencil's (cos, sin) pairs in float (gicov.c's factors), one 8-byte
 * load per sample. */
static cudaError_t upload_cs(float2 *d_cs, const lt_stencil *st)
{
  float2 *cs = (float2 *)malloc(sizeof(float2) * (size_t)st->npoints);
  if (!cs) return cudaErrorMemoryAllocation;
  for (int i = 0; i < st->npoints; i++) cs[i] = make_float2((float)st->cosv[i], (float)st->sinv[i]);
  cudaError_t e = cudaMemcpy(d_cs, cs, sizeof(float2) * (size_t)st->npoints, cudaMemcpyHostToDevice);
  free(cs);
  return e;
}

/* Leukocyte CUDA contexts alive in this process (`leuktrack --jobs K`
 * runs K videos in threads, one context each): with more than one, the
 * tracking takes the dense MGVF, which fills the GPU with several videos'
 * cells instead of giving each cell a cluster for the lowest latency. */
static int live_contexts;

/* The automatic MGVF choice: dense while more than LT_CUDA_DENSE_MIN
 * contexts live (default 1: whenever another video is in flight); a larger
 * N gives the last videos of a batch, when few are left, the cluster MGVF's
 * lower latency (an experiment; same results). */
static int dense_auto(void)
{
  static int min_live = -1; /* read once (a benign race: every thread reads the same) */
  int m = __atomic_load_n(&min_live, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *v = getenv("LT_CUDA_DENSE_MIN");
    m = v && atoi(v) >= 1 ? atoi(v) : 1;
    __atomic_store_n(&min_live, m, __ATOMIC_RELAXED);
  }
  return __atomic_load_n(&live_contexts, __ATOMIC_RELAXED) > m;
}

/* Spare buffers (leuktrack --jobs K): a context released while others live
 * hands its device and pinned host buffers to the next context of the
 * process instead of freeing them, and the next video of the same frame
 * size takes them (lt_cu_buf_get, exact sizes): no cudaMalloc/cudaMallocHost
 * and no cudaFree/cudaFreeHost (which wait for the whole device, where the
 * other videos' work runs) for its blocks (blk_alloc: one device, one
 * pinned) and the few buffers sized later (the MGVF windows). The last context
 * frees them all (in leuktrack itself it keeps them: bufs_keep), and so does
 * an allocation that fails (videos of other sizes). At most SPARE_MAX
 * buffers and SPARE_BYTES bytes are kept.
 * LT_CUDA_KEEP=0: every context frees its own (an experiment). */
#define SPARE_MAX 1024
#define SPARE_BYTES ((size_t)4 << 30)
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static lt_cu_buf spares[SPARE_MAX];
static int nspares;
static size_t spare_bytes;

static void buf_free(const lt_cu_buf *b)
{
  if (b->host) cudaFreeHost(b->p);
  else cudaFree(b->p);
}

/* Frees every spare buffer. */
static void spares_free(void)
{
  for (;;) {
    lt_cu_buf b;
    pthread_mutex_lock(&spare_mu);
    const int any = nspares > 0;
    if (any) {
      b = spares[--nspares];
      spare_bytes -= b.bytes;
    }
    pthread_mutex_unlock(&spare_mu);
    if (!any) return;
    buf_free(&b);
  }
}

int lt_cu_buf_get(lt_cu_ctx *c, void **p, size_t bytes, int host, const char *what)
{
  if (c->nbufs == LT_CU_BUFS) {
    lt_error("internal error: more than %d buffers in a CUDA context", LT_CU_BUFS);
    return LT_ERR_INTERNAL;
  }
  void *q = NULL;
  pthread_mutex_lock(&spare_mu);
  for (int i = nspares - 1; i >= 0; i--)
    if (spares[i].bytes == bytes && spares[i].host == host) {
      q = spares[i].p;
      spare_bytes -= bytes;
      spares[i] = spares[--nspares];
      break;
    }
  pthread_mutex_unlock(&spare_mu);
  if (!q && (host ? cudaMallocHost(&q, bytes ? bytes : 16) : cudaMalloc(&q, bytes ? bytes : 16)) != cudaSuccess) {
    /* the memory kept for other videos (other sizes) goes back first */
    (void)cudaGetLastError();
    q = NULL;
    spares_free();
    int err = host ? lt_cuda_alloc_host(&q, bytes, what) : lt_cuda_alloc(&q, bytes, what);
    if (err) return err;
  }
  *p = q;
  c->bufs[c->nbufs].p = q;
  c->bufs[c->nbufs].bytes = bytes;
  c->bufs[c->nbufs].host = host;
  c->nbufs++;
  return 0;
}

/* 1 when a released context's buffers are kept as spares rather than
 * freed: while other contexts live, and, when the process ends after its
 * run (lt_cuda_exit_reclaims: leuktrack's main unless LT_CUDA_FREE=1),
 * also after the last one: the next video takes them, and what is left at
 * the end is the driver's to reclaim with the process (freeing them, 2
 * blocks and the windows per video of the last wave, took 13 ms at the end
 * of 32 videos, H100 2026-11-24; each cudaFree waits for the device). */
static int bufs_keep(void)
{
  const char *kv = getenv("LT_CUDA_KEEP");
  if (kv && !strcmp(kv, "0")) return 0;
  return lt_cuda_exit_reclaims() || __atomic_load_n(&live_contexts, __ATOMIC_RELAXED) > 0;
}

/* c's buffers to the spares when bufs_keep says so (its streams are idle),
 * else freed, and with the last context the spares too. */
static void bufs_release(lt_cu_ctx *c)
{
  const int keep = bufs_keep();
  int i = 0;
  if (keep) {
    pthread_mutex_lock(&spare_mu);
    for (; i < c->nbufs && nspares < SPARE_MAX && spare_bytes + c->bufs[i].bytes <= SPARE_BYTES; i++) {
      spares[nspares++] = c->bufs[i];
      spare_bytes += c->bufs[i].bytes;
    }
    pthread_mutex_unlock(&spare_mu);
  }
  for (; i < c->nbufs; i++) buf_free(&c->bufs[i]);
  c->nbufs = 0;
  /* (read again: the last other context may have gone while these were
   * added, after its own look at the spares) */
  if (!keep || !bufs_keep()) spares_free();
}

/* A context's buffers carved from one device block and one pinned host
 * block (blk_add, then blk_alloc: two lt_cu_buf_get calls instead of one
 * per buffer: with 16 contexts created at once, H100 2026-11-24, a
 * context's creation took 113 ms instead of 185 ms, docs/PERFORMANCE.md).
 * Each buffer starts BLK_ALIGN-aligned. LT_CUDA_BLOCK=0: one allocation
 * per buffer, as before (an experiment; compute-sanitizer then sees each
 * buffer's bounds). */
#define BLK_ALIGN 256
typedef struct blk_plan {
  void **p[2][LT_CU_BUFS];
  size_t bytes[2][LT_CU_BUFS];
  int n[2];
  size_t total[2];
} blk_plan;

/* a buffer's place in its block (an empty one too: distinct pointers) */
static size_t blk_size(size_t bytes)
{
  return bytes ? (bytes + BLK_ALIGN - 1) / BLK_ALIGN * BLK_ALIGN : BLK_ALIGN;
}

static void blk_add(blk_plan *b, void *p, size_t bytes, int host)
{
  const int k = b->n[host]++; /* at most LT_CU_BUFS: the calls below are counted */
  b->p[host][k] = (void **)p;
  b->bytes[host][k] = bytes;
  b->total[host] += blk_size(bytes);
}

static int blk_alloc(lt_cu_ctx *c, blk_plan *b)
{
  const char *bv = getenv("LT_CUDA_BLOCK");
  const int each = bv && strcmp(bv, "0") == 0;
  static const char *what[2] = {"the video's GPU buffers (frame, maps, detection, refinement jobs, cell states)",
                                "the video's pinned host buffers (frame staging, maxima, refinement jobs, cell states)"};
  for (int h = 0; h < 2; h++) {
    int err;
    if (each) {
      for (int i = 0; i < b->n[h]; i++)
        if ((err = lt_cu_buf_get(c, b->p[h][i], b->bytes[h][i], h, what[h]))) return err;
      continue;
    }
    if (!b->n[h]) continue;
    char *q;
    if ((err = lt_cu_buf_get(c, (void **)&q, b->total[h], h, what[h]))) return err;
    for (int i = 0; i < b->n[h]; i++) {
      *b->p[h][i] = q;
      q += blk_size(b->bytes[h][i]);
    }
  }
  return 0;
}

/* One detection's buffers (lt_cu_dset, in c's blocks: released with the
 * context's): maps of n pixels, band scores of band_cap pixels and nr
 * radii, maxima lists of max_cap entries (dset_plan), then cleared, and
 * its event (dset_init). */
static void dset_plan(lt_cu_ctx *c, blk_plan *b, lt_cu_dset *d, size_t n, int nr)
{
  blk_add(b, &d->gx, sizeof(float) * n, 0);
  blk_add(b, &d->gy, sizeof(float) * n, 0);
  blk_add(b, &d->gicov, sizeof(float) * n, 0);
  blk_add(b, &d->mg, sizeof(float) * n, 0);
  blk_add(b, &d->ridx, n, 0);
  blk_add(b, &d->bscore, sizeof(double) * nr * c->band_cap, 0);
  blk_add(b, &d->bgk, sizeof(float) * nr * c->band_cap, 0);
  blk_add(b, &d->maxbuf, 16 + sizeof(lt_cu_max) * c->max_cap, 0);
  /* pinned: the count and the prefix that comes back with it (more maxima: cu_detect_end) */
  blk_add(b, &d->h_maxbuf, 16 + sizeof(lt_cu_max) * c->max_prefix, 1);
  blk_add(b, &d->ahead, 16 + sizeof(lt_cu_refine_ahead) * AHEAD_CAP, 0);
  blk_add(b, &d->h_ahead, 16 + sizeof(lt_cu_refine_ahead) * AHEAD_CAP, 1);
}

static int dset_init(lt_cu_ctx *c, lt_cu_dset *d)
{
  /* the maxima prefix copy reads entries past the count: keep them defined */
  cudaError_t e;
  if ((e = cudaMemset(d->maxbuf, 0, 16 + sizeof(lt_cu_max) * c->max_cap)) != cudaSuccess ||
      (e = cudaMemset(d->ahead, 0, 16 + sizeof(lt_cu_refine_ahead) * AHEAD_CAP)) != cudaSuccess)
    return lt_cuda_fail(e, "clearing the maxima list");
  if ((e = cudaEventCreateWithFlags(&d->done, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&d->maxed, cudaEventDisableTiming)) != cudaSuccess)
    return lt_cuda_fail(e, "creating events");
  return 0;
}

static void cu_destroy(void *vctx)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (!c) return;
  const double t0 = lt_now();
  if (c->live_counted) __atomic_sub_fetch(&live_contexts, 1, __ATOMIC_RELAXED);
  if (c->stream) cudaStreamSynchronize(c->stream);
  if (c->tm.on) {
    lt_cuda_timer_print(&c->tm);
    fprintf(stderr, "cuda timing: %ld refinements looked up ahead (of %ld made ahead), %ld refine calls missed them "
            "(refined after)\n", c->ahead_hits, c->ahead_jobs, c->ahead_misses);
    fprintf(stderr, "cuda timing: %ld band detections made ahead on the next frame (not timed), %ld made beside "
            "the tracking; of those made ahead %ld still ran when the frame's tracking was launched, %ld when "
            "detect_end came\n", c->spec_hits, c->spec_misses, c->spec_late_track, c->spec_late_end);
    unsigned long long pr[LT_CU_PROF_N];
    if (c->d_prof && cudaMemcpy(pr, c->d_prof, sizeof pr, cudaMemcpyDeviceToHost) == cudaSuccess) {
      static const char *ph[2][4] = {{"gicov grid", "argmax+subpixel", "E window", ""},
                                     {"evolve", "gicov+status", "", ""}};
      for (int m = 0; m < 2; m++)
        for (int k = 0; k < 4; k++)
          if (pr[8 * m + 7] && ph[m][k][0])
            fprintf(stderr, "cuda timing (cycles per cell): %s kernel, %-16s %10.0f (slowest cell %llu)\n",
                    m ? "snake" : "window", ph[m][k], (double)pr[8 * m + k] / pr[8 * m + 7], pr[8 * m + 3 + k]);
      if (pr[17])
        fprintf(stderr, "cuda timing (cycles): cluster MGVF %.0f per iteration (%llu iterations)\n",
                (double)pr[16] / pr[17], pr[17]);
      if (pr[22]) /* builds with -DLT_MGVF_PROF */
        fprintf(stderr, "cuda timing (cycles per block-iteration): halo wait %.0f, pixels %.0f, check %.0f, sync %.0f\n",
                (double)pr[18] / pr[22], (double)pr[19] / pr[22], (double)pr[20] / pr[22], (double)pr[21] / pr[22]);
    }
    cudaFree(c->d_prof);
  }
  if (c->waits_on && c->n_track) {
    const double f = 1e6 / c->n_track;
    fprintf(stderr, "cuda waits: %ld frames, us per frame: set_frame %.1f, track's launches %.1f (of them the "
            "detection's %.1f, the next frame's upload %.1f), tracking wait %.1f, detect_end %.1f (%ld calls, "
            "%ld not done when the tracking was), refine's wait for the refinements ahead %.1f (%ld), refine "
            "%.1f (%ld calls with jobs)\n", c->n_track, f * c->w_set,
            f * c->w_launch, f * c->w_band, f * c->w_pref, f * c->w_sync, f * c->w_end, c->n_end, c->n_end_late,
            f * c->w_ahead, c->n_ahead_wait, f * c->w_refine, c->n_refine);
  }
  lt_cuda_timer_free(&c->tm);
  /* no copy or kernel may still use a buffer handed to the next context */
  if (c->ustream) cudaStreamSynchronize(c->ustream);
  if (c->dstream) cudaStreamSynchronize(c->dstream);
  if (c->sstream) cudaStreamSynchronize(c->sstream); /* the next frame made ahead */
  bufs_release(c);
  if (c->ev_pref) cudaEventDestroy(c->ev_pref);
  if (c->ev_pref_read) cudaEventDestroy(c->ev_pref_read);
  if (c->ustream) cudaStreamDestroy(c->ustream);
  if (c->dstream) {
    cudaStreamSynchronize(c->dstream);
    cudaStreamDestroy(c->dstream);
  }
  if (c->sstream) {
    cudaStreamSynchronize(c->sstream);
    cudaStreamDestroy(c->sstream);
  }
  if (c->ev_frame) cudaEventDestroy(c->ev_frame);
  for (int i = 0; i < 2; i++)
    if (c->ev_staged[i]) cudaEventDestroy(c->ev_staged[i]);
  if (c->ev_tracked) cudaEventDestroy(c->ev_tracked);
  if (c->ev_spec_frame) cudaEventDestroy(c->ev_spec_frame);
  if (c->ds.done) cudaEventDestroy(c->ds.done);
  if (c->ds_next.done) cudaEventDestroy(c->ds_next.done);
  if (c->ds.maxed) cudaEventDestroy(c->ds.maxed);
  if (c->ds_next.maxed) cudaEventDestroy(c->ds_next.maxed);
  cudaFree(c->d_work);
  free(c->h_maxall);
  if (c->stream) cudaStreamDestroy(c->stream);
  (void)cudaGetLastError();
  free(c);
  lt_debug("cuda: context released in %.1f ms (at +%.1f ms)", 1e3 * (lt_now() - t0), lt_since_start_ms());
}

/* LT_CUDA_TWICE=stage[,stage...] (a measurement aid, docs/CUDA.md): each
 * named stage runs twice per call, so that the extra wall time of a run is
 * that stage's marginal cost under the same load; outputs are unchanged (a
 * stage's first run is idempotent or goes to scratch buffers). */
static int twice_parse(unsigned *mask)
{
  static const struct {
    const char *name;
    unsigned bit;
  } st[] = {{"frame", LT_TW_FRAME}, {"window", LT_TW_WINDOW}, {"mgvf", LT_TW_MGVF},       {"snake", LT_TW_SNAKE},
            {"band", LT_TW_BAND},   {"full", LT_TW_FULL},     {"gicov", LT_TW_GICOV},     {"dilate", LT_TW_DILATE},
            {"refine", LT_TW_REFINE}, {"upload", LT_TW_UPLOAD}, {"copy", LT_TW_COPY}};
  *mask = 0;
  const char *v = getenv("LT_CUDA_TWICE");
  if (!v || !*v) return 0;
  for (const char *s = v; *s;) {
    const size_t len = strcspn(s, ",");
    size_t k = 0;
    for (; k < sizeof st / sizeof st[0]; k++)
      if (strlen(st[k].name) == len && !strncmp(s, st[k].name, len)) break;
    if (k == sizeof st / sizeof st[0]) {
      lt_error("LT_CUDA_TWICE=%s: unknown stage '%.*s' (frame, window, mgvf, snake, band, full, gicov, dilate, "
               "refine, upload, copy)", v, (int)len, s);
      return LT_ERR_USAGE;
    }
    *mask |= st[k].bit;
    s += len;
    if (*s) s++;
  }
  return 0;
}

/* The scratch buffers of LT_CUDA_TWICE's first runs. */
static int twice_alloc(lt_cu_ctx *c)
{
  int err = 0;
  if (c->twice & (LT_TW_MGVF | LT_TW_COPY) && c->split_cap > 0)
    err = lt_cu_buf_get(c, (void **)&c->d_gwin2, sizeof(float) * (size_t)c->win_max * c->split_cap, 0,
                        "LT_CUDA_TWICE's windows");
  if (!err && c->twice & LT_TW_SNAKE)
    err = lt_cu_buf_get(c, (void **)&c->d_cells2, sizeof(lt_leuk_cell) * (size_t)(c->max_cells > 0 ? c->max_cells : 1),
                        0, "LT_CUDA_TWICE's cells");
  if (!err && c->twice & LT_TW_DILATE)
    err = lt_cu_buf_get(c, (void **)&c->d_max2, 16 + sizeof(lt_cu_max) * c->max_cap, 0, "LT_CUDA_TWICE's maxima");
  return err;
}

static int cu_create(void **out, const lt_leuk_params *p, int width, int height, int max_cells)
{
  lt_cu_ctx *c = (lt_cu_ctx *)calloc(1, sizeof *c);
  if (!c) {
    lt_error("out of memory (CUDA context)");
    return LT_ERR_NOMEM;
  }
  int err = 0;
  c->p = *p;
  c->fw = width;
  c->fh = height;
  c->max_cells = max_cells;
  c->dev_cells = -1;
  const char *pv = getenv("LT_CUDA_PREFETCH"); /* experiment: 0 = no prefetch of the next frame */
  c->no_prefetch = pv && strcmp(pv, "0") == 0;
  const char *dv = getenv("LT_CUDA_DSTREAM"); /* experiment: 0 = detection in the tracking's stream */
  c->one_stream = dv && strcmp(dv, "0") == 0;
  const char *gv = getenv("LT_CUDA_GICOV"); /* experiment: pixel = one thread per pixel */
  c->gicov_per_pixel = gv && strcmp(gv, "pixel") == 0;
  const char *bnv = getenv("LT_CUDA_BAND_NP"), *gnv = getenv("LT_CUDA_GICOV_NP"); /* experiments */
  c->band_np = bnv && strcmp(bnv, "1") == 0 ? 1 : 2;
  c->gicov_np = gnv && strcmp(gnv, "4") == 0 ? 4 : 2;
  /* LT_CUDA_AHEAD: 0 = no refinement ahead, 1 = on, 2 = tests: a miss is an
   * error; by default on for one video in flight and off with several
   * (leuktrack --jobs K > 1): there the refinements ahead, ~16 a band of
   * which the pipeline looks up ~1, took the SMs of the other videos'
   * tracking (H100 2026-11-24: --jobs 16 +8-10 % without them,
   * docs/PERFORMANCE.md) */
  const char *av = getenv("LT_CUDA_AHEAD");
  c->ahead_mode = av && !strcmp(av, "0") ? 0 : av && !strcmp(av, "2") ? 2 : av ? 1 : lt_spin_inflight() > 1 ? 0 : 1;
  /* the pipeline's threshold for new cells is never below this
   * (adapt_threshold in pipeline.c: min(gicov_threshold, max(adapt_floor, ...))) */
  c->ahead_lo = p->gicov_adapt > 0 ? fmin(p->gicov_threshold, p->adapt_floor) : p->gicov_threshold;
  c->ahead_cap = AHEAD_CAP;
  const char *ev = getenv("LT_CUDA_ENDWAIT"); /* experiment: all = detect_end waits for the refinement ahead */
  c->end_all = ev && strcmp(ev, "all") == 0;
  const char *wv = getenv("LT_CUDA_WAITS"); /* 1: the host's time in the calls and waits, printed at destroy */
  c->waits_on = wv && strcmp(wv, "1") == 0;
  const char *lv = getenv("LT_CUDA_LATE"); /* experiment: 0 = a split detection launched at detect_start */
  c->late_off = lv && strcmp(lv, "0") == 0;
  const char *mv = getenv("LT_CUDA_DILMAP"); /* experiment: 1 = the dilated map at every detection */
  c->dil_full = mv && strcmp(mv, "1") == 0;
  /* LT_CUDA_SPEC: 0 = nothing made ahead on the next frame; 1 = made ahead
   * also with several videos in flight (--jobs K > 1), where by default it
   * is not (the GPU is kept busy by the other videos) */
  const char *xv = getenv("LT_CUDA_SPEC");
  c->spec_off = (xv ? strcmp(xv, "0") == 0 : lt_spin_inflight() > 1) || c->no_prefetch || c->one_stream ||
                c->late_off || c->dil_full;
  c->spec_early = xv && strcmp(xv, "early") == 0; /* experiment: beside this frame's tracking, not after it */
  /* LT_CUDA_TAIL=N: in a batch's tail (no input left to start, N or fewer
   * videos running) the defaults of one video, where neither LT_CUDA_AHEAD
   * nor LT_CUDA_SPEC chose; 0: never */
  const char *tv = getenv("LT_CUDA_TAIL");
  c->tail_n = tv ? atoi(tv) : LT_CUDA_TAIL_DEFAULT;
  if (c->tail_n < 0 || av || xv || !c->spec_off || c->ahead_mode || lt_spin_inflight() <= 1 || c->no_prefetch ||
      c->one_stream || c->late_off || c->dil_full)
    c->tail_n = 0;
  c->next_bufs = !c->spec_off || c->tail_n > 0;
  c->ahead_n = -1;
  if ((err = twice_parse(&c->twice))) {
    free(c);
    return err;
  }
  lt_stencil st;
  if ((err = lt_stencil_init(&st, p))) {
    free(c);
    return err;
  }
  const size_t n = (size_t)width * height;
  const int N = st.npoints, nr = st.nradii;
  const double t0 = lt_now();
  double t_bufs = t0, t_setup = t0, t_setup_end = t0; /* the -v -v split */
  c->max_cap = n;
  c->refine_cap = n < REFINE_CAP ? (int)n : REFINE_CAP;
  c->max_prefix = c->max_cap < MAX_PREFIX ? c->max_cap : MAX_PREFIX;
  /* tests: smaller batches of refinement jobs and a shorter maxima prefix,
   * so that the paths for more of them run (LT_CUDA_REFINE_CAP=N, LT_CUDA_MAX_PREFIX=N) */
  const char *rcv = getenv("LT_CUDA_REFINE_CAP"), *mpv = getenv("LT_CUDA_MAX_PREFIX");
  if (rcv && atoi(rcv) >= 1 && atoi(rcv) < c->refine_cap) c->refine_cap = atoi(rcv);
  if (mpv && atoi(mpv) >= 1 && (size_t)atoi(mpv) < c->max_prefix) c->max_prefix = atoi(mpv);
  /* the entry band (53 x 480 px with the defaults) and other ROIs up to 1/4 of
   * a 640x480 frame take the packed GICOV kernels (detect.cu) */
  c->band_cap = n < 76800 ? n : 76800;
  /* the tracking's stream has the higher priority: the band's detection
   * beside it (dstream) takes the SMs the tracking's blocks leave
   * (LT_CUDA_PRIO=0: both the default priority) */
  const char *pr = getenv("LT_CUDA_PRIO");
  int prio_low = 0, prio_high = 0;
  if (!(pr && strcmp(pr, "0") == 0) && cudaDeviceGetStreamPriorityRange(&prio_low, &prio_high) != cudaSuccess) {
    (void)cudaGetLastError();
    prio_low = prio_high = 0;
  }
  cudaError_t e = cudaStreamCreateWithPriority(&c->stream, cudaStreamNonBlocking, prio_high);
  if (e != cudaSuccess) {
    err = lt_cuda_fail(e, "creating the stream");
    goto fail;
  }
  {
    /* the next frame's buffers and the second detection set only where the
     * next frame is made ahead (spec_issue) */
    const size_t ncell = 1 + (max_cells > 0 ? max_cells : 1);
    blk_plan bp;
    memset(&bp, 0, sizeof bp);
    blk_add(&bp, &c->d_cos, sizeof(float) * N, 0);
    blk_add(&bp, &c->d_sin, sizeof(float) * N, 0);
    blk_add(&bp, &c->d_cs, sizeof(float2) * N, 0);
    blk_add(&bp, &c->d_dx, sizeof(int) * N * nr, 0);
    blk_add(&bp, &c->d_dy, sizeof(int) * N * nr, 0);
    blk_add(&bp, &c->d_off, sizeof(int) * N * nr, 0);
    blk_add(&bp, &c->d_frame, sizeof(float) * n, 0);
    blk_add(&bp, &c->d_frame8, n, 0);
    blk_add(&bp, &c->d_pref8, n, 0);
    blk_add(&bp, &c->h_pref8, n, 1);
    blk_add(&bp, &c->d_grad, sizeof(float2) * n, 0); /* frame_kernel */
    blk_add(&bp, &c->h_frame8[0], n, 1);
    blk_add(&bp, &c->h_frame8[1], n, 1);
    dset_plan(c, &bp, &c->ds, n, nr);
    if (c->next_bufs) {
      blk_add(&bp, &c->d_frame_next, sizeof(float) * n, 0);
      blk_add(&bp, &c->d_grad_next, sizeof(float2) * n, 0);
      dset_plan(c, &bp, &c->ds_next, n, nr);
    }
    blk_add(&bp, &c->d_dil, sizeof(float) * n, 0);
    blk_add(&bp, &c->d_rin, sizeof(lt_cu_refine_in) * c->refine_cap, 0);
    blk_add(&bp, &c->h_rin, sizeof(lt_cu_refine_in) * c->refine_cap, 1);
    blk_add(&bp, &c->d_rout, sizeof(lt_cu_refine_out) * c->refine_cap, 0);
    blk_add(&bp, &c->h_rout, sizeof(lt_cu_refine_out) * c->refine_cap, 1);
    blk_add(&bp, &c->d_err, sizeof(lt_leuk_cell) * ncell, 0);
    blk_add(&bp, &c->h_err, sizeof(lt_leuk_cell) * ncell, 1);
    blk_add(&bp, &c->d_iters, sizeof(int), 0);
    if (p->appearance > 0 && max_cells > 0) { /* the template slots (kp.tpl below) and their staging */
      blk_add(&bp, &c->d_tpl, sizeof(float) * LT_LEUK_TPL_N * (size_t)max_cells, 0);
      blk_add(&bp, &c->h_tpl, sizeof(float) * LT_LEUK_TPL_N * LT_CU_TPL_PEND, 1);
    }
    if ((err = blk_alloc(c, &bp)) || (err = dset_init(c, &c->ds)) ||
        (c->next_bufs && (err = dset_init(c, &c->ds_next))))
      goto fail;
  }
  /* one block per direction and frame: a cell-sized slot with the error
   * flag, then the cells (one upload clears the flag, one copy brings
   * both back) */
  t_bufs = lt_now();
  c->d_cells = (lt_leuk_cell *)c->d_err + 1;
  c->h_cells = (lt_leuk_cell *)c->h_err + 1;
  for (int i = 0; i < 2; i++)
    if ((e = cudaEventCreateWithFlags(&c->ev_staged[i], cudaEventDisableTiming)) != cudaSuccess) {
      err = lt_cuda_fail(e, "creating events");
      goto fail;
    }
  if ((e = cudaEventCreateWithFlags(&c->ev_pref, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&c->ev_pref_read, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&c->ustream, cudaStreamNonBlocking)) != cudaSuccess) {
    err = lt_cuda_fail(e, "creating the upload stream");
    goto fail;
  }
  if ((e = cudaEventCreateWithFlags(&c->ev_frame, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&c->ev_tracked, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaEventCreateWithFlags(&c->ev_spec_frame, cudaEventDisableTiming)) != cudaSuccess ||
      (e = cudaStreamCreateWithPriority(&c->dstream, cudaStreamNonBlocking, prio_low)) != cudaSuccess ||
      (e = cudaStreamCreateWithPriority(&c->sstream, cudaStreamNonBlocking, prio_low)) != cudaSuccess) {
    err = lt_cuda_fail(e, "creating the detection stream");
    goto fail;
  }
  if ((err = lt_cuda_timer_init(&c->tm, tnames, T_N))) goto fail;
  /* stencils: the CPU's own tables, so the geometry is identical */
  if ((e = upload_trigf(c->d_cos, c->d_sin, &st)) != cudaSuccess ||
      (e = cudaMemcpy(c->d_dx, st.dx, sizeof(int) * N * nr, cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(c->d_dy, st.dy, sizeof(int) * N * nr, cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = upload_offsets(c->d_off, &st, N * nr, width)) != cudaSuccess ||
      (e = upload_cs(c->d_cs, &st)) != cudaSuccess) {
    err = lt_cuda_fail(e, "uploading the stencils");
    goto fail;
  }
  {
    lt_cu_params *k = &c->kp;
    memset(k, 0, sizeof *k);
    k->fw = width;
    k->fh = height;
    k->npoints = N;
    k->nradii = nr;
    for (int i = 0; i < nr; i++) k->radius[i] = st.radius[i];
    k->border_all = st.border_all;
    k->rstep = nr > 1 ? st.radius[1] - st.radius[0] : 1;
    k->cosv = c->d_cos;
    k->sinv = c->d_sin;
    k->cs = c->d_cs;
    /* the GICOV maps' cos/sin as a kernel parameter for the default sample
     * count (detect.cu; LT_CUDA_GICOV_TRIG=0: from global memory, an experiment) */
    const char *gt = getenv("LT_CUDA_GICOV_TRIG");
    c->gicov_fixed = N == LT_CU_TRIG_N && !(gt && strcmp(gt, "0") == 0);
    for (int i = 0; c->gicov_fixed && i < N; i++) {
      c->trig.c[i] = (float)st.cosv[i]; /* gicov.c's factors */
      c->trig.s[i] = (float)st.sinv[i];
    }
    k->dx = c->d_dx;
    k->dy = c->d_dy;
    k->off = c->d_off;
    frame_grad_set(c, c->d_grad);
    k->search = p->search;
    k->mgvf_ml = (float)(p->mgvf_mu / p->mgvf_lambda);
    k->mgvf_il = (float)(1.0 / p->mgvf_lambda);
    k->mgvf_col = p->mgvf_col > 0 ? (float)p->mgvf_col : 0.0f;
    k->mgvf_tol = p->mgvf_tol;
    k->mgvf_max_iter = p->mgvf_max_iter;
    k->evolve_tol = p->evolve_tol;
    k->evolve_max_iter = p->evolve_max_iter;
    k->roi = p->roi;
    k->lost_score = p->lost_fraction * p->gicov_threshold;
    k->rstep_param = p->rstep;
    k->appearance = p->appearance;
    k->tpl_thr = p->gicov_threshold;
    k->tpl = c->d_tpl;
    const char *nl = getenv("LT_CUDA_NCC_LANES");
    k->ncc_lanes = nl && (!strcmp(nl, "2") || !strcmp(nl, "4") || !strcmp(nl, "8")) ? atoi(nl) : 0;
    /* LT_CUDA_TIMING=2: per-phase cycle counters in the tracking kernels */
    const char *tv = getenv("LT_CUDA_TIMING");
    if (tv && !strcmp(tv, "2") &&
        cudaMalloc(&c->d_prof, sizeof(unsigned long long) * LT_CU_PROF_N) == cudaSuccess &&
        cudaMemset(c->d_prof, 0, sizeof(unsigned long long) * LT_CU_PROF_N) == cudaSuccess)
      k->prof = c->d_prof;
    (void)cudaGetLastError();
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      k->ct[j] = cos(lt_snaxel_angle(j));
      k->st[j] = sin(lt_snaxel_angle(j));
    }
  }
  t_setup = lt_now();
  if ((err = lt_cu_refine_init()) || (err = lt_cu_track_setup(c))) goto fail;
  t_setup_end = lt_now();
  if ((err = lt_cu_buf_get(c, (void **)&c->d_win, sizeof(float) * 2 * (size_t)c->win_max, 0, "the MGVF test window")))
    goto fail;
  if ((err = twice_alloc(c))) goto fail;
  lt_stencil_free(&st);
  {
    /* LT_CUDA_SYNC=spin|yield|block: how a host thread waits for the GPU
     * (the process's device flags, set once by the first context) */
    static int sync_set;
    const char *sv = getenv("LT_CUDA_SYNC");
    if (sv && !__atomic_exchange_n(&sync_set, 1, __ATOMIC_RELAXED)) {
      const unsigned fl = !strcmp(sv, "yield") ? cudaDeviceScheduleYield
                          : !strcmp(sv, "block") ? cudaDeviceScheduleBlockingSync
                          : !strcmp(sv, "spin") ? cudaDeviceScheduleSpin : cudaDeviceScheduleAuto;
      cudaError_t se = cudaSetDeviceFlags(fl);
      lt_debug("cuda: LT_CUDA_SYNC=%s: %s", sv, cudaGetErrorString(se));
      (void)cudaGetLastError();
    }
  }
  __atomic_add_fetch(&live_contexts, 1, __ATOMIC_RELAXED);
  c->live_counted = 1;
  lt_info("cuda: %dx%d frames, %d cells max, tracking windows in %s memory (%zu KB per block)", width, height,
          max_cells, c->track_in_shared ? "shared" : "global", c->track_smem / 1024);
  lt_debug("cuda: buffers, tables and kernel attributes set up in %.1f ms (buffers %.1f, streams, events and "
           "tables %.1f, kernel set-up %.1f; ready at +%.1f ms)", 1e3 * (lt_now() - t0), 1e3 * (t_bufs - t0),
           1e3 * (t_setup - t_bufs), 1e3 * (t_setup_end - t_setup), lt_since_start_ms());
  *out = c;
  return 0;
fail:
  lt_stencil_free(&st);
  cu_destroy(c);
  return err ? err : LT_ERR_GPU;
}

/* Frame -> 8 bit; returns nonzero when a pixel is not an integer 0..255
 * (then the float path is used). SSE2: 16 pixels per step. */
static int pack8(const float *frame, unsigned char *h8, size_t n)
{
  size_t k = 0;
  int bad = 0;
#ifdef __SSE2__
  __m128 b = _mm_setzero_ps();
  const __m128 lo = _mm_setzero_ps(), hi = _mm_set1_ps(255.0f);
  for (; k + 16 <= n; k += 16) {
    __m128i q[4];
    for (int i = 0; i < 4; i++) {
      __m128 v = _mm_loadu_ps(frame + k + 4 * i);
      q[i] = _mm_cvttps_epi32(v);
      b = _mm_or_ps(b, _mm_or_ps(_mm_cmpneq_ps(_mm_cvtepi32_ps(q[i]), v),
                                 _mm_or_ps(_mm_cmplt_ps(v, lo), _mm_cmpgt_ps(v, hi))));
    }
    _mm_storeu_si128((__m128i *)(h8 + k),
                     _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
  }
  bad = _mm_movemask_ps(b) != 0;
#endif
  for (; k < n; k++) {
    float v = frame[k];
    int q = (int)v;
    h8[k] = (unsigned char)q;
    bad |= !(v >= 0.0f && v <= 255.0f) || (float)q != v;
  }
  return bad;
}

static int set_frame(lt_cu_ctx *c, const float *frame, const unsigned char *frame8);
static int cu_set_frame(void *vctx, const float *frame, const unsigned char *frame8)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (!c->waits_on) return set_frame(c, frame, frame8);
  const double t0 = lt_now();
  const int err = set_frame(c, frame, frame8);
  c->w_set += lt_now() - t0;
  return err;
}

static int set_frame(lt_cu_ctx *c, const float *frame, const unsigned char *frame8)
{
  const size_t n = (size_t)c->fw * c->fh;
  const int i = c->stage_i;
  c->stage_i ^= 1;
  c->frames++;
  LT_CU(cudaEventSynchronize(c->ev_staged[i]), "waiting for a frame upload");
  lt_cu_tic(c, T_UPLOAD);
  /* Decoded 8-bit video gives integer pixels: send a quarter of the bytes. */
  /* the decode thread already made the bytes when the frame is 8-bit */
  const int prefetched = frame8 && frame8 == c->pref_src;
  c->pref_src = c->pref_req = NULL; /* a prefetch is good for the next set_frame only */
  const int ahead = prefetched && frame8 == c->spec_src;
  c->spec_src = NULL; /* so is what spec_issue made of it */
  c->spec_band = ahead && c->spec_band == 1 ? 2 : 0;
  if (ahead) { /* converted on the detection's side (spec_issue): swap the frame buffers */
    float *f = c->d_frame;
    c->d_frame = c->d_frame_next;
    c->d_frame_next = f;
    float2 *g = c->d_grad;
    c->d_grad = c->d_grad_next;
    c->d_grad_next = g;
    frame_grad_set(c, c->d_grad);
    LT_CU(cudaStreamWaitEvent(c->stream, c->ev_spec_frame, 0), "waiting for the next frame");
    lt_cu_toc(c, T_UPLOAD);
    return 0;
  }
  int bad = 0;
  if (prefetched) { /* its bytes are (being) uploaded to d_pref8 */
    LT_CU(cudaStreamWaitEvent(c->stream, c->ev_pref, 0), "waiting for the next frame's upload");
    frame_launch(c, c->stream, c->d_pref8, NULL, c->d_frame, c->d_grad, c->fw, c->fh);
    LT_CU(cudaGetLastError(), "the frame conversion kernel launch");
    LT_CU(cudaEventRecord(c->ev_pref_read, c->stream), "the frame upload"); /* d_pref8 free after this */
    lt_cu_toc(c, T_UPLOAD);
    return 0;
  }
  if (frame8)
    memcpy(c->h_frame8[i], frame8, n);
  else
    bad = pack8(frame, c->h_frame8[i], n);
  unsigned char *h8 = c->h_frame8[i];
  if (!bad) {
    for (int rep = c->twice & LT_TW_UPLOAD ? 2 : 1; rep > 0; rep--) /* LT_CUDA_TWICE=upload */
      LT_CU(cudaMemcpyAsync(c->d_frame8, h8, n, cudaMemcpyHostToDevice, c->stream), "the frame upload");
    LT_CU(cudaEventRecord(c->ev_staged[i], c->stream), "the frame upload");
    frame_launch(c, c->stream, c->d_frame8, NULL, c->d_frame, c->d_grad, c->fw, c->fh);
    LT_CU(cudaGetLastError(), "the frame conversion kernel launch");
  } else {
    /* the float staging, at the first frame that is not 8-bit */
    int err;
    for (int k = 0; k < 2; k++)
      if (!c->h_framef[k] && (err = lt_cu_buf_get(c, (void **)&c->h_framef[k], sizeof(float) * n, 1,
                                                  "the pinned float frame staging")))
        return err;
    memcpy(c->h_framef[i], frame, sizeof(float) * n);
    LT_CU(cudaMemcpyAsync(c->d_frame, c->h_framef[i], sizeof(float) * n, cudaMemcpyHostToDevice, c->stream),
          "the frame upload");
    LT_CU(cudaEventRecord(c->ev_staged[i], c->stream), "the frame upload");
    frame_launch(c, c->stream, NULL, c->d_frame, c->d_frame, c->d_grad, c->fw, c->fh);
    LT_CU(cudaGetLastError(), "the frame gradient kernel launch");
  }
  lt_cu_toc(c, T_UPLOAD);
  return 0;
}

/* The next frame (prefetch): its 8-bit bytes go into pinned memory and up
 * on the upload stream into d_pref8 while the current frame is tracked:
 * cu_track starts it after launching its kernels, so the host copy and the
 * transfer both overlap the GPU work, and the next set_frame only converts.
 * Frames that are not 8-bit go the normal way. */
static int cu_prefetch(void *vctx, const float *frame, const unsigned char *frame8)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  (void)frame;
  if (!c->no_prefetch) c->pref_req = frame8;
  return 0;
}

static int prefetch_issue(lt_cu_ctx *c)
{
  if (!c->pref_req) return 0;
  const size_t n = (size_t)c->fw * c->fh;
  /* h_pref8: the last prefetch's transfer out of it is done */
  LT_CU(cudaEventSynchronize(c->ev_pref), "waiting for a frame upload");
  memcpy(c->h_pref8, c->pref_req, n);
  /* d_pref8: the frame kernel that read the last prefetch is done */
  LT_CU(cudaStreamWaitEvent(c->ustream, c->ev_pref_read, 0), "ordering the frame uploads");
  for (int rep = c->twice & LT_TW_UPLOAD ? 2 : 1; rep > 0; rep--) /* LT_CUDA_TWICE=upload */
    LT_CU(cudaMemcpyAsync(c->d_pref8, c->h_pref8, n, cudaMemcpyHostToDevice, c->ustream), "the next frame's upload");
  LT_CU(cudaEventRecord(c->ev_pref, c->ustream), "the next frame's upload");
  c->pref_src = c->pref_req;
  c->pref_req = NULL;
  return 0;
}

static int cmp_max(const void *a, const void *b)
{
  int x = ((const lt_cu_max *)a)->idx, y = ((const lt_cu_max *)b)->idx;
  return (x > y) - (x < y);
}

/* The detection's launches and the copy of the maxima (those over lo > 0
 * only), into c->stream. */
static int detect_enqueue(lt_cu_ctx *c, const lt_rect *roi, double lo)
{
  lt_cu_tic(c, T_DETECT);
  int err = lt_cu_detect_launch(c, roi, lo);
  if (err) return err;
  size_t pre = c->max_prefix;
  LT_CU(cudaMemcpyAsync(c->ds.h_maxbuf, c->ds.maxbuf, 16 + sizeof(lt_cu_max) * pre, cudaMemcpyDeviceToHost, c->stream),
        "copying the maxima back");
  lt_cu_toc(c, T_DETECT);
  return 0;
}

/* detect = detect_start + detect_end: the launches and the copy of the
 * maxima go into the detection stream, which first waits for the frame
 * (its upload and gradient in the main stream); detect_end waits for them.
 * The pipeline queues the tracking in between, so the entry band's
 * detection runs beside the tracking kernels (they only read the frame;
 * the next set_frame comes after detect_end). LT_CUDA_DSTREAM=0: one
 * stream, the detection before the tracking. */
/* The detection's launches on its stream, after the frame (ev_frame, recorded
 * by detect_start), and its refinement ahead. For a split detection cu_track
 * calls this once the tracking's kernels are launched (the tracking, on the
 * frame's critical path, starts first; the band's work still ends well
 * before it), detect_end when no tracking came in between
 * (LT_CUDA_LATE=0: at detect_start). */
static int ahead_issue(lt_cu_ctx *c);

/* The detection's launches and its copy of the maxima on dstream, then,
 * when a refinement ahead follows and detect_end waits for the maxima
 * alone (end_maxed), their event, then the refinement ahead. */
static int detect_enqueue_all(lt_cu_ctx *c)
{
  cudaStream_t main_stream = c->stream;
  c->stream = c->dstream; /* the launchers and timers use c->stream */
  int err = detect_enqueue(c, &c->pending_roi, c->list_lo);
  c->stream = main_stream;
  if (err) return err;
  if (c->end_maxed) LT_CU(cudaEventRecord(c->ds.maxed, c->dstream), "ordering the detection");
  return ahead_issue(c);
}

static int detect_issue(lt_cu_ctx *c)
{
  if (!c->detect_queued) return 0;
  c->detect_queued = 0;
  const double t0 = c->waits_on ? lt_now() : 0;
  LT_CU(cudaStreamWaitEvent(c->dstream, c->ev_frame, 0), "ordering the detection");
  /* detect_end waits for the maxima alone when a refinement ahead follows
   * (refine waits for that when it has jobs) */
  c->end_maxed = c->ahead_queued && !c->end_all && !c->tm.on;
  int err = detect_enqueue_all(c);
  if (err) return err;
  LT_CU(cudaEventRecord(c->ds.done, c->dstream), "ordering the detection");
  if (c->waits_on) c->w_band += lt_now() - t0;
  return 0;
}

static int detect_start(lt_cu_ctx *c, const lt_rect *roi, int ahead, double lo)
{
  c->ahead_n = -1; /* a new detection: the last one's refinements are gone */
  c->ahead_pending = 0;
  c->end_maxed = 0;
  if (roi->x < 0 || roi->y < 0 || roi->w < 1 || roi->h < 1 || roi->x + roi->w > c->fw || roi->y + roi->h > c->fh) {
    lt_error("detect: ROI %d,%d,%d,%d outside the %dx%d frame", roi->x, roi->y, roi->w, roi->h, c->fw, c->fh);
    return LT_ERR_USAGE;
  }
  int err = 0;
  c->pending_roi = *roi;
  c->pending_lo = lo > c->ahead_lo ? lo : c->ahead_lo;
  c->have_pending = 1;
  c->ahead_queued = ahead && c->ahead_mode && !c->one_stream;
  c->spec_taken = 0;
  const int spec = c->spec_band == 2; /* made ahead for this frame (not the next one's, 1) */
  if (spec) c->spec_band = 0;
  /* the whole entry ROI (the pipeline's detection every detect_every
   * frames, split like a band's: it reads the frame only) is refined ahead
   * too, but never made ahead (spec_issue skips those frames) and is not the
   * next frame's band, unless the entry ROI is too small for bands and so is
   * the band (entry_bands in pipeline.c: a band is 2 (rmax + 2) + 1 + search
   * deep) */
  const lt_rect *e = &c->p.entry_roi;
  const int depth = 2 * (c->p.rmax + 2) + 1 + c->p.search;
  const int entry = roi->x == e->x && roi->y == e->y && roi->w == e->w && roi->h == e->h && e->w >= 2 * depth &&
                    e->h >= 2 * depth;
  /* a band's list holds only the maxima the caller takes (over its lo);
   * the entry ROI's all of them (its threshold adapts to their median) */
  c->list_lo = ahead && !entry && lo > 0 ? lo : 0.0;
  if (ahead && !entry) {
    if (spec && c->spec_roi.x == roi->x && c->spec_roi.y == roi->y && c->spec_roi.w == roi->w &&
        c->spec_roi.h == roi->h && lo >= c->ahead_lo) {
      /* made ahead on this frame (spec_issue, its list over ahead_lo): its buffers become the detection's */
      lt_cu_dset d = c->ds;
      c->ds = c->ds_next;
      c->ds_next = d;
      c->detect_queued = 0;
      c->ahead_pending = c->ahead_queued;
      c->ahead_queued = 0;
      c->dil_valid = 0;
      c->spec_taken = 1;
      c->spec_hits++;
      c->band_roi = *roi;
      return 0;
    }
    c->spec_misses++;
    c->band_roi = *roi; /* the next frame's band, most likely */
    c->have_band = 1;
  }
  if (c->one_stream) {
    err = detect_enqueue(c, roi, c->list_lo);
  } else {
    LT_CU(cudaEventRecord(c->ev_frame, c->stream), "ordering the detection");
    c->detect_queued = 1;
    if (!ahead || c->late_off) err = detect_issue(c);
  }
  return err;
}

/* The refinement ahead of the detection just queued (refine.cu), on the
 * detection's stream after it, and the copy of its results. */
static int ahead_issue(lt_cu_ctx *c)
{
  if (!c->ahead_queued) return 0;
  c->ahead_queued = 0;
  lt_cuda_timer_tic(&c->tm, T_AHEAD, c->dstream);
  int err = lt_cu_refine_ahead_launch(c, &c->pending_roi, c->pending_lo, c->dstream);
  if (err) return err;
  LT_CU(cudaMemcpyAsync(c->ds.h_ahead, c->ds.ahead, 16 + sizeof(lt_cu_refine_ahead) * AHEAD_PREFIX,
                        cudaMemcpyDeviceToHost, c->dstream),
        "copying the refinements back");
  lt_cuda_timer_toc(&c->tm, T_AHEAD, c->dstream);
  c->ahead_pending = 1;
  return 0;
}

static int cmp_ahead(const void *a, const void *b)
{
  int x = ((const lt_cu_refine_ahead *)a)->idx, y = ((const lt_cu_refine_ahead *)b)->idx;
  return (x > y) - (x < y);
}

/* After the detection's stream is done: the refinements ahead, sorted by
 * index (the rest of the list copied when it is longer than the prefix). */
static int ahead_collect(lt_cu_ctx *c)
{
  if (!c->ahead_pending) return 0;
  c->ahead_pending = 0;
  int n = c->ds.h_ahead[0];
  c->ahead_jobs += n;
  if (n > c->ahead_cap) return 0; /* too many: refine does its own */
  lt_cu_refine_ahead *list = (lt_cu_refine_ahead *)(c->ds.h_ahead + 4);
  if (n > AHEAD_PREFIX)
    LT_CU(cudaMemcpy(list + AHEAD_PREFIX, (lt_cu_refine_ahead *)(c->ds.ahead + 4) + AHEAD_PREFIX,
                     sizeof(lt_cu_refine_ahead) * (n - AHEAD_PREFIX), cudaMemcpyDeviceToHost),
          "copying the refinements back");
  static const int ks[] = {T_AHEAD};
  if (!c->spec_taken) timing_collect(c, ks, 1); /* made ahead: not timed */
  qsort(list, n, sizeof *list, cmp_ahead);
  c->ahead_n = n;
  return 0;
}

/* lo: the pipeline refines only maxima over it (its threshold of new cells,
 * known before a band's detection; 0 for the entry ROI's, whose threshold
 * adapts to its maxima): fewer refinements ahead than over ahead_lo */
static int cu_detect_start(void *vctx, const lt_rect *roi, double lo)
{
  return detect_start((lt_cu_ctx *)vctx, roi, 1, lo);
}

static int cu_detect_end(void *vctx, lt_leuk_max *out, int cap, int *n)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  *n = 0;
  if (!c->have_pending) {
    lt_error("detect_end called without detect_start");
    return LT_ERR_INTERNAL;
  }
  c->have_pending = 0;
  const lt_rect *roi = &c->pending_roi;
  size_t pre = c->max_prefix;
  int err = detect_issue(c); /* no tracking came in between */
  if (err) return err;
  if (c->tm.on && c->spec_taken) { /* LT_CUDA_TIMING: did the band made ahead make the host wait? */
    c->spec_late_end += cudaEventQuery(c->ds.done) == cudaErrorNotReady;
    (void)cudaGetLastError();
  }
  const double t0 = c->waits_on ? lt_now() : 0;
  if (c->waits_on) {
    c->n_end++;
    c->n_end_late += cudaEventQuery(c->end_maxed ? c->ds.maxed : c->ds.done) == cudaErrorNotReady;
    (void)cudaGetLastError();
  }
  if (c->one_stream)
    LT_CU(cudaStreamSynchronize(c->stream), "the detection kernels");
  else
    LT_CU(cudaEventSynchronize(c->end_maxed ? c->ds.maxed : c->ds.done), "the detection kernels");
  if (c->waits_on) c->w_end += lt_now() - t0;
  if (!c->end_maxed && (err = ahead_collect(c))) return err; /* else refine collects them when it has jobs */
  int cnt = c->ds.h_maxbuf[0];
  if (cnt > (int)c->max_cap) cnt = (int)c->max_cap;
  lt_cu_max *list = (lt_cu_max *)(c->ds.h_maxbuf + 4);
  if ((size_t)cnt > pre) { /* beyond the pinned prefix: all of them in pageable memory (rare) */
    if (!c->h_maxall && !(c->h_maxall = (lt_cu_max *)malloc(sizeof(lt_cu_max) * c->max_cap))) {
      lt_error("out of memory (%d maxima)", cnt);
      return LT_ERR_NOMEM;
    }
    memcpy(c->h_maxall, list, sizeof(lt_cu_max) * pre);
    list = c->h_maxall;
    LT_CU(cudaMemcpy(list + pre, (lt_cu_max *)(c->ds.maxbuf + 4) + pre, sizeof(lt_cu_max) * (cnt - pre),
                     cudaMemcpyDeviceToHost),
          "copying the maxima back");
  }
  static const int ks[] = {T_UPLOAD, T_DETECT, T_GRAD, T_GICOV, T_DILATE};
  timing_collect(c, ks, c->spec_taken ? 1 : 5);
  qsort(list, cnt, sizeof *list, cmp_max);
  int k = cnt < cap ? cnt : cap;
  for (int i = 0; i < k; i++) {
    out[i].x = list[i].idx % roi->w + roi->x;
    out[i].y = list[i].idx / roi->w + roi->y;
    out[i].gicov = list[i].gicov;
    out[i].radius = list[i].radius;
  }
  *n = k;
  c->last_roi = *roi;
  c->have_detect = 1;
  return 0;
}

static int cu_detect(void *vctx, const lt_rect *roi, lt_leuk_max *out, int cap, int *n)
{
  *n = 0;
  int err = detect_start((lt_cu_ctx *)vctx, roi, 0, 0); /* refine follows at once: nothing to gain ahead */
  return err ? err : cu_detect_end(vctx, out, cap, n);
}

static int cu_refine(void *vctx, const lt_leuk_max *m, int n, lt_leuk_det *out)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (n <= 0) return 0;
  if (!c->have_detect) {
    lt_error("refine called before detect");
    return LT_ERR_INTERNAL;
  }
  const lt_rect *roi = &c->last_roi;
  if (c->ahead_pending) { /* detect_end waited for the maxima only: now the refinements ahead */
    const double t0 = c->waits_on ? lt_now() : 0;
    LT_CU(cudaEventSynchronize(c->ds.done), "the refinement ahead");
    if (c->waits_on) {
      c->w_ahead += lt_now() - t0;
      c->n_ahead_wait++;
    }
    int err = ahead_collect(c);
    if (err) return err;
  }
  if (c->ahead_n >= 0) { /* look the jobs up among the refinements ahead */
    const lt_cu_refine_ahead *list = (const lt_cu_refine_ahead *)(c->ds.h_ahead + 4);
    int i = 0;
    for (; i < n; i++) {
      lt_cu_refine_ahead key;
      key.idx = (m[i].y - roi->y) * roi->w + (m[i].x - roi->x);
      const lt_cu_refine_ahead *a = (const lt_cu_refine_ahead *)bsearch(&key, list, c->ahead_n, sizeof *list, cmp_ahead);
      if (!a) break;
      out[i].x = a->o.x;
      out[i].y = a->o.y;
      out[i].r = a->o.r;
      out[i].gicov = m[i].gicov;
      out[i].ok = a->o.ok;
    }
    if (i == n) {
      c->ahead_hits += n;
      return 0;
    }
    c->ahead_misses++;
    if (c->ahead_mode == 2) {
      lt_error("refine: the maximum at (%d, %d) was not refined ahead", m[i].x, m[i].y);
      return LT_ERR_INTERNAL;
    }
  }
  const double t0 = c->waits_on ? lt_now() : 0;
  for (int b = 0; b < n; b += c->refine_cap) {
    int k = n - b < c->refine_cap ? n - b : c->refine_cap;
    for (int i = 0; i < k; i++) {
      const lt_leuk_max *q = &m[b + i];
      c->h_rin[i].x0 = q->x - roi->x;
      c->h_rin[i].y0 = q->y - roi->y;
      c->h_rin[i].r0 = q->radius;
      c->h_rin[i].sign = q->gicov >= 0 ? 1 : -1;
      c->h_rin[i].pad = 0;
    }
    lt_cu_tic(c, T_REFINE);
    LT_CU(cudaMemcpyAsync(c->d_rin, c->h_rin, sizeof(lt_cu_refine_in) * k, cudaMemcpyHostToDevice, c->stream),
          "uploading the refinement jobs");
    int err = lt_cu_refine_launch(c, k);
    if (err) return err;
    LT_CU(cudaMemcpyAsync(c->h_rout, c->d_rout, sizeof(lt_cu_refine_out) * k, cudaMemcpyDeviceToHost, c->stream),
          "copying the refined detections back");
    lt_cu_toc(c, T_REFINE);
    LT_CU(cudaStreamSynchronize(c->stream), "the refinement kernel");
    static const int ks[] = {T_REFINE};
    timing_collect(c, ks, 1);
    for (int i = 0; i < k; i++) {
      out[b + i].x = c->h_rout[i].x;
      out[b + i].y = c->h_rout[i].y;
      out[b + i].r = c->h_rout[i].r;
      out[b + i].gicov = m[b + i].gicov;
      out[b + i].ok = c->h_rout[i].ok;
    }
  }
  if (c->waits_on) {
    c->w_refine += lt_now() - t0;
    c->n_refine++;
  }
  return 0;
}

/* The entry band's detection of the next frame and its refinement ahead,
 * into ds_next on sstream (spec_issue); the launchers work on c's frame,
 * detection buffers and stream, so these are swapped around them. */
static int spec_band_enqueue(lt_cu_ctx *c)
{
  /* the maxima over the lowest threshold the caller can give (detect_start
   * takes it when its lo is not lower) */
  int err = detect_enqueue(c, &c->spec_roi, c->ahead_lo);
  if (err) return err;
  if (c->ahead_mode) {
    /* the caller's threshold for the next frame is not known yet: the lowest */
    if ((err = lt_cu_refine_ahead_launch(c, &c->spec_roi, c->ahead_lo, c->stream))) return err;
    LT_CU(cudaMemcpyAsync(c->ds.h_ahead, c->ds.ahead, 16 + sizeof(lt_cu_refine_ahead) * AHEAD_PREFIX,
                          cudaMemcpyDeviceToHost, c->stream),
          "copying the refinements back");
  }
  LT_CU(cudaEventRecord(c->ds.done, c->stream), "ordering the detection");
  return 0;
}

/* The next frame ahead (issue 15). When its bytes went up just now
 * (prefetch_issue), its conversion and gradient go into d_frame_next and,
 * unless it takes a full detection, the entry band's detection at the last
 * band's ROI (the flow seldom changes sides) and its refinement ahead into
 * ds_next, on sstream after this frame's tracking kernels: the GPU does them
 * while the host finishes this frame, where they took SMs from the
 * tracking beside it before. set_frame takes the frame when it is those
 * bytes, detect_start the band when it is that ROI; else they are dropped
 * and made as before. A pure function of the bytes and the ROI: the same
 * results either way. */
static int spec_issue(lt_cu_ctx *c)
{
  if (c->spec_off || !c->pref_src) return 0;
  if (!c->spec_early) {
    LT_CU(cudaEventRecord(c->ev_tracked, c->stream), "ordering the next frame");
    LT_CU(cudaStreamWaitEvent(c->sstream, c->ev_tracked, 0), "ordering the next frame");
  }
  LT_CU(cudaStreamWaitEvent(c->sstream, c->ev_pref, 0), "ordering the next frame");
  frame_launch(c, c->sstream, c->d_pref8, NULL, c->d_frame_next, c->d_grad_next, c->fw, c->fh);
  LT_CU(cudaGetLastError(), "the frame conversion kernel launch");
  LT_CU(cudaEventRecord(c->ev_pref_read, c->sstream), "the next frame's conversion"); /* d_pref8 free */
  LT_CU(cudaEventRecord(c->ev_spec_frame, c->sstream), "the next frame's conversion");
  c->spec_src = c->pref_src;
  c->spec_band = 0;
  if (!c->have_band || c->frames % c->p.detect_every == 0) return 0; /* c->frames: the next frame's index */
  c->spec_roi = c->band_roi;
  /* ds_next's last detection may still refine ahead (detect_end waited for
   * its maxima only) */
  LT_CU(cudaStreamWaitEvent(c->sstream, c->ds_next.done, 0), "ordering the next frame");
  cudaStream_t st = c->stream;
  float *f = c->d_frame;
  float2 *g = c->d_grad;
  lt_cu_dset d = c->ds;
  const int dv = c->dil_valid, tm = c->tm.on;
  c->stream = c->sstream;
  c->d_frame = c->d_frame_next;
  frame_grad_set(c, c->d_grad_next);
  c->ds = c->ds_next;
  c->tm.on = 0;
  int err = spec_band_enqueue(c);
  c->stream = st;
  c->d_frame = f;
  frame_grad_set(c, g);
  c->ds = d;
  c->dil_valid = dv;
  c->tm.on = tm;
  c->spec_band = !err; /* 2 once set_frame takes the frame */
  return err;
}

/* The batch's tail: once few videos are left running, what one video alone
 * does (the refinement ahead, the next frame made ahead) shortens theirs.
 * Checked as a frame's tracking starts: nothing was made ahead for this
 * frame (spec_off until now) and a detection queued by detect_start keeps
 * the refinement ahead it was queued with (none); from spec_issue on, both
 * are on. One-way; either path gives the same results. */
static void tail_check(lt_cu_ctx *c)
{
  const int t = c->tail_n > 0 ? lt_spin_tail() : 0;
  if (t <= 0 || t > c->tail_n) return;
  c->tail_n = 0;
  c->spec_off = 0;
  c->ahead_mode = 1;
  lt_debug("cuda: the batch's tail (%d running) from frame %d on: refinement ahead and next frame ahead on",
           t, (int)c->frames);
}

/* --appearance: the staged templates up into their slots, on the tracking's
 * stream (before its kernels). The staging is free again once that stream
 * has been synchronised (cu_track's end, or here when sync). */
static int tpl_flush(lt_cu_ctx *c, int sync)
{
  for (int k = 0; k < c->ntpl_pend; k++)
    LT_CU(cudaMemcpyAsync(c->d_tpl + (size_t)c->tpl_pend[k] * LT_LEUK_TPL_N, c->h_tpl + (size_t)k * LT_LEUK_TPL_N,
                          sizeof(float) * LT_LEUK_TPL_N, cudaMemcpyHostToDevice, c->stream),
          "uploading the appearance templates");
  c->ntpl_pend = 0;
  if (sync) LT_CU(cudaStreamSynchronize(c->stream), "uploading the appearance templates");
  return 0;
}

/* 0, or LT_ERR_INTERNAL after one message: c has no template slot `slot`. */
static int tpl_slot_check(const lt_cu_ctx *c, int slot)
{
  if (c->d_tpl && slot >= 0 && slot < c->max_cells) return 0;
  lt_error("template slot %d: none (%d slots%s)", slot, c->max_cells, c->d_tpl ? "" : ", --appearance off");
  return LT_ERR_INTERNAL;
}

static int cu_tpl_set(void *vctx, int slot, const float *tpl)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (tpl_slot_check(c, slot)) return LT_ERR_INTERNAL;
  int k = 0;
  while (k < c->ntpl_pend && c->tpl_pend[k] != slot) k++; /* staged already: the newer one goes up */
  int err;
  if (k == LT_CU_TPL_PEND) { /* the staging is full: up with it first */
    if ((err = tpl_flush(c, 1))) return err;
    k = 0;
  }
  if (k == c->ntpl_pend) c->tpl_pend[c->ntpl_pend++] = slot;
  memcpy(c->h_tpl + (size_t)k * LT_LEUK_TPL_N, tpl, sizeof(float) * LT_LEUK_TPL_N);
  return 0;
}

static int cu_tpl_get(void *vctx, int slot, float *tpl)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (tpl_slot_check(c, slot)) return LT_ERR_INTERNAL;
  int err = tpl_flush(c, 1);
  if (err) return err;
  LT_CU(cudaMemcpy(tpl, c->d_tpl + (size_t)slot * LT_LEUK_TPL_N, sizeof(float) * LT_LEUK_TPL_N,
                   cudaMemcpyDeviceToHost),
        "reading an appearance template");
  return 0;
}

static int cu_track(void *vctx, lt_leuk_cell *cells, int n)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  tail_check(c);
  if (n <= 0) return 0;
  if (n > c->max_cells) {
    lt_error("track: %d cells, more than the %d this context was created for", n, c->max_cells);
    return LT_ERR_INTERNAL;
  }
  /* the cells that were fast in the last frame get half an MGVF cluster */
  int slowest = 0;
  /* and the snake kernel's shared memory is sized for this frame's largest
   * window (the window kernel clamps a window at the frame's borders, never
   * enlarges it), not for rmax + rstep: more blocks fit on an SM */
  double wmax = 0;
  for (int i = 0; i < n; i++) {
    if (cells[i].mgvf_iter > slowest) slowest = cells[i].mgvf_iter;
    const double R = cells[i].R;
    if (!(R >= 0 && R <= c->p.rmax + c->p.rstep)) { /* the window kernel flags it */
      wmax = c->win_max;
      continue;
    }
    const double a = (2.0 * lt_leuk_win_half_x(R) + 1) * (2.0 * lt_leuk_win_half_y(R) + 1);
    if (a > wmax) wmax = a;
  }
  c->mgvf_split = (int)((long)slowest * c->mgvf_split_pct / 100);
  c->snake_win = (int)wmax;
  if (c->tm.on && c->spec_taken && c->have_pending) { /* LT_CUDA_TIMING: the band made ahead beside it? */
    c->spec_late_track += cudaEventQuery(c->ds.done) == cudaErrorNotReady;
    (void)cudaGetLastError();
  }
  c->dense = c->dense_ok && (c->mgvf_mode == 2 || (c->mgvf_mode == 0 && dense_auto()));
  const double t0 = c->waits_on ? lt_now() : 0;
  lt_cu_tic(c, T_TRACK);
  /* The device keeps the states of the last step (and a clear flag); they
   * go up again only when the host changed them (new or dropped cells). */
  const int same = c->dev_cells == n && !memcmp(c->h_cells, cells, sizeof *cells * n);
  c->dev_cells = -1;
  if (!same) {
    memcpy(c->h_cells, cells, sizeof *cells * n);
    *c->h_err = 0;
    LT_CU(cudaMemcpyAsync(c->d_err, c->h_err, sizeof *cells * (n + 1), cudaMemcpyHostToDevice, c->stream),
          "uploading the cell states");
  }
  int err = c->ntpl_pend ? tpl_flush(c, 0) : 0;
  if (!err) err = c->cluster ? lt_cu_track_split_launch(c, n) : lt_cu_track_launch(c, n);
  if (err) return err;
  LT_CU(cudaMemcpyAsync(c->h_err, c->d_err, sizeof *cells * (n + 1), cudaMemcpyDeviceToHost, c->stream),
        "copying the cell states back");
  if ((err = detect_issue(c))) return err; /* the band's detection beside the tracking */
  const double tp = c->waits_on ? lt_now() : 0;
  if ((err = prefetch_issue(c))) return err; /* the next frame goes up while these kernels run */
  if ((err = spec_issue(c))) return err;     /* and is made ready once they are done */
  lt_cu_toc(c, T_TRACK);
  const double ts = c->waits_on ? lt_now() : 0;
  LT_CU(cudaStreamSynchronize(c->stream), "the tracking kernel");
  if (c->waits_on) {
    c->w_pref += ts - tp;
    c->w_launch += ts - t0;
    c->w_sync += lt_now() - ts;
    c->n_track++;
  }
  static const int ks[] = {T_UPLOAD, T_TRACK, T_TWIN, T_TMGVF, T_TSNAKE};
  timing_collect(c, ks, c->cluster ? 5 : 2);
  if (*c->h_err) {
    lt_error("track: a cell's radius exceeds rmax + rstep = %d, too large for the CUDA tracking window",
             c->p.rmax + c->p.rstep);
    return LT_ERR_INTERNAL;
  }
  memcpy(cells, c->h_cells, sizeof *cells * n);
  c->dev_cells = n;
  return 0;
}

static int cu_get_map(void *vctx, int which, float *dst)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (!c->have_detect) {
    lt_error("get_map called before detect");
    return LT_ERR_INTERNAL;
  }
  size_t n = (size_t)c->last_roi.w * c->last_roi.h;
  if (which != LT_MAP_GICOV && !c->dil_valid) {
    int err = lt_cu_dilate_launch(c, &c->last_roi);
    if (err) return err;
  }
  LT_CU(cudaMemcpyAsync(dst, which == LT_MAP_GICOV ? c->ds.gicov : c->d_dil, sizeof(float) * n,
                        cudaMemcpyDeviceToHost, c->stream),
        "copying a map back");
  LT_CU(cudaStreamSynchronize(c->stream), "copying a map back");
  return 0;
}

static int cu_mgvf(void *vctx, const float *E, int w, int h, float *F, int *iters)
{
  lt_cu_ctx *c = (lt_cu_ctx *)vctx;
  if (w < 1 || h < 1 || (long)w * h > c->win_max) {
    lt_error("mgvf: a %dx%d window exceeds the %d pixels of the largest tracking window", w, h, c->win_max);
    return LT_ERR_USAGE;
  }
  size_t n = (size_t)w * h;
  LT_CU(cudaMemcpyAsync(c->d_win, E, sizeof(float) * n, cudaMemcpyHostToDevice, c->stream), "uploading a window");
  int err = lt_cu_mgvf_launch(c, w, h);
  if (err) return err;
  LT_CU(cudaMemcpyAsync(F, c->d_win + c->win_max, sizeof(float) * n, cudaMemcpyDeviceToHost, c->stream),
        "copying the MGVF field back");
  LT_CU(cudaMemcpyAsync(iters, c->d_iters, sizeof(int), cudaMemcpyDeviceToHost, c->stream),
        "copying the MGVF field back");
  LT_CU(cudaStreamSynchronize(c->stream), "the MGVF kernel");
  return 0;
}

extern "C" const lt_leuk_backend lt_leuk_backend_cuda = {
  "cuda", cu_create, cu_destroy, cu_set_frame, cu_detect, cu_refine, cu_track, cu_tpl_set, cu_tpl_get, cu_get_map,
  cu_mgvf, cu_prefetch, 1,
  cu_detect_start, cu_detect_end,
};
