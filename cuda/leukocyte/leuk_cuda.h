/* leuk_cuda.h - private to cuda/leukocyte: the CUDA backend's context, the
 * kernel parameter block and the launchers of detect.cu, refine.cu and
 * track.cu (the bilinear interpolation is src/leukocyte/interp.h, compiled
 * for both).
 *
 * Exactness: nvcc contracts a*b+c into fused multiply-adds by default, gcc
 * in ISO C mode does not. Where a bit decides a discrete outcome (GICOV
 * argmax and maxima, MGVF iteration counts), the arithmetic is written with
 * __dmul_rn/__dadd_rn/__fmul_rn/__fadd_rn, which are never contracted, so
 * those stages are bit-identical to the CPU. Elsewhere (snakes) contraction
 * changes results in the last bits only. */
#ifndef LT_LEUK_CUDA_H
#define LT_LEUK_CUDA_H

#include <cuda_runtime.h>

extern "C" {
#include "leuk.h"
#include "runtime.h"
}
#include "interp.h"

#define LT_CU_TRACK_THREADS 1024
#define LT_CU_MAX_SEARCH_TASKS 4096 /* (2*search+1)^2 * radii near R */
#define LT_CU_TPL_PEND 32 /* --appearance: templates staged between two tracking steps before a flush */

/* Everything a kernel needs to know about the parameters and stencils. */
typedef struct lt_cu_params {
  int fw, fh;
  int npoints, nradii;
  int radius[LT_LEUK_MAX_RADII];
  int border_all;               /* lt_stencil.border_all: 0 = circle k needs radius_k+1 px */
  double rstep;                 /* radius step for "within one step of R" */
  const float *cosv, *sinv;     /* device, npoints, in float (the GICOV maps': gicov.c) */
  const float2 *cs;             /* device, npoints: (cos, sin) in float together, one load per sample (gicov_lanes) */
  const int *dx, *dy;           /* device, nradii*npoints */
  const int *off;               /* device, nradii*npoints: dy*fw + dx (frame-sized images) */
  const float2 *gradf;          /* device, the frame's central-difference gradient (interior pixels), in
                                 * float: what the GICOV maps (detect.cu) and lt_gicov_at (track.cu) sample */
  int search;
  float mgvf_ml, mgvf_il;       /* mu/lambda, 1/lambda */
  float mgvf_col;               /* > 0: the column two-colour SOR MGVF with this omega (lt_mgvf_col,
                                 * LT_MGVF_COL: block and dense paths; the cluster path's cells go
                                 * to the dense kernel); 0: Jacobi */
  double mgvf_tol;
  int mgvf_max_iter;
  double evolve_tol;
  int evolve_max_iter;
  lt_rect roi;
  double lost_score;            /* lost_fraction * gicov_threshold */
  int rstep_param;              /* p->rstep (LOST next to the border is LEFT) */
  double appearance;            /* p->appearance: the re-localisation's template weight (0: none) */
  double tpl_thr;               /* p->gicov_threshold: a cell scoring this takes a new template */
  float *tpl;                   /* --appearance: the context's template slots (LT_LEUK_TPL_N floats each), else NULL */
  int ncc_lanes;                /* --appearance: lanes per correlation in the re-localisation, 0: as many of 8, 4,
                                   2 as the block has for the candidates (LT_CUDA_NCC_LANES=2|4|8: tests) */
  double ct[LT_LEUK_SNAXELS], st[LT_LEUK_SNAXELS]; /* snaxel cos/sin from the host libm */
  unsigned long long *prof;     /* LT_CUDA_TIMING=2: clock64 cycles per phase (LT_CU_PROF_N), else NULL */
} lt_cu_params;

/* The detection's stencil cos/sin as a kernel parameter (constant bank) for
 * the default LT_CU_TRIG_N samples per circle (detect.cu, circle_stats):
 * with the sample loop unrolled, every multiply takes its factor straight
 * from the constant bank instead of a load per sample. */
#define LT_CU_TRIG_N 150
typedef struct lt_cu_trig {
  float c[LT_CU_TRIG_N], s[LT_CU_TRIG_N]; /* float: the maps' arithmetic (gicov.c) */
} lt_cu_trig;

#ifdef __CUDACC__
/* The mean and variance (N - 1) of N GICOV samples from the shift K (the
 * first sample's value) and the float sums of the others' d = g - K, in
 * double, not contracted: gicov.c's gicov_stats, for detect.cu's maps and
 * track.cu's gicov_lanes. */
static __device__ __forceinline__ void lt_cu_gicov_stats(float K, float sum, float sq, int n, double *mean,
                                                         double *var)
{
  const double N = n, s1 = sum, m1 = s1 / N;
  *mean = __dadd_rn((double)K, m1);
  *var = __dsub_rn((double)sq, __dmul_rn(s1, m1)) / (N - 1.0);
}
#endif

/* A local maximum as the maxima kernel appends it (order fixed afterwards). */
typedef struct lt_cu_max {
  int idx;      /* row-major index in the ROI */
  float gicov;
  int radius;
} lt_cu_max;

/* A refinement job / result. */
typedef struct lt_cu_refine_in {
  double x0, y0, r0;
  int sign, pad;
} lt_cu_refine_in;
typedef struct lt_cu_refine_out {
  double x, y, r;
  int ok, pad;
} lt_cu_refine_out;
/* A refinement done ahead (refine.cu): the maximum's ROI index, its result. */
typedef struct lt_cu_refine_ahead {
  int idx, pad;
  lt_cu_refine_out o;
} lt_cu_refine_ahead;

/* The buffers of one detection (detect.cu, refine.cu): ROI-sized maps in
 * frame-sized allocations, the maxima list and the refinements ahead, and
 * an event after the detection's last copy back. */
typedef struct lt_cu_dset {
  float *gx, *gy, *gicov, *mg;
  unsigned char *ridx;
  double *bscore;       /* narrow ROIs (entry band): score[k][pixel] of every circle that fits */
  float *bgk;           /* ... and its signed GICOV */
  int *maxbuf;          /* [0] = count, [4..] = lt_cu_max entries */
  int *h_maxbuf;        /* pinned: the count and the first max_prefix entries */
  int *ahead, *h_ahead; /* [0] = count, [4..] = lt_cu_refine_ahead entries; pinned copy */
  cudaEvent_t done;
  cudaEvent_t maxed;    /* after the maxima's copy back, before the refinement ahead (detect_end waits for it) */
} lt_cu_dset;

/* The window of one cell between the split tracking kernels. */
typedef struct lt_cu_win {
  double qx, qy;
  int u1, v1, w, h, skip, pad;
} lt_cu_win;

/* LT_CUDA_TIMING=2: per-phase clock64 cycles summed over cells (thread 0 of
 * cell): window kernel phases 0-2 (their maxima over cells at 3-5), snake
 * kernel 8-9 (maxima 11-12), cluster MGVF 16 (cycles) and 17 (iterations),
 * calls at 7 and 15. */
#define LT_CU_PROF_N 24
#define LT_CU_PROF(P, base, ph, tp)                                                                   \
  do {                                                                                              \
    if ((P).prof && threadIdx.x == 0) {                                                             \
      long long t_ = clock64();                                                                     \
      atomicAdd(&(P).prof[(base) + (ph)], (unsigned long long)(t_ - (tp)));                         \
      atomicMax(&(P).prof[(base) + 3 + (ph)], (unsigned long long)(t_ - (tp)));                     \
      (tp) = t_;                                                                                    \
    }                                                                                               \
  } while (0)

/* A buffer of a context (lt_cu_buf): device or pinned host memory, its size. */
typedef struct lt_cu_buf {
  void *p;
  size_t bytes;
  int host;
} lt_cu_buf;
#define LT_CU_BUFS 64 /* 5: two blocks and the windows (7 with the float staging); LT_CUDA_BLOCK=0: 52 at most (backend.cu) */

enum { T_UPLOAD, T_DETECT, T_GRAD, T_GICOV, T_DILATE, T_REFINE, T_TRACK, T_TWIN, T_TMGVF, T_TSNAKE, T_AHEAD, T_N };

typedef struct lt_cu_ctx {
  lt_leuk_params p;
  lt_cu_params kp;
  int fw, fh, max_cells;
  cudaStream_t stream;
  /* stencils */
  float *d_cos, *d_sin;
  float2 *d_cs;
  int *d_dx, *d_dy, *d_off;
  /* frame: float on the device; pinned staging, double-buffered */
  float *d_frame;
  float2 *d_grad; /* (gx, gy) of the frame in float: what the maps and lt_gicov_at sample, one load per
                   * sample (frame_kernel) */
  int dev_cells;  /* cells on the device equal to h_cells[0..dev_cells) after a track; -1 unknown */
  unsigned char *d_frame8;
  float *h_framef[2];   /* pinned float staging, allocated at the first frame that is not 8-bit */
  unsigned char *h_frame8[2];
  cudaEvent_t ev_staged[2];
  /* prefetch: the next frame's bytes go up on their own stream while the
   * current frame is tracked */
  cudaStream_t ustream;
  unsigned char *d_pref8, *h_pref8;
  cudaEvent_t ev_pref, ev_pref_read;
  const unsigned char *pref_req; /* the next frame's bytes, to go up during the tracking */
  const unsigned char *pref_src; /* the host bytes that are (being) uploaded, NULL if none */
  int no_prefetch;               /* LT_CUDA_PREFETCH=0 */
  int gicov_per_pixel;           /* LT_CUDA_GICOV=pixel: one thread per pixel, all radii */
  int gicov_fixed;               /* npoints == LT_CU_TRIG_N: the GICOV maps' unrolled sums, cos/sin in trig
                                  * (LT_CUDA_GICOV_TRIG=0: the loop with the tables in global memory) */
  lt_cu_trig trig;
  int band_np;                   /* pixels per thread of the band's GICOV tasks (2; LT_CUDA_BAND_NP=1) */
  int gicov_np;                  /* ... of the whole-ROI GICOV map (2; LT_CUDA_GICOV_NP=4, an experiment) */
  cudaStream_t dstream;          /* the detection's stream (beside the tracking) */
  cudaEvent_t ev_frame;          /* the frame (upload, gradient) is ready for the detection */
  int one_stream;                /* LT_CUDA_DSTREAM=0: detection in `stream` */
  int stage_i;
  /* detection maps and lists: ds the last detection's (and the one being
   * made), ds_next the entry band's of the next frame made ahead (spec_*) */
  lt_cu_dset ds, ds_next;
  float *d_dil;         /* the dilated map of ds (get_map) */
  size_t band_cap;      /* pixels of the largest ROI that takes this path */
  size_t max_cap;       /* entries of a maxima list */
  size_t max_prefix;    /* entries copied back with the count (pinned) */
  lt_cu_max *h_maxall;  /* pageable, max_cap entries: a list longer than the pinned prefix (made when needed) */
  lt_rect last_roi;
  int have_detect;
  lt_rect pending_roi;  /* detect_start's ROI until detect_end */
  int have_pending;
  /* refinement */
  lt_cu_refine_in *d_rin, *h_rin;
  lt_cu_refine_out *d_rout, *h_rout;
  int refine_cap;
  /* refinement ahead (refine.cu): a split detection's maxima over ahead_lo
   * (the lowest threshold the pipeline can apply), or over the higher one
   * detect_start was given (pending_lo), refined on its stream */
  int ahead_mode;       /* LT_CUDA_AHEAD: 1 on (default for one video in flight), 0 off (default with several
                         * in flight: leuktrack --jobs K > 1), 2 on and a refine it misses is an error (tests) */
  double ahead_lo;
  double pending_lo;    /* detect_start's: max(ahead_lo, the caller's lo) */
  double list_lo;       /* ... and the caller's lo for a band (0: the entry ROI's, detect's), the
                         * maxima the pending detection lists (lt_cu_detect_launch) */
  int ahead_cap;        /* entries of d_ahead / h_ahead */
  int detect_queued;    /* detect_start recorded the frame; the detection's launches still to issue */
  int late_off;         /* LT_CUDA_LATE=0: a split detection (and its refinement ahead) launched at detect_start */
  int dil_full;         /* LT_CUDA_DILMAP=1: every detection writes the dilated map (else get_map makes it) */
  int dil_valid;        /* d_dil holds the last detection's dilated map */
  int ahead_queued;     /* detect_start queued a detection whose refinement ahead is not queued yet */
  int ahead_pending;    /* ... queued, results not read yet (refine waits for them and reads them when it
                         * has jobs; detect_end when it waits for the whole detection) */
  int end_all;          /* LT_CUDA_ENDWAIT=all: detect_end waits for the refinement ahead too (as before) */
  int end_maxed;        /* the pending detection's maxima have their own event (ds.maxed) */
  /* LT_CUDA_WAITS=1: the host's seconds in the backend's calls and waits,
   * one line at destroy (docs/PERFORMANCE.md, many videos) */
  int waits_on;
  double w_set, w_launch, w_band, w_pref, w_sync, w_end, w_ahead, w_refine;
  long n_track, n_end, n_end_late, n_ahead_wait, n_refine;
  int ahead_n;          /* h_ahead holds ahead_n results of the last detection, sorted by index; -1: none */
  long ahead_hits, ahead_misses; /* jobs looked up, refine calls that missed (LT_CUDA_TIMING) */
  long ahead_jobs;               /* jobs refined ahead (LT_CUDA_TIMING) */
  /* the next frame ahead (backend.cu, spec_issue): once the tracking's
   * kernels are done, its conversion and gradient (into d_frame_next,
   * d_grad_next) and the entry band's detection and refinement ahead (into
   * ds_next, at the last band's ROI) run on the detection's stream while
   * the host finishes the frame; set_frame and detect_start take them when
   * the frame and the ROI are those */
  int spec_off;         /* LT_CUDA_SPEC=0: none */
  int next_bufs;        /* d_frame_next, d_grad_next and ds_next exist (!spec_off, or tail_n) */
  int tail_n;           /* the batch's tail (backend.cu tail_check): once no more than this many videos are
                         * still running and no input is left to start, the refinement ahead and the next
                         * frame ahead are turned on as for one video (LT_CUDA_TAIL; 0: never) */
  int spec_early;       /* LT_CUDA_SPEC=early: at once, beside this frame's tracking (its low priority) */
  float *d_frame_next;
  float2 *d_grad_next;
  cudaStream_t sstream; /* theirs (the detection's priority) */
  cudaEvent_t ev_tracked; /* the tracking's kernels of this frame are done */
  cudaEvent_t ev_spec_frame; /* d_frame_next and d_grad_next are ready */
  const unsigned char *spec_src; /* the host bytes of the frame converted ahead, NULL if none */
  int spec_band;        /* ds_next holds (is getting) the band's detection at spec_roi of spec_src (1)
                         * or of the current frame (2, set_frame took it; detect_start takes or drops it) */
  lt_rect spec_roi;
  int have_band;        /* band_roi: the ROI of the last split detection (the next one's guess) */
  lt_rect band_roi;
  long frames;          /* set_frame calls (the next frame's index: a full detection every detect_every) */
  int spec_taken;       /* the current detection is ds_next's, taken by detect_start */
  long spec_hits, spec_misses; /* split detections taken from ahead / made after (LT_CUDA_TIMING) */
  long spec_late_track, spec_late_end; /* ... taken ones still running at the tracking's launch / detect_end */
  /* tracking */
  lt_leuk_cell *d_cells, *h_cells;
  int *d_err, *h_err;
  /* --appearance: the template slots stay on the device (kp.tpl); tpl_set
   * stages a slot in pinned h_tpl (LT_CU_TPL_PEND at a time), its copy goes
   * up at the next track (tpl_flush) */
  float *d_tpl, *h_tpl;
  int tpl_pend[LT_CU_TPL_PEND], ntpl_pend;
  int win_max;          /* floats per window (largest window of R <= rmax+rstep) */
  size_t track_smem;    /* dynamic shared memory per block */
  int track_in_shared;  /* 1: windows in shared memory, 0: in d_work */
  float *d_work;        /* global windows when not in shared memory */
  int work_blocks;
  /* split tracking (LT_CUDA_MGVF=cluster): E/F windows and geometry in
   * global memory for split_cap cells, MGVF on clusters of `cluster` blocks */
  int cluster, wcluster, mgvf_threads, split_cap;
  int mgvf_split_pct; /* cells below this % of the last frame's slowest MGVF use half the cluster (0: off) */
  int mgvf_split;     /* this frame's threshold in iterations (0: none) */
  int snake_win;      /* this frame's largest window (pixels): the snake kernel's shared memory */
  int dense_ok;       /* the largest window fits one block's shared memory (mgvf_dense_kernel) */
  int mgvf_mode;      /* LT_CUDA_MGVF: 0 auto (dense while several contexts live), 1 cluster, 2 dense */
  int dense;          /* this frame: MGVF on one block per cell (mgvf_dense_kernel) */
  int dense_threads;  /* threads per cell of the dense MGVF (512; LT_CUDA_DENSE_THREADS=256) */
  int dense_rows;     /* the dense MGVF's window row-major (LT_CUDA_DENSE_ROWS=1), else transposed */
  int dense_occ3;     /* the transposed dense MGVF built for 3 cells per SM (LT_CUDA_DENSE_OCC=3) */
  int dense_snake;    /* threads per cell of the snake kernel beside it (512; LT_CUDA_DENSE_SNAKE=256|1024) */
  int sms;            /* the device's SM count */
  int live_counted;   /* counted in the process's live contexts (backend.cu) */
  float *d_gwin;
  lt_cu_win *d_info;
  /* MGVF test access */
  float *d_win;         /* 2 * win_max */
  int *d_iters;
  /* the buffers of lt_cu_buf, released together by cu_destroy */
  lt_cu_buf bufs[LT_CU_BUFS];
  int nbufs;
  /* LT_CUDA_TWICE (a measurement aid, docs/CUDA.md): the stages in this
   * mask run twice, the first time idempotently or into scratch buffers
   * (d_gwin2, d_cells2), so that a run's extra time is the stage's cost */
  unsigned twice;
  float *d_gwin2;
  lt_leuk_cell *d_cells2;
  int *d_max2;          /* the dilation's second list (its count cleared before) */
  /* timing (LT_CUDA_TIMING=1) */
  lt_cuda_timer tm;
  unsigned long long *d_prof; /* LT_CUDA_TIMING=2 */
} lt_cu_ctx;

/* LT_CUDA_TWICE's stages (lt_cu_ctx.twice) */
enum {
  LT_TW_FRAME = 1 << 0,  /* frame_kernel (conversion and gradient) */
  LT_TW_WINDOW = 1 << 1, /* window_kernel */
  LT_TW_MGVF = 1 << 2,   /* the tracking's MGVF kernel, first on a copy of the windows */
  LT_TW_SNAKE = 1 << 3,  /* snake_kernel, first on a copy of the cells */
  LT_TW_BAND = 1 << 4,   /* a band's whole detection (lo > 0): gradient, GICOV, dilation + maxima */
  LT_TW_FULL = 1 << 5,   /* the entry ROI's whole detection (lo = 0) */
  LT_TW_GICOV = 1 << 6,  /* the GICOV kernels of every detection */
  LT_TW_DILATE = 1 << 7, /* dilate_max_kernel of every detection, first into a second list */
  LT_TW_REFINE = 1 << 8, /* the refinement kernel (plain refine) */
  LT_TW_UPLOAD = 1 << 9, /* the frame's bytes' host-to-device copy */
  LT_TW_COPY = 1 << 10   /* only the copy of the windows that LT_TW_MGVF makes (its share of that) */
};

/* *p = a device (host = 0) or pinned host (host = 1) buffer of `bytes`,
 * recorded in c->bufs and released by cu_destroy: a spare buffer of a
 * released context when one of that size is kept (backend.cu), else a new
 * allocation. Contents undefined, as with cudaMalloc. 0 or LT_ERR_GPU after
 * one lt_error. */
int lt_cu_buf_get(lt_cu_ctx *c, void **p, size_t bytes, int host, const char *what);
/* Launchers; each returns 0 or LT_ERR_GPU after one lt_error. */
/* lo > 0: the maxima list holds only the maxima with |GICOV| > lo (a band's,
 * whose caller takes no other: detect_start), else all of them */
int lt_cu_detect_launch(lt_cu_ctx *c, const lt_rect *roi, double lo);
int lt_cu_dilate_launch(lt_cu_ctx *c, const lt_rect *roi);
int lt_cu_refine_init(void);
int lt_cu_refine_launch(lt_cu_ctx *c, int n);
int lt_cu_refine_ahead_launch(lt_cu_ctx *c, const lt_rect *roi, double lo, cudaStream_t st);
int lt_cu_track_setup(lt_cu_ctx *c);
int lt_cu_track_launch(lt_cu_ctx *c, int n);
int lt_cu_track_split_launch(lt_cu_ctx *c, int n);
int lt_cu_mgvf_launch(lt_cu_ctx *c, int w, int h);
/* Timing helpers (no-ops unless LT_CUDA_TIMING=1; cuda/runtime.h). */
void lt_cu_tic(lt_cu_ctx *c, int k);
void lt_cu_toc(lt_cu_ctx *c, int k);

/* ---- device helpers ------------------------------------------------- */


#endif
