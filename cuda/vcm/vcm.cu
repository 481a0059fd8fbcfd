/* vcm.cu - the CUDA backend of Vector Coherence Mapping (seeds/002 section 6),
 * matching the CPU reference src/vcm/vcm.c stage by stage.
 *
 * One pair = I1 (I0 too unless it is the last pair's I1, whose copy is kept:
 * vcm.h) as bytes (rounded on the host by lt_vcm_round8 as the CPU backend,
 * or 8-bit video's bytes as they are through pair8) into pinned staging, then
 * one CUDA Graph (captured at first use for each state of the rotating frame
 * and vector buffers; plain launches if capturing fails or
 * LT_VCM_NO_GRAPH=1) holding I1's upload, 5 kernels (6 with a temporal
 * prior), the phase events, the count's copies and the vectors' download
 * into pinned memory, then one synchronisation (I0's upload of a first pair
 * goes before the graph). The kernels after maxima_k are launched as
 * programmatic dependents (sm_90 and up: each waits by griddepcontrol
 * before its first global access, and its launch overlaps the end of the
 * kernel before it), and the phase events between them lie on a branch
 * beside the kernels' chain (griddep_wait, phase_event; LT_VCM_PDL=0:
 * plain launches and the events in line). Through pair8 the next frame can travel during
 * the pair's work (prefetch8, called by the vcm mode with the next decoded
 * frame): after the graph's launch the host stages it and a second stream
 * copies it to the third frame buffer and, when this pair's I1 came the
 * same way, computes the next pair's maxima (maxima_k); the next pair8
 * with that frame waits for them and its graph starts at points_k, so the
 * upload leaves the pair's GPU time. start8 / finish split pair8 around
 * the wait, so the vcm mode writes the last pair's rows meanwhile.
 *   maxima_k    interior maxima of the Sobel |Gx|+|Gy| of I0 and of |I1-I0|
 *               (integers, so their floats are the CPU's Gmax, Dmax), four
 *               pixels per thread, one atomicMax pair per block, into the
 *               slot of I1's frame buffer; without a prefetch, where the
 *               device maps pinned memory, it reads I1 from the staging over
 *               the bus and stores the device copy itself (no copy node;
 *               LT_VCM_UPLOAD=copy: a copy before it);
 *   points_k    one block per sub-window: F of its pixels (the Sobel again
 *               from I0, the CPU's float operations, so F is equal to the
 *               bit), each thread's K best in index order (in registers for
 *               K <= 4), K rounds of a block arg-max (F desc, index asc) =
 *               the CPU's selection; the last block to finish packs the
 *               points in cell order (prefix sum of the counts: px, py,
 *               cstart, n, which stay on the device) and zeroes the maxima
 *               and its counter for the next pair;
 *   ncm5_k      (the default 5x5 patch; ncm_k for others) one block per
 *               point: I1's window under the clamped search rectangle in
 *               shared memory (staged 4 bytes per load, 4 loads in
 *               flight), each thread a 4x5 tile of offsets whose
 *               integer SADs stay in registers (four pixels per byte-SIMD
 *               instruction pair; the fifth pixels of a patch row for the
 *               tile's 4 offsets across by one more __vabsdiffu4, each
 *               offset's byte added by a masked __dp4a), block min/max,
 *               similarity (the SADs as ints in shared memory, 4
 *               offsets a thread and 8-byte store; LT_VCM_NCM=col5:
 *               floats, a 16-bit store per offset); where the
 *               tiled accumulation follows, its last blocks (one per
 *               tile, after the points' blocks: they fill the NCM's last
 *               wave) build each tile's neighbour list once into global
 *               memory (tile_list_build; LT_VCM_BAND_LIST=k: a kernel of
 *               their own, vcm_list_k, as for other patch sizes);
 *   prior_k     (with a temporal weight only) one warp per point: the
 *               CPU's temporal prediction from the last field;
 *   vcm_band_k  (where a point has >= 6 neighbours on average; cu_alloc)
 *               one block per tile of sub-windows (2x2 for
 *               K <= 2) and band of 512 offsets: the tile's neighbour list
 *               (from global memory, 256 entries at a time into shared;
 *               LT_VCM_BAND_LIST=0: built by each band block by block
 *               ballot), each neighbour's NCM values at a thread's 2
 *               consecutive offsets read once for the tile (one 32-bit
 *               load: the maps' rows are padded, ncm_stride) and added
 *               into every tile point's integer sums (weight 0 for a point
 *               it is no neighbour of; two neighbours a step by __dp2a,
 *               their weights as bytes), the support, V(o) and the band's
 *               best per point as a 64-bit key (a point whose
 *               neighbours all have the whole search area, without a
 *               prior: from the integer sums, one division per warp
 *               and point; LT_VCM_BAND_PEAK=div: a
 *               division per offset);
 *   vcm_pick_k  one warp per point: the bands' keys merged, the 3x3 of V
 *               around the peak recomputed by the same sums, sub-pixel
 *               refinement, motion evidence;
 *   vcm_k       (else, LT_VCM_TILE=0, or K > 8) one block per point (or per
 *               sub-window, an experiment): the neighbour list by block
 *               ballot over the points of the sub-windows the radius
 *               reaches (in point order), the integer weighted sums of
 *               their NCMs in registers and the support C(o) (integer
 *               weights) in shared memory, temporal
 *               prior, block arg-max with the CPU's tie-break, sub-pixel
 *               refinement, the vector's motion evidence (one warp).
 * The NCMs are 16-bit integer similarities (lt_vcm_sim_q, the CPU's own
 * function) and the accumulation's weights the CPU's integer table
 * (lt_vcm_weight_q), so each V sum is an exact int32 whatever the order of
 * the neighbours: one integer multiply-add per neighbour and offset (was a
 * __fmul_rn and an __fadd_rn kept in the CPU's order). The float steps
 * after the sums (normalisation, prior, refinement) are written with
 * __fmul_rn/__fadd_rn/__fdiv_rn where the CPU has the same operations, so
 * no fused multiply-add changes the rounding; only expf (LT_VCM_SIM_EXP)
 * can differ by an ulp.
 * Everything is allocated in create; pair allocates nothing. Experiments
 * (environment, for A/B runs; all give the same vectors): LT_VCM_TILE=0 or
 * WxH, LT_VCM_BAND_OPT=1 or 4 (offsets per thread of vcm_band_k; 1: the
 * kernel before 2026-11-24 04:00 UTC; 4: the default until 04:05 UTC),
 * LT_VCM_BAND_LIST=0 or k (the tile lists by each band block, as before
 * 04:05 UTC, or by vcm_list_k), LT_VCM_BAND_DP=0 (one neighbour a step by
 * integer multiply-adds, as before 2026-11-24 05:30 UTC) or q4 (4 pairs'
 * loads in flight), LT_VCM_BAND_PEAK=div (V divided at every offset, as
 * before 2026-11-24 06:10 UTC), LT_VCM_BAND_OCC=4 (with 1 offset),
 * LT_VCM_PICK=list (vcm_pick_k reads the point's tile list instead of
 * walking the candidate sub-windows), LT_VCM_PTS_OCC=0 (points_k without
 * its launch bound, as before 2026-11-24 04:30 UTC), LT_VCM_PER_CELL=1,
 * LT_VCM_NCM=sad, bytes (the window a byte per load, as before), words4
 * (4 blocks per SM), sad5 (the fifth pixels by __sad per offset, as
 * before 2026-11-24 05:30 UTC), regs (the SADs kept in registers and
 * the similarities written by each thread for its tile: slower) or col5
 * (the similarities a 16-bit store per offset, as before 2026-11-24
 * 06:10 UTC),
 * LT_VCM_NO_GRAPH=1, LT_VCM_UPLOAD=copy,
 * LT_VCM_PREFETCH=0, LT_VCM_PDL=0 (plain launches, the phase events in
 * line, as before 2026-11-24 07:00 UTC) or early (the early trigger),
 * LT_VCM_EVENTS=inline or side (cu_alloc). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

#include "../runtime.h"
#include "vcm_cuda.h"

extern "C" {
#include "error.h"
#include "log.h"
}

#define MAP_THREADS 256

struct vcm_dev_params {
  int w, h, gx, gy, k, patch, search, side, radius, margin, maxpts, similarity, subpixel;
  float min_strength, min_contrast, gmin, tau, lam, irho2;
  int pdl_early; /* the kernels launched as programmatic dependents let their own dependents start
                    once every block has passed its griddep_wait (cuda_ctx::pdl == 2) */
};

/* The tiles' neighbour lists in global memory (vcm_list_k writes them,
 * vcm_band_k<LIST> reads them): per tile t a header of TL_HDR ints at
 * hdr + t * TL_HDR (np, the list's length, then per tile point its index,
 * weights' sum and the part of it from neighbours with the whole search
 * area) and at most cap entries from t * cap (tile_list_cap): the index j
 * (bit 31: whole search area), the clamped search rectangle and the
 * weights per tile point (0: not its neighbour). */
#define TILE_PTS 8 /* most points per tile of vcm_band_k (tile_x * tile_y * K <= TILE_PTS) */
#define TL_HDR (2 + 3 * TILE_PTS)
struct tile_lists {
  int *hdr, *j, *w; /* w: TILE_PTS per entry */
  int4 *r;
  int cap;
};

struct cuda_ctx {
  lt_vcm_params p;
  vcm_dev_params d;
  cudaStream_t s;
  uint8_t *I0, *I1;  /* the pair's frames rounded to bytes (lt_vcm_round8) */
  uint8_t *In;       /* the third frame buffer: the next frame's prefetch (cu_prefetch8) */
  uint8_t *fr[3];    /* the three as allocated (I0, I1, In rotate among them) */
  uint8_t *h_q[3];   /* pinned staging of the rounded frames: I0, I1, the prefetched one */
  cudaStream_t s2;   /* the prefetch's upload, beside the pair's work */
  cudaEvent_t ev_up; /* after the prefetch's upload */
  const uint8_t *pf_req;  /* cu_prefetch8's frame, to go up during the next pair's work */
  const uint8_t *pf_have; /* the host frame whose copy is in In (or on its way), else NULL */
  int pf_pending;         /* a prefetch upload was queued (ev_up recorded) */
  int pf_max;             /* and the maxima of the pair (I1, In) after it, on s2 (cu_launch) */
  int inflight;           /* start8 queued a pair that finish has not collected */
  int no_prefetch;        /* LT_VCM_PREFETCH=0: prefetch8 ignored (experiment) */
  const uint8_t *d_q1; /* h_q[1] as the device sees it (mapped; unless LT_VCM_UPLOAD=copy) */
  float *wt;         /* the float weights (temporal prediction) */
  uint16_t *ncm;     /* the NCMs (lt_vcm_sim_q: LT_VCM_SIM_ONE = 1) */
  int *wq;           /* the integer weights of the sums (lt_vcm_weight_q) */
  unsigned *maxbits; /* [2 b], [2 b + 1]: Gmax, Dmax (integers) of the pair whose I1 is fr[b];
                        [6] points_k's count of finished blocks; zero between pairs (points_k's
                        last block resets them) */
  int *cellidx, *cellcnt, *cstart, *px, *py, *n, *nprev;
  lt_vcm_vector *h_vec; /* pinned: the pair's vectors come down here (in the graph), then to out */
  lt_vcm_vector *prev, *cur;
  int *h_n;          /* pinned */
  cudaEvent_t ev[4]; /* phase boundaries of the last pair (timing events) */
  double t[3];       /* seconds per phase since create (points incl. upload, NCM, VCM) */
  size_t vcm_smem, ncm_smem;
  int kpt;                 /* offsets per thread of the map kernels (5, 17 or 66) */
  int per_cell;            /* vcm_k with a block per sub-window (K <= 2; LT_VCM_PER_CELL=1) */
  int ncm_simd;            /* ncm5_k<true, .> (unless LT_VCM_NCM=sad) */
  int ncm_col5;            /* ncm5_k<.., COL5>: 1 (the default with ncm_words == NCM_MINB), 2
                              (LT_VCM_NCM=regs), 0 (LT_VCM_NCM=sad5: the fifth pixels by __sad) */
  int ncm_w4;              /* ncm5_k<.., 1, true>: the SADs as ints, 4 similarities a store (the
                              default; LT_VCM_NCM=col5: floats, a 16-bit store per offset) */
  int ncm_words;           /* ncm5_k<true, true, .> (unless LT_VCM_NCM=bytes or sad): NCM_MINB,
                              4 with LT_VCM_NCM=words4 */
  int use_graph;           /* the pair's device work as a CUDA Graph (until a capture fails) */
  int map_upload;          /* maxima_k reads I1 from the mapped staging (no copy node; cu_alloc) */
  int tile_x, tile_y;      /* vcm_band_k's tile of sub-windows; 0: vcm_k (LT_VCM_TILE=0) */
  int band_occ;            /* vcm_band_k's blocks per SM by its launch bounds (5, or 4 with 8
                              loads ahead: LT_VCM_BAND_OCC=4) */
  int pick_list;           /* vcm_pick_k reads the tile lists (LT_VCM_PICK=list, with band_list) */
  int pts_minb;            /* points_k's launch bound (PTS_MINB; 1: LT_VCM_PTS_OCC=0) */
  int band_opt;            /* vcm_band_k's offsets per thread (2; 1, 4: LT_VCM_BAND_OPT) */
  int band_dp;             /* vcm_band_k<.., DP>: two neighbours a step by __dp2a (with 2 offsets;
                              LT_VCM_BAND_DP=0: off) */
  int band_ipeak;          /* vcm_band_k<.., DP, IPEAK>: a point whose neighbours all have the whole
                              search area takes its band's peak from the integer sums (one division;
                              LT_VCM_BAND_PEAK=div: a division per offset) */
  int nband;               /* bands of MAP_THREADS * band_opt offsets (vcm_band_k's grid.y) */
  int band_list;           /* each tile's neighbour list built once: 2 by ncm5_k's tail
                              blocks, 1 by vcm_list_k (LT_VCM_BAND_LIST=k, or patch != 5);
                              0: by each band block (LT_VCM_BAND_LIST=0) */
  int ntile;               /* tiles of vcm_band_k */
  tile_lists tl;           /* those lists (band_list) */
  unsigned long long *keys; /* per point and band: the band's best (key_rank) */
  float4 *pri;             /* per point: the temporal prior (prior_k; only with a temporal weight) */
  cudaGraphExec_t graph[3][3][2][3]; /* by the buffers I0 and I1 are (fr[]), prev == prev_base?, I1
                                       prefetched (1) with its maxima (2) (the buffers rotate) */
  lt_vcm_vector *prev_base; /* prev as allocated */
  const float *last_I1;    /* host pointer of the last pair's I1 (its copy is in I1) */
  int have_last;           /* I1 holds the last pair's I1 (from pair or pair8) */
  int pdl;                 /* points_k (after maxima_k), ncm5_k, vcm_band_k and vcm_pick_k launched
                              as programmatic dependents of the kernel before them (sm_90 and up):
                              1 (the default) triggered by each block's exit, 2 with an early
                              trigger (LT_VCM_PDL=early: d.pdl_early), 0 plain launches
                              (LT_VCM_PDL=0, as before 2026-11-24 07:00 UTC) */
  int ev_side;             /* the phase events ev[1], ev[2] recorded on s3, a branch beside the
                              kernels' chain (the default with pdl; LT_VCM_EVENTS=inline or
                              LT_VCM_PDL=0: in the chain, between the kernels) */
  cudaStream_t s3;         /* that branch (ev_side) */
  cudaEvent_t ev_fk[3];    /* its forks from s (after points_k, after the NCM) and its join */
};

/* Programmatic dependent launch (cuda_ctx::pdl): a kernel launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization may start before the
 * kernel ahead of it in the stream has finished; griddep_wait, before its
 * first global memory access, waits until that kernel has completed and
 * its writes are visible (and that kernel waited for the one before it, so
 * the whole chain is complete). A no-op in a kernel launched plainly.
 * With d.pdl_early (LT_VCM_PDL=early), griddepcontrol.launch_dependents
 * after the wait (so the chain stays transitive) lets the next kernel's
 * blocks be launched once every block of this grid has passed it, to
 * fill the SMs that this grid's last wave leaves idle and wait there
 * (measured slower than the default); else the trigger is each block's
 * exit, and the next kernel's launch overlaps this grid's end. */
__device__ __forceinline__ void griddep_wait(const vcm_dev_params &d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (d.pdl_early) asm volatile("griddepcontrol.launch_dependents;" :::);
#else
  (void)d;
#endif
}

/* ---- stage 1: interest strength and points ---- */

/* The Sobel magnitude |Gx| + |Gy| of I0 at (x, y), rows a, b, c (y - 1, y,
 * y + 1 replicated at the frame's edge), columns l, r likewise: an integer
 * (0..2040), the CPU's float expression on the same integer values exactly */
__device__ __forceinline__ int sobel_at(const uint8_t *__restrict__ a, const uint8_t *__restrict__ b,
                                        const uint8_t *__restrict__ c, int l, int x, int r)
{
  int gx = (a[r] + 2 * b[r] + c[r]) - (a[l] + 2 * b[l] + c[l]);
  int gy = (c[l] + 2 * c[x] + c[r]) - (a[l] + 2 * a[x] + a[r]);
  return abs(gx) + abs(gy);
}

/* maxima_k: the interior maxima of the gradient G and of D = |I1 - I0| into
 * maxbits[0], [1] (integers; their floats are the CPU's Gmax, Dmax exactly),
 * four pixels per thread (byte quadruples where w % 4 == 0). MAP: I1 is read
 * from the pinned staging h1 (mapped host memory) and written to the device
 * copy I1 on the way, so the frame's upload is this kernel's reads (no copy
 * before it); else h1 is I1 itself, uploaded before. */
#define MAX_THREADS 256
template <bool MAP>
__global__ void __launch_bounds__(MAX_THREADS)
maxima_k(const uint8_t *__restrict__ I0, const uint8_t *__restrict__ h1, uint8_t *__restrict__ I1, vcm_dev_params d,
         unsigned *maxbits)
{
  size_t npx = (size_t)d.w * d.h, i0 = 4 * ((size_t)blockIdx.x * MAX_THREADS + threadIdx.x);
  int gm = 0, dm = 0;
  if (i0 + 4 <= npx && d.w % 4 == 0) { /* four pixels of one row */
    int y = (int)(i0 / d.w), x0 = (int)(i0 % d.w);
    uint32_t q1 = *(const uint32_t *)(h1 + i0), q0 = *(const uint32_t *)(I0 + i0);
    if (MAP) *(uint32_t *)(I1 + i0) = q1;
    if (y >= d.margin && y < d.h - d.margin) {
      const uint8_t *a = I0 + (size_t)(y - 1) * d.w, *b = I0 + (size_t)y * d.w, *c = I0 + (size_t)(y + 1) * d.w;
      uint32_t ad = __vabsdiffu4(q1, q0);
#pragma unroll
      for (int k = 0; k < 4; k++) {
        int x = x0 + k;
        if (x < d.margin || x >= d.w - d.margin) continue;
        gm = max(gm, sobel_at(a, b, c, x - 1, x, x + 1));
        dm = max(dm, (int)((ad >> (8 * k)) & 255u));
      }
    }
  } else
    for (size_t i = i0; i < i0 + 4 && i < npx; i++) {
      int y = (int)(i / d.w), x = (int)(i % d.w), v1 = h1[i];
      if (MAP) I1[i] = (uint8_t)v1;
      if (y < d.margin || y >= d.h - d.margin || x < d.margin || x >= d.w - d.margin) continue;
      /* interior: margin >= 1, so no neighbour leaves the frame */
      const uint8_t *a = I0 + (size_t)(y - 1) * d.w, *b = I0 + (size_t)y * d.w, *c = I0 + (size_t)(y + 1) * d.w;
      gm = max(gm, sobel_at(a, b, c, x - 1, x, x + 1));
      dm = max(dm, abs(v1 - (int)b[x]));
    }
  gm = __reduce_max_sync(0xffffffffu, gm);
  dm = __reduce_max_sync(0xffffffffu, dm);
  __shared__ int wg[MAX_THREADS / 32], wd[MAX_THREADS / 32];
  if (threadIdx.x % 32 == 0) {
    wg[threadIdx.x / 32] = gm;
    wd[threadIdx.x / 32] = dm;
  }
  __syncthreads();
  if (threadIdx.x == 0) { /* one atomic pair per block */
    for (int k = 1; k < MAX_THREADS / 32; k++) {
      gm = max(gm, wg[k]);
      dm = max(dm, wd[k]);
    }
    if (gm) atomicMax(&maxbits[0], (unsigned)gm);
    if (dm) atomicMax(&maxbits[1], (unsigned)dm);
  }
}

/* (f, idx) better than (g, jdx): larger F, then lower index */
__device__ __forceinline__ bool better(float f, int idx, float g, int jdx)
{
  return f > g || (f == g && idx < jdx);
}

/* A thread's K best (f desc, index asc) of the pixels it scans in index
 * order: KM = K slots in registers (unrolled insertion; an equal F stays
 * behind, so the earlier index first, as the CPU's topk_insert), or KM = 0:
 * the generic list of d.k in local memory. Empty slots hold F -1. */
template <int KM> struct topk {
  float f[KM];
  int i[KM];
  __device__ void init(int)
  {
#pragma unroll
    for (int j = 0; j < KM; j++) f[j] = -1.0f, i[j] = INT_MAX;
  }
  __device__ void insert(float v, int idx, int)
  {
    if (!(v > f[KM - 1])) return;
#pragma unroll
    for (int j = KM - 1; j > 0; j--) { /* new[j] from the old j - 1, j (read before written) */
      if (v > f[j - 1]) {
        f[j] = f[j - 1];
        i[j] = i[j - 1];
      } else if (v > f[j]) {
        f[j] = v;
        i[j] = idx;
      }
    }
    if (v > f[0]) {
      f[0] = v;
      i[0] = idx;
    }
  }
  __device__ void pop(int)
  {
#pragma unroll
    for (int j = 0; j < KM - 1; j++) f[j] = f[j + 1], i[j] = i[j + 1];
    f[KM - 1] = -1.0f;
    i[KM - 1] = INT_MAX;
  }
};
template <> struct topk<0> {
  float f[LT_VCM_MAX_K];
  int i[LT_VCM_MAX_K];
  __device__ void init(int k)
  {
    for (int j = 0; j < k; j++) f[j] = -1.0f, i[j] = INT_MAX;
  }
  __device__ void insert(float v, int idx, int k)
  {
    if (!(v > f[k - 1])) return;
    int j = k - 1;
    while (j > 0 && v > f[j - 1]) {
      f[j] = f[j - 1];
      i[j] = i[j - 1];
      j--;
    }
    f[j] = v;
    i[j] = idx;
  }
  __device__ void pop(int k)
  {
    for (int j = 0; j < k - 1; j++) f[j] = f[j + 1], i[j] = i[j + 1];
    f[k - 1] = -1.0f;
    i[k - 1] = INT_MAX;
  }
};

/* points_k: one block per sub-window. Each thread F of its pixels (the
 * Sobel again from I0, the CPU's float operations: F equal to the bit; the
 * loads of four pixels in flight before any F) and its K best; K rounds of
 * a block arg-max (F desc, index asc) = the CPU's selection into cellidx /
 * cellcnt. The last block to finish (a counter, after a fence) packs the
 * points in cell order: cells in passes of PTS_CH x PTS_THREADS, each pass
 * one round of count loads, one of index loads and a block prefix sum of
 * its PTS_CH columns (px / py, cstart, n). It then zeroes the counter and
 * the maxima for the next pair (every block read the maxima before
 * counting itself), so no memset precedes the pair. */
#define PTS_THREADS 128
#define PTS_CH 8
/* points_k's blocks per SM by its registers: 8 (64 registers) puts the
 * 1024 sub-windows of a 32x32 grid in one wave on the H100's 132 SMs
 * (without the bound 109 registers, 4 blocks per SM: two waves; 14.4 vs
 * 11.7 us, 2026-11-24 04:20 UTC); LT_VCM_PTS_OCC=0 the latter */
#define PTS_MINB 8
template <int KM, int MINB>
__global__ void __launch_bounds__(PTS_THREADS, MINB)
points_k(const uint8_t *__restrict__ I0, const uint8_t *__restrict__ I1, vcm_dev_params d, unsigned *maxbits,
         unsigned *done, int *__restrict__ cellidx, int *__restrict__ cellcnt, int *__restrict__ px,
         int *__restrict__ py, int *__restrict__ cstart, int *__restrict__ n)
{
  enum { NW = PTS_THREADS / 32 };
  __shared__ float sf[2][NW];
  __shared__ int si[2][NW], ws[PTS_CH][NW];
  __shared__ int last;
  int cell = blockIdx.x, cy = cell / d.gx, cx = cell % d.gx, k = KM ? KM : d.k, lane = threadIdx.x % 32;
  int wp = threadIdx.x / 32;
  griddep_wait(d); /* maxima_k's maxima, I1's device copy */
  float gmax = (float)maxbits[0], dmax = (float)maxbits[1]; /* (written by maxima_k) */
  int y0 = (int)((long long)cy * d.h / d.gy), y1 = (int)((long long)(cy + 1) * d.h / d.gy);
  int x0 = (int)((long long)cx * d.w / d.gx), x1 = (int)((long long)(cx + 1) * d.w / d.gx);
  int cw = x1 - x0, npx = cw * (y1 - y0);
  topk<KM> best;
  best.init(k);
  for (int t0 = 0; t0 < npx; t0 += 4 * PTS_THREADS) {
    int gv[4], dv[4], iv[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      int t = t0 + u * PTS_THREADS + threadIdx.x, x = x0 + t % cw, y = y0 + t / cw;
      gv[u] = -1;
      if (t >= npx || y < d.margin || y >= d.h - d.margin || x < d.margin || x >= d.w - d.margin) continue;
      const uint8_t *b = I0 + (size_t)y * d.w;
      iv[u] = y * d.w + x;
      gv[u] = sobel_at(b - d.w, b, b + d.w, x - 1, x, x + 1);
      dv[u] = abs((int)I1[iv[u]] - (int)b[x]);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      if (gv[u] < 0 || !(gmax > 0.0f && dmax > 0.0f)) continue;
      float g = (float)gv[u], df = (float)dv[u];
      float gn = g / gmax, dn = df / dmax;
      float f = gn < dn ? gn : dn;
      if (f < d.min_strength || df < d.min_contrast || g < d.gmin) f = 0.0f;
      if (f > 0.0f) best.insert(f, iv[u], k);
    }
  }
  int out = 0;
  for (int r = 0; r < k; r++) {
    float f = best.f[0];
    int idx = best.i[0];
    for (int o = 16; o > 0; o >>= 1) {
      float g = __shfl_xor_sync(0xffffffffu, f, o);
      int jdx = __shfl_xor_sync(0xffffffffu, idx, o);
      if (better(g, jdx, f, idx)) {
        f = g;
        idx = jdx;
      }
    }
    if (lane == 0) {
      sf[r & 1][wp] = f;
      si[r & 1][wp] = idx;
    }
    __syncthreads(); /* (two buffers: round r + 2 writes after round r + 1's barrier) */
    for (int w = 0; w < NW; w++)
      if (better(sf[r & 1][w], si[r & 1][w], f, idx)) {
        f = sf[r & 1][w];
        idx = si[r & 1][w];
      }
    if (!(f > 0.0f)) break; /* the same decision in every thread */
    if (best.i[0] == idx && best.f[0] > 0.0f) best.pop(k);
    if (threadIdx.x == 0) cellidx[(size_t)cell * d.k + out] = idx;
    out++;
  }
  if (threadIdx.x == 0) {
    cellcnt[cell] = out;
    __threadfence();
    last = atomicAdd(done, 1u) == (unsigned)(d.gx * d.gy - 1);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  int ncell = d.gx * d.gy, carry = 0;
  for (int base = 0; base < ncell; base += PTS_CH * PTS_THREADS) {
    int cn[PTS_CH], inc[PTS_CH], id[PTS_CH][KM ? KM : 1];
#pragma unroll
    for (int j = 0; j < PTS_CH; j++) {
      int c = base + j * PTS_THREADS + threadIdx.x;
      cn[j] = c < ncell ? __ldcg(&cellcnt[c]) : 0;
    }
#pragma unroll
    for (int j = 0; j < PTS_CH; j++) { /* all index loads in flight together (K <= 4) */
      int c = base + j * PTS_THREADS + threadIdx.x;
#pragma unroll
      for (int r = 0; r < (KM ? KM : 1); r++) id[j][r] = KM && r < cn[j] ? __ldcg(&cellidx[(size_t)c * d.k + r]) : 0;
    }
#pragma unroll
    for (int j = 0; j < PTS_CH; j++) { /* inclusive scans of the PTS_CH columns, warp by warp */
      inc[j] = cn[j];
      for (int o = 1; o < 32; o <<= 1) {
        int v = __shfl_up_sync(0xffffffffu, inc[j], o);
        if (lane >= o) inc[j] += v;
      }
      if (lane == 31) ws[j][wp] = inc[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PTS_CH; j++) {
      int c = base + j * PTS_THREADS + threadIdx.x, before = 0, tot = 0;
      for (int w = 0; w < NW; w++) {
        tot += ws[j][w];
        before += w < wp ? ws[j][w] : 0;
      }
      int at = carry + before + inc[j] - cn[j];
      if (c < ncell) {
        cstart[c] = at;
        if (KM) {
#pragma unroll
          for (int r = 0; r < (KM ? KM : 1); r++)
            if (r < cn[j]) {
              px[at + r] = id[j][r] % d.w;
              py[at + r] = id[j][r] / d.w;
            }
        } else
          for (int r = 0; r < cn[j]; r++) {
            int idx = __ldcg(&cellidx[(size_t)c * d.k + r]);
            px[at + r] = idx % d.w;
            py[at + r] = idx / d.w;
          }
      }
      carry += tot;
    }
    __syncthreads(); /* ws is read before the next pass writes it */
  }
  if (threadIdx.x == 0) {
    *n = cstart[ncell] = carry;
    *done = 0;
    maxbits[0] = maxbits[1] = 0;
  }
}

/* ---- stage 2: NCMs ---- */

__device__ __forceinline__ void search_rect(const vcm_dev_params &d, int x, int y, int r[4])
{
  int R = d.search / 2, hp = d.patch / 2;
  r[0] = hp - x > -R ? hp - x : -R;
  r[1] = d.w - 1 - hp - x < R ? d.w - 1 - hp - x : R;
  r[2] = hp - y > -R ? hp - y : -R;
  r[3] = d.h - 1 - hp - y < R ? d.h - 1 - hp - y : R;
}

/* The NCMs' row stride (uint16 entries): side^2 rounded up to a multiple
 * of 4, so that every point's map starts 8-byte aligned (vcm_band_k's
 * 32- and 64-bit loads of 2 or 4 offsets); the padding stays 0 (cu_alloc). */
__host__ __device__ __forceinline__ int ncm_stride(int side) { return (side * side + 3) & ~3; }

/* Index o = first, first + step, ... walked with its row r and column c in
 * rows of M (step % M < M): no integer division per step, which costs
 * about twenty instructions with a run-time M. */
struct rowcol {
  int r, c, dr, dc, M;
};
/* Block-wide compaction of the neighbour lists of vcm_k and vcm_band_k
 * (MAP_THREADS threads, every one calls it): this thread's slot among the
 * block's threads with near set, in thread order, and their number in *tot. */
__device__ __forceinline__ int block_slot(bool near, int *wcnt, int *tot)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned ball = __ballot_sync(0xffffffffu, near);
  if (lane == 0) wcnt[warp] = __popc(ball);
  __syncthreads();
  int at = 0, n = 0;
  for (int k = 0; k < MAP_THREADS / 32; k++) {
    at += k < warp ? wcnt[k] : 0;
    n += wcnt[k];
  }
  *tot = n;
  return at + __popc(ball & ((1u << lane) - 1u));
}

/* Neighbour j (at x, y) into slot at of the block's list: its index, its
 * clamped search rectangle and whether that is the whole search area. */
__device__ __forceinline__ void put_neighbour(const vcm_dev_params &d, int j, int x, int y, int at, int *nb_j,
                                              int *nb_full, int4 *nb_r)
{
  const int S2 = d.search / 2;
  int r[4];
  search_rect(d, x, y, r);
  nb_j[at] = j;
  nb_full[at] = r[0] == -S2 && r[1] == S2 && r[2] == -S2 && r[3] == S2;
  nb_r[at] = make_int4(r[0], r[1], r[2], r[3]);
}

__device__ __forceinline__ rowcol rc_start(int first, int step, int M)
{
  rowcol q = {first / M, first % M, step / M, step % M, M};
  return q;
}
__device__ __forceinline__ void rc_next(rowcol &q)
{
  q.c += q.dc;
  q.r += q.dr;
  if (q.c >= q.M) {
    q.c -= q.M;
    q.r++;
  }
}

/* The block's minimum and maximum of the SADs (lo, hi: each thread's), to
 * every thread (rmin, rmax: shared, MAP_THREADS / 32 each). */
__device__ __forceinline__ void block_minmax(float lo, float hi, float *rmin, float *rmax, float *dmin, float *dmax)
{
  for (int o = 16; o > 0; o >>= 1) {
    lo = fminf(lo, __shfl_down_sync(0xffffffffu, lo, o));
    hi = fmaxf(hi, __shfl_down_sync(0xffffffffu, hi, o));
  }
  if (threadIdx.x % 32 == 0) {
    rmin[threadIdx.x / 32] = lo;
    rmax[threadIdx.x / 32] = hi;
  }
  __syncthreads();
  *dmin = rmin[0];
  *dmax = rmax[0];
  for (int k = 1; k < MAP_THREADS / 32; k++) {
    *dmin = fminf(*dmin, rmin[k]);
    *dmax = fmaxf(*dmax, rmax[k]);
  }
}

/* The similarity of SAD c (integers as floats; inv = lt_vcm_sim_inv): the
 * CPU's lt_vcm_sim_q. */
__device__ __forceinline__ uint16_t similarity(float c, float dmin, float dmax, float inv, const vcm_dev_params &d)
{
  return lt_vcm_sim_q((int)c, (int)dmin, (int)dmax, inv, d.similarity, d.tau);
}

/* One block per point, any patch side (ncm5_k below takes the default 5).
 * The part of I1 that the clamped search rectangle touches ((S + P)^2
 * bytes at most) and the patch of I0 are staged in shared memory; each
 * thread keeps its KPT offsets' SADs in registers (offset o = threadIdx.x +
 * k * MAP_THREADS) as integers (__sad: exact, as the CPU's 16-bit lanes),
 * then the block's min/max and the similarity. */
template <int KPT>
__global__ void __launch_bounds__(MAP_THREADS)
ncm_k(const uint8_t *__restrict__ I0, const uint8_t *__restrict__ I1, const int *__restrict__ px,
      const int *__restrict__ py, const int *n, vcm_dev_params d, uint16_t *__restrict__ ncm)
{
  extern __shared__ uint8_t win[]; /* the I1 window */
  __shared__ int patch[LT_VCM_MAX_PATCH * LT_VCM_MAX_PATCH];
  __shared__ float rmin[MAP_THREADS / 32], rmax[MAP_THREADS / 32];
  int i = blockIdx.x;
  if (i >= *n) return;
  const int P = d.patch;
  int x = px[i], y = py[i], hp = P / 2, R = d.search / 2, M = d.side, r[4];
  search_rect(d, x, y, r);
  int ww = r[1] - r[0] + P, wh = r[3] - r[2] + P; /* window: offsets' patches */
  int wx0 = x - hp + r[0], wy0 = y - hp + r[2];
  for (int t = threadIdx.x; t < P * P; t += blockDim.x)
    patch[t] = I0[(size_t)(y + t / P - hp) * d.w + x + t % P - hp];
  for (int t = threadIdx.x; t < ww * wh; t += blockDim.x)
    win[t] = I1[(size_t)(wy0 + t / ww) * d.w + wx0 + t % ww];
  __syncthreads();
  float sad[KPT], lo = INFINITY, hi = 0.0f;
#pragma unroll
  for (int k = 0; k < KPT; k++) {
    int o = threadIdx.x + k * MAP_THREADS;
    int ox = o % M - R, oy = o / M - R;
    float s = 0.0f;
    if (o < M * M && ox >= r[0] && ox <= r[1] && oy >= r[2] && oy <= r[3]) {
      const uint8_t *base = win + (oy - r[2]) * ww + (ox - r[0]);
      unsigned si = 0;
#pragma unroll
      for (int ky = 0; ky < P; ky++)
#pragma unroll
        for (int kx = 0; kx < P; kx++) si = __sad(patch[ky * P + kx], base[ky * ww + kx], si);
      s = (float)si;
      lo = fminf(lo, s);
      hi = fmaxf(hi, s);
    }
    sad[k] = s;
  }
  float dmin, dmax;
  uint16_t *out = ncm + (size_t)i * ncm_stride(M);
  block_minmax(lo, hi, rmin, rmax, &dmin, &dmax);
  float inv = lt_vcm_sim_inv((int)dmin, (int)dmax);
#pragma unroll
  for (int k = 0; k < KPT; k++) {
    int o = threadIdx.x + k * MAP_THREADS;
    if (o >= M * M) break;
    int ox = o % M - R, oy = o / M - R;
    out[o] = ox >= r[0] && ox <= r[1] && oy >= r[2] && oy <= r[3] ? similarity(sad[k], dmin, dmax, inv, d) : 0;
  }
}

/* The NCM of the default 5x5 patch, register-tiled: one block per point,
 * each thread a tile of NCM_TX x NCM_TY offsets (4 across, 5 down) whose
 * SADs stay in registers. The I1 window under the clamped search rectangle
 * is staged in shared memory (rows padded to a multiple of 4, zeros past
 * the rectangle), so a thread reads each of the tile's NCM_TY + 4 window
 * rows once (8 pixels) and uses it for every patch row that meets it. SIMD
 * (the default): the window as bytes, two 4-byte loads per row, and per
 * offset and patch row one __byte_perm, __vabsdiffu4, __dp4a and __sad
 * (five pixels; COL5, the default: a second __dp4a instead of the __sad,
 * on one __vabsdiffu4 shared by the 4 offsets across); else the window as ints, two 16-byte loads per row and
 * 25 __sad per offset (ncm_k: one byte load per __sad). The patch is in
 * registers (the same 25 values in every thread). SADs are integers, so
 * they equal ncm_k's and the CPU's whatever the order; min/max are
 * order-free; the similarity is ncm_k's expression. The SADs wait in
 * shared memory (as ints; as floats with LT_VCM_NCM=col5) for the
 * block's min/max, then go out coalesced (4 offsets a thread: one 16-byte
 * shared read and one 8-byte store; col5: a 16-bit store per offset). H100, 640x480, 2048 points: 51 us SIMD, 62 us __sad, 86 us
 * ncm_k. */
#define NCM_TX 4
#define NCM_TY 5
#define NCM_MINB 5 /* ncm5_k's blocks per SM by its launch bounds (window by words; 48 registers;
                      LT_VCM_NCM=words4: 4, 64 registers; 0: none, as before) */
__device__ __forceinline__ int ncm5_ww(int nx) { return NCM_TX * ((nx + NCM_TX - 1) / NCM_TX) + NCM_TX; }
__device__ __forceinline__ int ncm5_wh(int ny) { return NCM_TY * ((ny + NCM_TY - 1) / NCM_TY) + 4; }

/* Bytes g .. g + 3 of frame I (npx bytes, 4-byte aligned) as one word:
 * two aligned 4-byte loads and a funnel shift; bytes by one near the
 * frame's end (none past it are read). */
__device__ __forceinline__ unsigned frame_word(const uint8_t *__restrict__ I, size_t g, size_t npx)
{
  size_t a = g & ~(size_t)3;
  if (a + 8 <= npx) {
    const unsigned *wp = (const unsigned *)(I + a);
    return __funnelshift_r(__ldg(wp), __ldg(wp + 1), 8 * (unsigned)(g & 3));
  }
  unsigned v = 0;
  for (int b = 0; b < 4; b++)
    if (g + b < npx) v |= (unsigned)I[g + b] << 8 * b;
  return v;
}

template <int NPT>
__device__ __forceinline__ void tile_list_build(const vcm_dev_params &d, const int *__restrict__ px,
                                                const int *__restrict__ py, const int *__restrict__ cstart,
                                                const int *__restrict__ wq, int tile_x, int tile_y,
                                                const tile_lists &tl, int tile, int *sm);

/* frame_word where the frame buffer has FRAME_PAD bytes past its npx
 * (cu_alloc): two aligned loads and the shift, no check */
#define FRAME_PAD 16
__device__ __forceinline__ unsigned frame_word_pad(const uint8_t *__restrict__ I, size_t g)
{
  const unsigned *wp = (const unsigned *)(I + (g & ~(size_t)3));
  return __funnelshift_r(__ldg(wp), __ldg(wp + 1), 8 * (unsigned)(g & 3));
}

/* Blocks d.maxpts and on (where the launch adds them: LT_VCM_BAND_LIST
 * unset, cu_alloc) build tile blockIdx.x - d.maxpts's neighbour list
 * (tile_list_build) instead: they run in the NCM's last wave, whose SMs
 * are otherwise mostly idle, and save vcm_list_k's launch. */
template <bool SIMD, bool WORDS, int MINB, int COL5 = 0, bool W4 = false>
__global__ void __launch_bounds__(MAP_THREADS, MINB)
ncm5_k(const uint8_t *__restrict__ I0, const uint8_t *__restrict__ I1, const int *__restrict__ px,
       const int *__restrict__ py, const int *n, vcm_dev_params d, uint16_t *__restrict__ ncm,
       const int *__restrict__ cstart, const int *__restrict__ wq, int tile_x, int tile_y, tile_lists tl)
{ /* SIMD (the default; LT_VCM_NCM=sad for false): the window as bytes,
   * a patch row's first four pixels by one __vabsdiffu4 + __dp4a on the
   * window bytes aligned with __byte_perm, the fifth by __sad. WORDS
   * (with SIMD; the default, LT_VCM_NCM=bytes for false): the window
   * staged 4 bytes per thread and step (frame_word), 4 steps' loads in
   * flight, instead of one byte per step; the bytes past a row's
   * rectangle are then the frame's (they feed only the SADs of offsets
   * outside the rectangle, which are not used). COL5 (with SIMD; the
   * default, LT_VCM_NCM=sad5 for false): the fifth pixels of a window row
   * and patch row for the tile's 4 offsets across (window bytes 4 .. 7)
   * by one __vabsdiffu4 against the patch pixel in every byte, each
   * offset's byte added by a __dp4a with a one-byte mask, instead of a
   * byte extraction and a __sad per offset (COL5 = 1, the default). COL5
   * = 2 (LT_VCM_NCM=regs, an experiment) also: where each thread has at
   * most one tile (search <= 64), its SADs stay in registers over the
   * block's min/max and it writes its tile's similarities itself (no
   * shared-memory round trip, no walk over the map per offset); the
   * window's words and the patch's rows by frame_word_pad (the frames'
   * FRAME_PAD bytes). 18% fewer instructions than COL5 = 1, yet slower on
   * the H100 (44.2 vs 41.2 us at 640x480 with 2048 points, 2026-11-24
   * 05:53 UTC: issue slots 54% vs 71% busy; its 16-bit stores are
   * scattered over the tile rows instead of coalesced). W4 (with COL5 =
   * 1; the default, LT_VCM_NCM=col5 for false): the SADs go to shared
   * memory as ints, and the similarities out 4 offsets a thread (one
   * 16-byte shared read, one 8-byte store, the map's padding included)
   * instead of a 16-bit store per offset */
  extern __shared__ int4 smem4[];
  __shared__ float rmin[MAP_THREADS / 32], rmax[MAP_THREADS / 32];
  int i = blockIdx.x;
  griddep_wait(d); /* points_k's points (and every block waits: the chain stays transitive) */
  if (i >= d.maxpts) {
    tile_list_build<TILE_PTS>(d, px, py, cstart, wq, tile_x, tile_y, tl, i - d.maxpts, (int *)smem4);
    return;
  }
  if (i >= *n) return;
  int x = px[i], y = py[i], R = d.search / 2, M = d.side, r[4];
  search_rect(d, x, y, r);
  int nx = r[1] - r[0] + 1, ny = r[3] - r[2] + 1, ww = ncm5_ww(nx), wh = ncm5_wh(ny);
  int ntx = (nx + NCM_TX - 1) / NCM_TX, nty = (ny + NCM_TY - 1) / NCM_TY;
  float *sadf = (float *)smem4;     /* M * M SADs (rectangle only) */
  int *win = (int *)smem4 + ((M * M + 3) & ~3); /* 16-byte aligned */
  uint8_t *win8 = (uint8_t *)win;
  int wx0 = x - 2 + r[0], wy0 = y - 2 + r[2];
  rowcol q = rc_start(threadIdx.x, blockDim.x, WORDS ? ww / 4 : ww);
  if (WORDS) { /* ww is a multiple of 4: word t of the window is row t / (ww / 4) */
    const int nwd = ww / 4 * wh;
    const size_t npx = (size_t)d.w * d.h;
    for (int t0 = threadIdx.x; t0 < nwd; t0 += 4 * MAP_THREADS) {
      unsigned v[4];
#pragma unroll
      for (int u = 0; u < 4; u++, rc_next(q))
        v[u] = t0 + u * MAP_THREADS < nwd && q.r < ny + 4
                   ? (COL5 == 2 ? frame_word_pad(I1, (size_t)(wy0 + q.r) * d.w + wx0 + 4 * q.c)
                                : frame_word(I1, (size_t)(wy0 + q.r) * d.w + wx0 + 4 * q.c, npx))
                   : 0u;
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (t0 + u * MAP_THREADS < nwd) win[t0 + u * MAP_THREADS] = (int)v[u];
    }
  } else
    for (int t = threadIdx.x; t < ww * wh; t += blockDim.x, rc_next(q)) {
      uint8_t v = q.r < ny + 4 && q.c < nx + 4 ? I1[(size_t)(wy0 + q.r) * d.w + wx0 + q.c] : 0;
      if (SIMD)
        win8[t] = v;
      else
        win[t] = v;
    }
  int p[25];
  unsigned p4[5], p5[5]; /* SIMD: patch row ky's first four pixels as bytes; COL5: its fifth in each byte */
  if (COL5 == 2)
#pragma unroll
    for (int ky = 0; ky < 5; ky++) { /* (p unused) */
      size_t g = (size_t)(y + ky - 2) * d.w + x - 2;
      p4[ky] = frame_word_pad(I0, g);
      p5[ky] = (frame_word_pad(I0, g + 4) & 0xffu) * 0x01010101u;
    }
  else {
#pragma unroll
    for (int k = 0; k < 25; k++) p[k] = I0[(size_t)(y + k / 5 - 2) * d.w + x + k % 5 - 2];
#pragma unroll
    for (int ky = 0; ky < 5; ky++) {
      p4[ky] = (unsigned)p[ky * 5] | (unsigned)p[ky * 5 + 1] << 8 | (unsigned)p[ky * 5 + 2] << 16 |
               (unsigned)p[ky * 5 + 3] << 24;
      p5[ky] = (unsigned)p[ky * 5 + 4] * 0x01010101u;
    }
  }
  __syncthreads();
  /* the SADs of tile (tx, ty)'s offsets into acc */
  auto tile_sads = [&](int tx, int ty, unsigned (&acc)[NCM_TY][NCM_TX]) {
#pragma unroll
    for (int a = 0; a < NCM_TY; a++)
#pragma unroll
      for (int b = 0; b < NCM_TX; b++) acc[a][b] = 0;
#pragma unroll
    for (int yy = 0; yy < NCM_TY + 4; yy++) {
      int v[8];
      unsigned w0 = 0, w1 = 0;
      if (SIMD) {
        const unsigned *rp = (const unsigned *)(win8 + (ty * NCM_TY + yy) * ww + tx * NCM_TX);
        w0 = rp[0];
        w1 = rp[1];
      } else {
        const int4 *rp = (const int4 *)(win + (ty * NCM_TY + yy) * ww + tx * NCM_TX);
        int4 a = rp[0], b = rp[1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
      }
#pragma unroll
      for (int dy = 0; dy < NCM_TY; dy++) {
        int ky = yy - dy;
        if (ky < 0 || ky > 4) continue;
        if (SIMD && COL5) {
          unsigned f = __vabsdiffu4(w1, p5[ky]); /* byte t: offset t's fifth pixel */
#pragma unroll
          for (int t = 0; t < NCM_TX; t++) {
            unsigned g = __byte_perm(w0, w1, 0x3210 + 0x1111 * t); /* window bytes t .. t + 3 */
            acc[dy][t] = __dp4a(__vabsdiffu4(g, p4[ky]), 0x01010101u, acc[dy][t]);
            acc[dy][t] = __dp4a(f, 1u << 8 * t, acc[dy][t]);
          }
        } else
#pragma unroll
          for (int t = 0; t < NCM_TX; t++)
            if (SIMD) {
              unsigned g = __byte_perm(w0, w1, 0x3210 + 0x1111 * t); /* window bytes t .. t + 3 */
              acc[dy][t] = __dp4a(__vabsdiffu4(g, p4[ky]), 0x01010101u, acc[dy][t]);
              acc[dy][t] = __sad((int)((w1 >> (8 * t)) & 0xffu), p[ky * 5 + 4], acc[dy][t]);
            } else
#pragma unroll
              for (int kx = 0; kx < 5; kx++) acc[dy][t] = __sad(p[ky * 5 + kx], v[t + kx], acc[dy][t]);
      }
    }
  };
  float lo = INFINITY, hi = 0.0f, dmin, dmax;
  uint16_t *out = ncm + (size_t)i * ncm_stride(M);
  if (COL5 == 2 && ntx * nty <= MAP_THREADS) { /* a tile per thread at most: its SADs stay in registers */
    const int tx = threadIdx.x % ntx, ty = threadIdx.x / ntx;
    const bool has = (int)threadIdx.x < ntx * nty;
    unsigned acc[NCM_TY][NCM_TX];
    if (has) tile_sads(tx, ty, acc);
    int lo_i = INT_MAX, hi_i = 0;
#pragma unroll
    for (int dy = 0; dy < NCM_TY; dy++)
#pragma unroll
      for (int t = 0; t < NCM_TX; t++)
        if (has && r[0] + tx * NCM_TX + t <= r[1] && r[2] + ty * NCM_TY + dy <= r[3]) {
          lo_i = min(lo_i, (int)acc[dy][t]);
          hi_i = max(hi_i, (int)acc[dy][t]);
        }
    lo = lo_i == INT_MAX ? INFINITY : (float)lo_i; /* (SADs <= 25 * 255: exact as floats) */
    hi = (float)hi_i;
    block_minmax(lo, hi, rmin, rmax, &dmin, &dmax);
    const int idmin = (int)dmin, idmax = (int)dmax;
    const float inv = lt_vcm_sim_inv(idmin, idmax);
    if (has) { /* the tile's similarities straight from the registers */
      uint16_t *o0 = out + (r[2] + ty * NCM_TY + R) * M + r[0] + tx * NCM_TX + R;
#pragma unroll
      for (int dy = 0; dy < NCM_TY; dy++)
#pragma unroll
        for (int t = 0; t < NCM_TX; t++)
          if (r[0] + tx * NCM_TX + t <= r[1] && r[2] + ty * NCM_TY + dy <= r[3])
            o0[dy * M + t] = lt_vcm_sim_q((int)acc[dy][t], idmin, idmax, inv, d.similarity, d.tau);
    }
    if (nx < M || ny < M) { /* the offsets outside the clamped rectangle: 0 (the tiles write the others) */
      q = rc_start(threadIdx.x, blockDim.x, M);
      for (int o = threadIdx.x; o < M * M; o += blockDim.x, rc_next(q)) {
        int ox = q.c - R, oy = q.r - R;
        if (!(ox >= r[0] && ox <= r[1] && oy >= r[2] && oy <= r[3])) out[o] = 0;
      }
    }
    return;
  }
  /* every tile of the block's threads: put(index in the M x M map, SAD) for
   * each of its offsets inside the clamped rectangle */
  auto each_sad = [&](auto put) {
    for (int tile = threadIdx.x; tile < ntx * nty; tile += blockDim.x) {
      int tx = tile % ntx, ty = tile / ntx;
      unsigned acc[NCM_TY][NCM_TX];
      tile_sads(tx, ty, acc);
#pragma unroll
      for (int dy = 0; dy < NCM_TY; dy++)
#pragma unroll
        for (int t = 0; t < NCM_TX; t++) {
          int ox = r[0] + tx * NCM_TX + t, oy = r[2] + ty * NCM_TY + dy;
          if (ox > r[1] || oy > r[3]) continue;
          put((oy + R) * M + ox + R, acc[dy][t]);
        }
    }
  };
  if constexpr (W4) { /* the SADs as ints in shared memory, then 4 similarities a store */
    int *sadi = (int *)smem4, lo_i = INT_MAX, hi_i = 0;
    each_sad([&](int k, unsigned v) {
      lo_i = min(lo_i, (int)v);
      hi_i = max(hi_i, (int)v);
      sadi[k] = (int)v;
    });
    lo = lo_i == INT_MAX ? INFINITY : (float)lo_i; /* (SADs <= 25 * 255: exact as floats) */
    hi = (float)hi_i;
    block_minmax(lo, hi, rmin, rmax, &dmin, &dmax);
    const int idmin = (int)dmin, idmax = (int)dmax, ms = ncm_stride(M);
    const float inv = lt_vcm_sim_inv(idmin, idmax);
    /* offsets o .. o + 3 (o a multiple of 4: the map's row is 8-byte
     * aligned, ncm_stride) by one 16-byte shared read and one 8-byte
     * store, over the whole padded row (its padding gets its 0 again) */
    q = rc_start(4 * threadIdx.x, 4 * blockDim.x, M);
    for (int o = 4 * threadIdx.x; o < ms; o += 4 * blockDim.x, rc_next(q)) {
      const int4 s4 = *(const int4 *)(sadi + o); /* (in the SADs' area, rounded up to 4: ncm5_smem) */
      const int sv[4] = {s4.x, s4.y, s4.z, s4.w};
      unsigned h[4];
      int oy = q.r - R, ox = q.c - R;
#pragma unroll
      for (int k = 0; k < 4; k++) {
        h[k] = ox >= r[0] && ox <= r[1] && oy >= r[2] && oy <= r[3] /* (the padding: oy > R) */
                   ? lt_vcm_sim_q(sv[k], idmin, idmax, inv, d.similarity, d.tau)
                   : 0u;
        if (++ox > R) { /* the next row (M = 2 R + 1: search is even) */
          ox = -R;
          oy++;
        }
      }
      *(uint2 *)(out + o) = make_uint2(h[0] | h[1] << 16, h[2] | h[3] << 16);
    }
  } else { /* the SADs as floats, a 16-bit store per offset (LT_VCM_NCM=col5 and the others) */
    each_sad([&](int k, unsigned v) {
      float s = (float)v;
      lo = fminf(lo, s);
      hi = fmaxf(hi, s);
      sadf[k] = s;
    });
    block_minmax(lo, hi, rmin, rmax, &dmin, &dmax);
    float inv = lt_vcm_sim_inv((int)dmin, (int)dmax);
    q = rc_start(threadIdx.x, blockDim.x, M);
    for (int o = threadIdx.x; o < M * M; o += blockDim.x, rc_next(q)) {
      int ox = q.c - R, oy = q.r - R;
      out[o] = ox >= r[0] && ox <= r[1] && oy >= r[2] && oy <= r[3] ? similarity(sadf[o], dmin, dmax, inv, d) : 0;
    }
  }
}

/* shared memory of ncm5_k for a search side M: the SADs and the widest window */
static size_t ncm5_smem(int M)
{
  size_t ww = NCM_TX * ((M + NCM_TX - 1) / NCM_TX) + NCM_TX, wh = NCM_TY * ((M + NCM_TY - 1) / NCM_TY) + 4;
  return (((size_t)M * M + 3) & ~(size_t)3) * sizeof(float) + ww * wh * sizeof(int);
}

/* ---- stage 3: VCMs ---- */

__device__ float refine(float l, float c, float r, int mode)
{
  float t = 0.0f;
  if (mode == LT_VCM_SUB_PARABOLA) {
    float den = __fadd_rn(__fsub_rn(l, __fmul_rn(2.0f, c)), r);
    if (den < 0.0f) t = __fdiv_rn(__fmul_rn(0.5f, __fsub_rn(l, r)), den);
  } else {
    float den = r >= l ? __fsub_rn(c, l) : __fsub_rn(c, r);
    if (den > 0.0f) t = __fdiv_rn(__fmul_rn(0.5f, __fsub_rn(r, l)), den);
  }
  return t > 0.5f ? 0.5f : t < -0.5f ? -0.5f : t;
}

/* (1 - a) u + a v with the CPU's rounding */
__device__ __forceinline__ float lerp_rn(float a, float u, float v)
{
  return __fadd_rn(__fmul_rn(__fsub_rn(1.0f, a), u), __fmul_rn(a, v));
}

/* the CPU's lt_vcm_peak refinement around map index best of a side x side
 * map; c: the map's value at best, the map's rows stride apart (the whole
 * map: stride side; vcm_pick_k: the 3x3 around best, stride 3) */
__device__ void peak_refine(const float *c, int stride, int side, int best, int mode, float *dx, float *dy)
{
  int R = side / 2, bx = best % side, by = best / side;
  float sx = 0.0f, sy = 0.0f;
  if (bx > 0 && bx < side - 1 && by > 0 && by < side - 1) {
    float sx0 = refine(c[-1], c[0], c[1], mode);
    int ci = sx0 >= 0.0f ? 1 : -1;
    float a = fabsf(sx0);
    float u = lerp_rn(a, c[-stride], c[-stride + ci]);
    float m = lerp_rn(a, c[0], c[ci]);
    float dd = lerp_rn(a, c[stride], c[stride + ci]);
    sy = refine(u, m, dd, mode);
    int rj = sy >= 0.0f ? stride : -stride;
    float b = fabsf(sy);
    float l = lerp_rn(b, c[-1], c[rj - 1]);
    float mm = lerp_rn(b, c[0], c[rj]);
    float r = lerp_rn(b, c[1], c[rj + 1]);
    sx = refine(l, mm, r, mode);
  } else {
    if (bx > 0 && bx < side - 1) sx = refine(c[-1], c[0], c[1], mode);
    if (by > 0 && by < side - 1) sy = refine(c[-stride], c[0], c[stride], mode);
  }
  *dx = __fadd_rn((float)(bx - R), sx);
  *dy = __fadd_rn((float)(by - R), sy);
}

/* the CPU's temporal_predict */
__device__ bool predict(const lt_vcm_vector *prev, int nprev, const float *wt, int R, int x, int y,
                        float *vx, float *vy)
{
  float sw = 0.0f, sx = 0.0f, sy = 0.0f;
  for (int k = 0; k < nprev; k++) {
    int ex = (int)prev[k].x - x, ey = (int)prev[k].y - y, d2 = ex * ex + ey * ey;
    if (d2 > R * R) continue;
    float wv = wt[d2];
    sw = __fadd_rn(sw, wv);
    sx = __fadd_rn(sx, __fmul_rn(wv, prev[k].dx));
    sy = __fadd_rn(sy, __fmul_rn(wv, prev[k].dy));
  }
  if (!(sw > 0.0f)) return false;
  *vx = __fdiv_rn(sx, sw);
  *vy = __fdiv_rn(sy, sw);
  return true;
}

/* the CPU's cell_of: sub-window of pixel column x of w */
__host__ __device__ __forceinline__ int cell_of(int x, int w, int gn)
{
  int g = (int)(((long long)(x + 1) * gn + w - 1) / w) - 1;
  return g < 0 ? 0 : g >= gn ? gn - 1 : g;
}

/* a better than b: larger value, then smaller |offset|^2, then lower index */
__device__ __forceinline__ bool peak_better(float va, int da, int ia, float vb, int db, int ib)
{
  return va > vb || (va == vb && (da < db || (da == db && ia < ib)));
}

/* The vector of point (xi, yi) from its peak (dx, dy; value best, in lane
 * 0 at least), by one whole warp: the CPU's lt_vcm_evidence with the
 * window's pixels spread over the lanes (integer sums: exact in any order),
 * then lane 0 writes *out. */
__device__ __forceinline__ void vcm_emit(float dx, float dy, float best, float norm, const uint8_t *__restrict__ q0,
                                         const uint8_t *__restrict__ q1, const vcm_dev_params &d, int xi, int yi,
                                         lt_vcm_vector *out)
{
  int lane = threadIdx.x % 32;
  float ev_ratio = 0.0f;
  if (__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)) >= 1.0f) {
    int ox = __float2int_rn(dx), oy = __float2int_rn(dy), side = 2 * LT_VCM_EVIDENCE_HALF + 1;
    int e0 = 0, ev = 0, used = 0;
    for (int t = lane; t < side * side; t += 32) {
      int ax = xi + t % side - LT_VCM_EVIDENCE_HALF, ay = yi + t / side - LT_VCM_EVIDENCE_HALF;
      int bx = ax + ox, by = ay + oy;
      if (ax < 0 || ay < 0 || ax >= d.w || ay >= d.h || bx < 0 || by < 0 || bx >= d.w || by >= d.h) continue;
      int a = q0[(size_t)ay * d.w + ax];
      e0 += abs(a - (int)q1[(size_t)ay * d.w + ax]);
      ev += abs(a - (int)q1[(size_t)by * d.w + bx]);
      used++;
    }
    for (int o = 16; o > 0; o >>= 1) {
      e0 += __shfl_xor_sync(0xffffffffu, e0, o);
      ev += __shfl_xor_sync(0xffffffffu, ev, o);
      used += __shfl_xor_sync(0xffffffffu, used, o);
    }
    ev_ratio = 2 * used < side * side || (e0 == 0 && ev > 0) ? INFINITY
               : e0 == 0                                    ? 0.0f
                                                            : __fdiv_rn((float)ev, (float)e0);
  }
  if (lane != 0) return;
  lt_vcm_vector v;
  v.x = (float)xi;
  v.y = (float)yi;
  v.dx = dx;
  v.dy = dy;
  v.score = __fdiv_rn(best, norm);
  v.evidence = ev_ratio;
  *out = v;
}

/* The end of a point's VCM (every thread of the block, with its KPT
 * offsets' sums): normalisation by the support, temporal prior, the map in
 * shared memory, block arg-max with the CPU's tie-break, sub-pixel
 * refinement and the motion evidence (warp 0), the vector to *out. */
template <int KPT>
__device__ __forceinline__ void vcm_finish(const int *acc, const int *cnt, int sw, int full, float *map,
                           float *bv_s, int *bd_s, int *bi_s, const uint8_t *__restrict__ q0,
                           const uint8_t *__restrict__ q1, const float *__restrict__ wt,
                           const lt_vcm_vector *__restrict__ prev, const int *nprev, const vcm_dev_params &d,
                           int xi, int yi, lt_vcm_vector *out)
{
  int M = d.side, m2 = M * M, S2 = d.search / 2, R = d.radius;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float vx = 0.0f, vy = 0.0f, norm = 1.0f;
  bool prior = d.lam > 0.0f && predict(prev, *nprev, wt, R, xi, yi, &vx, &vy);
  if (prior) norm = __fadd_rn(1.0f, d.lam);
  float best = -INFINITY;
  int bd = 0, bi = 0;
  rowcol rc = rc_start(threadIdx.x, MAP_THREADS, M);
#pragma unroll
  for (int k = 0; k < KPT; k++, rc_next(rc)) {
    int o = threadIdx.x + k * MAP_THREADS;
    if (o >= m2) break;
    int cw = full + cnt[o]; /* the CPU's normalise: 4 C >= sw (LT_VCM_MIN_SUPPORT 1/4), C > 0 */
    float v = 4 * cw >= sw && cw > 0 ? __fdiv_rn(__int2float_rn(acc[k]), __int2float_rn(cw * LT_VCM_SIM_ONE)) : 0.0f;
    int ox = rc.c - S2, oy = rc.r - S2;
    if (prior) {
      float fx = __fsub_rn((float)ox, vx), fy = __fsub_rn((float)oy, vy);
      float q = __fsub_rn(1.0f, __fmul_rn(__fadd_rn(__fmul_rn(fx, fx), __fmul_rn(fy, fy)), d.irho2));
      if (q > 0.0f) v = __fadd_rn(v, __fmul_rn(d.lam, q));
    }
    map[o] = v;
    int dd = ox * ox + oy * oy;
    if (peak_better(v, dd, o, best, bd, bi) || k == 0) {
      best = v;
      bd = dd;
      bi = o;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float v2 = __shfl_down_sync(0xffffffffu, best, o);
    int d2 = __shfl_down_sync(0xffffffffu, bd, o), i2 = __shfl_down_sync(0xffffffffu, bi, o);
    if (peak_better(v2, d2, i2, best, bd, bi)) {
      best = v2;
      bd = d2;
      bi = i2;
    }
  }
  if (lane == 0) {
    bv_s[warp] = best;
    bd_s[warp] = bd;
    bi_s[warp] = bi;
  }
  __syncthreads();
  if (warp != 0) return;
  float dx = 0.0f, dy = 0.0f;
  if (lane == 0) {
    for (int k = 1; k < MAP_THREADS / 32; k++)
      if (peak_better(bv_s[k], bd_s[k], bi_s[k], best, bd, bi)) {
        best = bv_s[k];
        bd = bd_s[k];
        bi = bi_s[k];
      }
    peak_refine(map + bi, M, M, bi, d.subpixel, &dx, &dy);
  }
  dx = __shfl_sync(0xffffffffu, dx, 0);
  dy = __shfl_sync(0xffffffffu, dy, 0);
  vcm_emit(dx, dy, best, norm, q0, q1, d, xi, yi, out);
}

/* NP = 1: one block per point i (blockIdx.x). NP = 2: one block per
 * sub-window (blockIdx.x = cell), its points (at most 2: K <= 2) together,
 * so that a neighbour's NCM, read once, is added into both points' sums (a
 * cell's two points share most neighbours: ~1.5x less L2 traffic at the
 * defaults). The candidates j are the points of the sub-windows the radius
 * reaches around any of the block's points (cstart from points_k; rows of
 * cells, each a contiguous run of points), taken MAP_THREADS at a time with
 * a block-wide ballot and prefix, which keeps them in ascending j order =
 * the CPU's summation order for each point (a candidate beyond a point's
 * radius is skipped for it: the same sequence as scanning its own cells);
 * their weights per point (-1: not a neighbour) and search rectangles go to
 * shared memory. Each thread then adds the neighbours' NCM values at its
 * KPT offsets (o = threadIdx.x + k * MAP_THREADS: coalesced reads,
 * L2-resident maps) into integer sums in registers, with the support C(o)
 * as the sum of the integer weights, as the CPU does (exact in any order).
 * Each point's finished VCM goes to shared memory in turn for the arg-max
 * (the CPU's tie-break), sub-pixel refinement and motion evidence. */
template <int KPT, int NP>
__global__ void __launch_bounds__(MAP_THREADS, KPT > 17 ? 1 : NP == 1 ? 3 : 2)
vcm_k(const uint16_t *__restrict__ ncm, const uint8_t *__restrict__ q0, const uint8_t *__restrict__ q1,
      const int *__restrict__ px, const int *__restrict__ py, const int *__restrict__ cstart, const int *n,
      const float *__restrict__ wt, const int *__restrict__ wq, const lt_vcm_vector *__restrict__ prev,
      const int *nprev, vcm_dev_params d, lt_vcm_vector *__restrict__ out)
{
  extern __shared__ float map[];
  __shared__ float bv_s[MAP_THREADS / 32];
  __shared__ int nb_w[NP][MAP_THREADS];
  __shared__ int bd_s[MAP_THREADS / 32], bi_s[MAP_THREADS / 32], wcnt[MAP_THREADS / 32];
  __shared__ int nb_j[MAP_THREADS], nb_full[MAP_THREADS];
  __shared__ int4 nb_r[MAP_THREADS];
  int i0, np;
  if (NP == 1) {
    i0 = blockIdx.x;
    np = i0 < *n ? 1 : 0;
  } else {
    i0 = cstart[blockIdx.x];
    np = cstart[blockIdx.x + 1] - i0;
  }
  if (np <= 0) return;
  int M = d.side, m2 = M * M, S2 = d.search / 2, R = d.radius;
  int xs[NP], ys[NP];
  int acc[NP][KPT];
  /* support C(o) (integer weights), as the CPU, in shared memory after the map (each thread only
   * touches its own offsets: no barrier; registers would halve the occupancy) */
  int *cnt = (int *)(map + m2);
  int sw[NP], full[NP];
  int xlo = INT_MAX, xhi = INT_MIN, ylo = INT_MAX, yhi = INT_MIN;
#pragma unroll
  for (int p = 0; p < NP; p++) {
    int ip = p < np ? i0 + p : i0; /* a missing second point repeats the first (not used) */
    xs[p] = px[ip];
    ys[p] = py[ip];
    xlo = min(xlo, xs[p]);
    xhi = max(xhi, xs[p]);
    ylo = min(ylo, ys[p]);
    yhi = max(yhi, ys[p]);
    sw[p] = full[p] = 0;
#pragma unroll
    for (int k = 0; k < KPT; k++) {
      int o = threadIdx.x + k * MAP_THREADS;
      acc[p][k] = 0;
      if (o < m2) cnt[p * m2 + o] = 0;
    }
  }
  int cx0 = cell_of(xlo - R > 0 ? xlo - R : 0, d.w, d.gx), cx1 = cell_of(xhi + R, d.w, d.gx);
  int cy0 = cell_of(ylo - R > 0 ? ylo - R : 0, d.h, d.gy), cy1 = cell_of(yhi + R, d.h, d.gy);
  for (int cy = cy0; cy <= cy1; cy++) {
    int j0 = cstart[cy * d.gx + cx0], j1 = cstart[cy * d.gx + cx1 + 1];
    for (int base = j0; base < j1; base += MAP_THREADS) {
      int j = base + threadIdx.x, d2[NP];
      bool near = false, nearp[NP];
#pragma unroll
      for (int p = 0; p < NP; p++) {
        nearp[p] = false;
        d2[p] = 0;
        if (j < j1 && p < np) {
          int ex = px[j] - xs[p], ey = py[j] - ys[p];
          d2[p] = ex * ex + ey * ey;
          nearp[p] = d2[p] <= R * R;
        }
        near = near || nearp[p];
      }
      int tot, at = block_slot(near, wcnt, &tot);
      if (near) {
        put_neighbour(d, j, px[j], py[j], at, nb_j, nb_full, nb_r);
#pragma unroll
        for (int p = 0; p < NP; p++) nb_w[p][at] = nearp[p] ? wq[d2[p]] : -1;
      }
      __syncthreads();
      for (int q = 0; q < tot; q++) {
        const uint16_t *s = ncm + (size_t)nb_j[q] * ncm_stride(M);
        int sv[KPT];
#pragma unroll
        for (int k = 0; k < KPT; k++) {
          int o = threadIdx.x + k * MAP_THREADS;
          sv[k] = o < m2 ? __ldg(s + o) : 0;
        }
        int fl = nb_full[q];
        int4 r = nb_r[q];
#pragma unroll
        for (int p = 0; p < NP; p++) {
          int wv = nb_w[p][q];
          if (wv < 0) continue; /* beyond this point's radius */
          sw[p] += wv;
#pragma unroll
          for (int k = 0; k < KPT; k++) acc[p][k] += wv * sv[k]; /* integers: exact, any order */
          if (fl) {
            full[p] += wv;
            continue;
          }
          rowcol rc = rc_start(threadIdx.x, MAP_THREADS, M); /* a loop, not unrolled: fewer registers */
#pragma unroll 1
          for (int o = threadIdx.x; o < m2; o += MAP_THREADS, rc_next(rc)) {
            int ox = rc.c - S2, oy = rc.r - S2;
            if (ox >= r.x && ox <= r.y && oy >= r.z && oy <= r.w) cnt[p * m2 + o] += wv;
          }
        }
      }
      __syncthreads(); /* the list is rewritten by the next chunk */
    }
  }
#pragma unroll
  for (int p = 0; p < NP; p++) {
    if (p >= np) break;
    if (p > 0) __syncthreads(); /* the last point's map and maxima are read */
    vcm_finish<KPT>(acc[p], cnt + p * m2, sw[p], full[p], map, bv_s, bd_s, bi_s, q0, q1, wt, prev, nprev, d, xs[p],
                    ys[p], &out[i0 + p]);
  }
}

/* ---- stage 3, tiled (the default): prior_k, vcm_band_k, vcm_pick_k ---- */

#define BAND2_MINB 4 /* vcm_band_k's blocks per SM with 2 offsets per thread */
#define BAND4_MINB 3 /* and with 4 */
#define BANDDP_QB 2   /* vcm_band_k<.., DP>'s pairs of neighbours whose loads are in flight together */

/* (value, |o|^2, o) as one 64-bit key whose maximum is peak_better's best:
 * the value's bits (V >= +0 and never NaN, so its bits order as the
 * values), then the complement of the rank |o|^2 2^15 + o (o < 2^15: the
 * map has at most 129^2 offsets, |o|^2 <= 2 64^2). Key 0: no offset. */
__device__ __forceinline__ unsigned key_rank(int dd, int o) { return 0xffffffffu - ((unsigned)dd << 15 | (unsigned)o); }

/* The warp's maximum of keys (hi: value bits, lo: key_rank; 0, 0 for none),
 * to every lane. */
__device__ __forceinline__ unsigned long long warp_key_max(unsigned hi, unsigned lo)
{
  unsigned h = __reduce_max_sync(0xffffffffu, hi);
  unsigned l = __reduce_max_sync(0xffffffffu, hi == h ? lo : 0u);
  return (unsigned long long)h << 32 | l;
}

/* The CPU's temporal_predict for each point, one warp per point: the
 * previous vectors within the radius found 32 at a time by ballot and
 * summed in ascending k (the CPU's order; the others it skips), every lane
 * the same sums. pri[i] = (vx, vy, 1, 0), or all 0 when none is near. */
__global__ void prior_k(const int *__restrict__ px, const int *__restrict__ py, const int *n,
                        const lt_vcm_vector *__restrict__ prev, const int *nprev, const float *__restrict__ wt,
                        vcm_dev_params d, float4 *__restrict__ pri)
{
  int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (i >= *n) return;
  int x = px[i], y = py[i], R = d.radius, np = *nprev;
  float sw = 0.0f, sx = 0.0f, sy = 0.0f;
  for (int base = 0; base < np; base += 32) {
    int k = base + lane, d2 = 0;
    bool near = false;
    if (k < np) {
      int ex = (int)prev[k].x - x, ey = (int)prev[k].y - y;
      d2 = ex * ex + ey * ey;
      near = d2 <= R * R;
    }
    unsigned ball = __ballot_sync(0xffffffffu, near);
    while (ball) {
      int l = __ffs(ball) - 1;
      ball &= ball - 1u;
      int kk = base + l, dd = __shfl_sync(0xffffffffu, d2, l);
      float wv = wt[dd];
      sw = __fadd_rn(sw, wv);
      sx = __fadd_rn(sx, __fmul_rn(wv, prev[kk].dx));
      sy = __fadd_rn(sy, __fmul_rn(wv, prev[kk].dy));
    }
  }
  if (lane == 0)
    pri[i] = sw > 0.0f ? make_float4(__fdiv_rn(sx, sw), __fdiv_rn(sy, sw), 1.0f, 0.0f)
                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* V(o) of a point from its sum a and support C = full + cnt (weights' sum
 * sw), prior pr (pr.z != 0: there is one), offset (ox, oy): vcm_finish's
 * expressions. */
__device__ __forceinline__ float vcm_value(int a, int cw, int sw, float4 pr, int ox, int oy,
                                           const vcm_dev_params &d)
{
  float v = 4 * cw >= sw && cw > 0 ? __fdiv_rn(__int2float_rn(a), __int2float_rn(cw * LT_VCM_SIM_ONE)) : 0.0f;
  if (pr.z != 0.0f) {
    float fx = __fsub_rn((float)ox, pr.x), fy = __fsub_rn((float)oy, pr.y);
    float q = __fsub_rn(1.0f, __fmul_rn(__fadd_rn(__fmul_rn(fx, fx), __fmul_rn(fy, fy)), d.irho2));
    if (q > 0.0f) v = __fadd_rn(v, __fmul_rn(d.lam, q));
  }
  return v;
}

/* vcm_band_k's load of OPT consecutive 16-bit NCM values (1, 2 or 4: one
 * 16-, 32- or 64-bit load, aligned: ncm_stride) and its k-th value */
template <int OPT> struct band_vec_t;
template <> struct band_vec_t<1> { typedef unsigned short t; };
template <> struct band_vec_t<2> { typedef unsigned t; };
template <> struct band_vec_t<4> { typedef uint2 t; };
template <int OPT> using band_vec = typename band_vec_t<OPT>::t;
template <int OPT> __device__ __forceinline__ band_vec<OPT> band_load(const uint16_t *a)
{
  return __ldg((const band_vec<OPT> *)a);
}
template <int OPT> __device__ __forceinline__ int band_at(band_vec<OPT> v, int k);
template <> __device__ __forceinline__ int band_at<1>(unsigned short v, int) { return v; }
template <> __device__ __forceinline__ int band_at<2>(unsigned v, int k) { return (v >> 16 * k) & 0xffffu; }
template <> __device__ __forceinline__ int band_at<4>(uint2 v, int k)
{
  return ((k < 2 ? v.x : v.y) >> 16 * (k & 1)) & 0xffffu;
}

/* The points of tile number tile (tile_x x tile_y sub-windows: a run of
 * points per row of its sub-windows, at most NPT) by one thread: indices,
 * positions (0 past np), number, the box of sub-windows their radius
 * reaches; their weight sums zeroed. */
template <int NPT>
__device__ __forceinline__ void tile_points(const vcm_dev_params &d, const int *__restrict__ px,
                                            const int *__restrict__ py, const int *__restrict__ cstart, int tile_x,
                                            int tile_y, int tile, int *ids, int *txs, int *tys, int *np_s, int *box,
                                            int *sw_s, int *full_s)
{
  int ntx = (d.gx + tile_x - 1) / tile_x, R = d.radius;
  int tcx = (tile % ntx) * tile_x, tcy = (tile / ntx) * tile_y;
  int np = 0, cx1 = min(tcx + tile_x, d.gx);
  int xlo = INT_MAX, xhi = INT_MIN, ylo = INT_MAX, yhi = INT_MIN;
  for (int cy = tcy; cy < min(tcy + tile_y, d.gy); cy++)
    for (int j = cstart[cy * d.gx + tcx]; j < cstart[cy * d.gx + cx1] && np < NPT; j++) {
      txs[np] = px[j];
      tys[np] = py[j];
      ids[np++] = j;
      xlo = min(xlo, px[j]);
      xhi = max(xhi, px[j]);
      ylo = min(ylo, py[j]);
      yhi = max(yhi, py[j]);
    }
  *np_s = np;
  for (int p = 0; p < NPT; p++) {
    if (p >= np) txs[p] = tys[p] = 0; /* not used */
    sw_s[p] = full_s[p] = 0;
  }
  if (np) {
    box[0] = cell_of(xlo - R > 0 ? xlo - R : 0, d.w, d.gx);
    box[1] = cell_of(xhi + R, d.w, d.gx);
    box[2] = cell_of(ylo - R > 0 ? ylo - R : 0, d.h, d.gy);
    box[3] = cell_of(yhi + R, d.h, d.gy);
  }
}

/* The neighbours of a tile's points (tile_points): the candidates are the
 * runs of the box's rows of sub-windows (32 rows at a time) one after the
 * other, ascending j, MAP_THREADS at a time by block ballot and prefix;
 * those within the radius of a tile point go to the block's list (nb_j,
 * nb_full, nb_r; nb_w: the weight per tile point, 0 where j is beyond its
 * radius), the weights' sums to sw_s, full_s (integers: any order), then
 * every thread calls chunk(tot) with the list's tot entries; barriers
 * around it. Every thread of the block calls this. */
template <int NPT, class F>
__device__ __forceinline__ void tile_neighbours(const vcm_dev_params &d, const int *__restrict__ px,
                                                const int *__restrict__ py, const int *__restrict__ cstart,
                                                const int *__restrict__ wq, const int *box, const int *txs,
                                                const int *tys, int np, int *row_s, int *off_s, int *wcnt,
                                                int *nb_j, int *nb_full, int4 *nb_r, int (*nb_w)[NPT], int *sw_s,
                                                int *full_s, F chunk)
{
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, R = d.radius;
  for (int g0 = box[2]; g0 <= box[3]; g0 += 32) {
    if (warp == 0) {
      int cy = g0 + lane, rs = 0, len = 0;
      if (cy <= box[3]) {
        rs = cstart[cy * d.gx + box[0]];
        len = cstart[cy * d.gx + box[1] + 1] - rs;
      }
      int incl = len;
      for (int k = 1; k < 32; k <<= 1) {
        int v = __shfl_up_sync(0xffffffffu, incl, k);
        if (lane >= k) incl += v;
      }
      row_s[lane] = rs;
      off_s[lane] = incl - len;
      if (lane == 31) off_s[32] = incl;
    }
    __syncthreads();
    int ncand = off_s[32], nrow = min(32, box[3] - g0 + 1);
    for (int base = 0; base < ncand; base += MAP_THREADS) {
      int g = base + threadIdx.x, j = 0, xj = 0, yj = 0;
      bool near = false;
      if (g < ncand) { /* (a warp past the candidates skips this) */
        int r = 0;
        while (r + 1 < nrow && off_s[r + 1] <= g) r++;
        j = row_s[r] + g - off_s[r];
        xj = px[j];
        yj = py[j];
#pragma unroll
        for (int p = 0; p < NPT; p++) {
          int ex = xj - txs[p], ey = yj - tys[p];
          near = near || (p < np && ex * ex + ey * ey <= R * R);
        }
      }
      int tot, at = block_slot(near, wcnt, &tot);
      if (near) {
        put_neighbour(d, j, xj, yj, at, nb_j, nb_full, nb_r);
#pragma unroll
        for (int p = 0; p < NPT; p++) {
          int ex = xj - txs[p], ey = yj - tys[p], e2 = ex * ex + ey * ey;
          nb_w[at][p] = p < np && e2 <= R * R ? wq[e2] : 0; /* 0: not a neighbour of p */
        }
      }
      __syncthreads();
      if (threadIdx.x < np) /* the weights' sums (integers: any order) */
        for (int q = 0; q < tot; q++) {
          int wv = nb_w[q][threadIdx.x];
          sw_s[threadIdx.x] += wv;
          if (nb_full[q]) full_s[threadIdx.x] += wv;
        }
      chunk(tot);
      __syncthreads(); /* the list is rewritten by the next chunk */
    }
    __syncthreads(); /* row_s, off_s are rewritten by the next rows */
  }
}


/* Tile number tile's list (tile_lists) by the whole block: tile_points
 * and tile_neighbours once, the list to global memory, so that the tile's
 * nband band blocks do not each build it again. sm: shared scratch of
 * TL_SMEM ints, 16-byte aligned (vcm_list_k's, or ncm5_k's tail blocks'
 * dynamic shared memory). */
#define TL_SMEM (MAP_THREADS * (TILE_PTS + 4 + 2) + MAP_THREADS / 32 + 5 * TILE_PTS + 4 + 32 + 33 + 1)
template <int NPT>
__device__ __forceinline__ void tile_list_build(const vcm_dev_params &d, const int *__restrict__ px,
                                                const int *__restrict__ py, const int *__restrict__ cstart,
                                                const int *__restrict__ wq, int tile_x, int tile_y,
                                                const tile_lists &tl, int tile, int *sm)
{
  int(*nb_w)[NPT] = (int(*)[NPT])sm;
  int4 *nb_r = (int4 *)(sm + MAP_THREADS * NPT);
  int *nb_j = (int *)(nb_r + MAP_THREADS), *nb_full = nb_j + MAP_THREADS, *wcnt = nb_full + MAP_THREADS;
  int *ids = wcnt + MAP_THREADS / 32, *txs = ids + NPT, *tys = txs + NPT, *sw_s = tys + NPT, *full_s = sw_s + NPT;
  int *box = full_s + NPT, *row_s = box + 4, *off_s = row_s + 32, *np_s = off_s + 33;
  if (threadIdx.x == 0)
    tile_points<NPT>(d, px, py, cstart, tile_x, tile_y, tile, ids, txs, tys, np_s, box, sw_s, full_s);
  __syncthreads();
  int np = *np_s, n = 0; /* n: entries written so far (the same in every thread) */
  size_t t0 = (size_t)tile * tl.cap;
  if (np)
    tile_neighbours<NPT>(d, px, py, cstart, wq, box, txs, tys, np, row_s, off_s, wcnt, nb_j, nb_full, nb_r, nb_w,
                         sw_s, full_s, [&](int tot) {
                           int q = threadIdx.x;
                           if (q < tot && n + q < tl.cap) { /* (tile_list_cap: always) */
                             tl.j[t0 + n + q] = nb_j[q] | (nb_full[q] ? INT_MIN : 0);
                             tl.r[t0 + n + q] = nb_r[q];
#pragma unroll
                             for (int p = 0; p < NPT; p++) tl.w[(t0 + n + q) * NPT + p] = nb_w[q][p];
                           }
                           n += tot;
                         });
  __syncthreads();
  int *h = tl.hdr + (size_t)tile * TL_HDR;
  if (threadIdx.x == 0) {
    h[0] = np;
    h[1] = min(n, tl.cap);
  }
  if (threadIdx.x < NPT) {
    h[2 + threadIdx.x] = (int)threadIdx.x < np ? ids[threadIdx.x] : 0;
    h[2 + NPT + threadIdx.x] = sw_s[threadIdx.x];
    h[2 + 2 * NPT + threadIdx.x] = full_s[threadIdx.x];
  }
}

/* One block per tile: tile_list_build (LT_VCM_BAND_LIST=k; by default
 * ncm5_k's tail blocks build the lists) */
template <int NPT>
__global__ void __launch_bounds__(MAP_THREADS)
vcm_list_k(const int *__restrict__ px, const int *__restrict__ py, const int *__restrict__ cstart,
           const int *__restrict__ wq, vcm_dev_params d, int tile_x, int tile_y, tile_lists tl)
{
  __shared__ int4 sm[(TL_SMEM + 3) / 4];
  tile_list_build<NPT>(d, px, py, cstart, wq, tile_x, tile_y, tl, blockIdx.x, (int *)sm);
}

/* One block per (tile of tile_x x tile_y sub-windows, band of MAP_THREADS
 * x OPT offsets): each thread OPT consecutive offsets o0 .. o0 + OPT - 1 of
 * the band (2 by default; 1 or 4 by LT_VCM_BAND_OPT) for every point of
 * the tile (at most NPT; the sums in registers). The neighbours: LIST (the
 * default), the tile's list (tile_list_build), MAP_THREADS entries at a time
 * into shared memory; else (LT_VCM_BAND_LIST=0) the block builds it itself
 * (tile_points, tile_neighbours: vcm_k's list, with a weight per tile
 * point: 0 where j is beyond its radius).
 * Each neighbour's NCM values at the thread's offsets are read once, by
 * one 16-, 32- or 64-bit load (one L2 read per tile instead of one per
 * point), and added into every tile point's integer sums (a j beyond a
 * point's radius has weight 0), so each sum is the CPU's (integers: any
 * order). The values of BAND_QB neighbours are loaded before they are
 * added (their loads overlap): 4 with MINB blocks per SM (5, 48 registers,
 * with 1 offset; BAND2_MINB, BAND4_MINB with 2 and 4), 8 with 4 blocks
 * (LT_VCM_BAND_OCC=4, 1 offset). The support C(o) goes as in vcm_k
 * (integer weights; with 4 offsets its part from neighbours whose search
 * rectangle is clipped is summed in shared memory, in registers it would
 * spill). Per thread OPT offsets instead of 1 means OPT times fewer blocks,
 * so each tile's neighbour list is read OPT times less often, and one
 * shared-memory read of a neighbour's weights serves OPT offsets. At the
 * end each point's V(o) (normalised, prior) and the band's best as a key
 * (key_rank: the CPU's tie-break, a total order, so offsets and bands
 * merge in any order) go to keys[i * nband + band] for vcm_pick_k. */
template <int NPT, int MINB, int BAND_QB, int OPT, bool LIST, bool DP = false, bool IPEAK = false>
__global__ void __launch_bounds__(MAP_THREADS, MINB)
vcm_band_k(const uint16_t *__restrict__ ncm, const int *__restrict__ px, const int *__restrict__ py,
           const int *__restrict__ cstart, const int *__restrict__ wq, const float4 *__restrict__ pri,
           vcm_dev_params d, int tile_x, int tile_y, tile_lists tl, unsigned long long *__restrict__ keys)
{
  __shared__ int nb_w[MAP_THREADS][NPT];
  __shared__ int nb_j[MAP_THREADS], nb_full[MAP_THREADS], wcnt[MAP_THREADS / 32];
  __shared__ int4 nb_r[MAP_THREADS];
  __shared__ int ids[NPT], txs[NPT], tys[NPT], np_s, box[4], row_s[32], off_s[33];
  __shared__ int sw_s[NPT], full_s[NPT];
  __shared__ float4 pri_s[NPT];
  __shared__ unsigned long long wkey[MAP_THREADS / 32][NPT];
  constexpr bool CSH = OPT > 2; /* the supports' non-full parts in shared memory (registers spill) */
  __shared__ int cnt_s[CSH ? NPT * OPT : 1][MAP_THREADS];
  static_assert(!DP || (OPT == 2 && NPT == 8), "vcm_band_k: DP with 2 offsets and 8 tile points");
  /* DP: the weights of list entries 2m and 2m + 1 as bytes, word k for
   * tile points 2k (bytes 0, 1) and 2k + 1 (bytes 2, 3) */
  __shared__ uint4 nb_wp[DP ? MAP_THREADS / 2 : 1];
  int M = d.side, m2 = M * M, S2 = d.search / 2;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nband = gridDim.y;
  griddep_wait(d); /* the NCMs, the tile lists (and the priors) */
  if (LIST) { /* the list's length in box[0] */
    const int *hdr = tl.hdr + (size_t)blockIdx.x * TL_HDR;
    if (threadIdx.x < NPT) {
      int p = threadIdx.x;
      ids[p] = hdr[2 + p];
      sw_s[p] = hdr[2 + NPT + p];
      full_s[p] = hdr[2 + 2 * NPT + p];
    }
    if (threadIdx.x == 0) {
      np_s = hdr[0];
      box[0] = hdr[1];
    }
  } else if (threadIdx.x == 0)
    tile_points<NPT>(d, px, py, cstart, tile_x, tile_y, blockIdx.x, ids, txs, tys, &np_s, box, sw_s, full_s);
  __syncthreads();
  int np = np_s;
  if (np == 0) return;
  if (threadIdx.x < NPT)
    pri_s[threadIdx.x] = (int)threadIdx.x < np && d.lam > 0.0f ? pri[ids[threadIdx.x]]
                                                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  __syncthreads();
  /* this thread's OPT consecutive offsets o0 + k (they may run into the
   * next row of the map): (oxs[k], oys[k]); loads at oc, always in the
   * point's padded map (unconditional: they batch; sums of offsets past
   * the map are not used) */
  const int ms = ncm_stride(M), o0 = (blockIdx.y * MAP_THREADS + threadIdx.x) * OPT;
  const int oc = o0 < ms ? o0 : ms - OPT;
  int oxs[OPT], oys[OPT];
#pragma unroll
  for (int k = 0; k < OPT; k++) {
    oxs[k] = (o0 + k) % M - S2;
    oys[k] = (o0 + k) / M - S2;
  }
  int acc[NPT][OPT], cnt[NPT][OPT];
#pragma unroll
  for (int p = 0; p < NPT; p++)
#pragma unroll
    for (int k = 0; k < OPT; k++) {
      acc[p][k] = 0;
      cnt[p][k] = 0;
      if (CSH) cnt_s[p * OPT + k][threadIdx.x] = 0; /* this thread's own column */
    }
  /* the sums over the tot neighbours of the block's list */
  auto add = [&](int tot) {
    if constexpr (DP) { /* every thread of the block calls add: barrier */
      bool clip = false; /* an entry with a clipped search rectangle (a border tile) */
      for (int m = threadIdx.x; 2 * m < tot; m += MAP_THREADS) {
        const int *a = nb_w[2 * m], *b = nb_w[2 * m + 1 < tot ? 2 * m + 1 : 2 * m];
        bool hb = 2 * m + 1 < tot; /* past the list: weight 0 */
        unsigned v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
          v[k] = (unsigned)a[2 * k] | (hb ? (unsigned)b[2 * k] : 0u) << 8 | (unsigned)a[2 * k + 1] << 16 |
                 (hb ? (unsigned)b[2 * k + 1] : 0u) << 24;
        nb_wp[m] = make_uint4(v[0], v[1], v[2], v[3]);
        clip = clip || !nb_full[2 * m] || (hb && !nb_full[2 * m + 1]);
        nb_j[2 * m] *= ms; /* the map's offset (int: cu_alloc) */
        if (hb) nb_j[2 * m + 1] *= ms;
      }
      clip = __syncthreads_or(clip);
      const uint16_t *nb0 = ncm + oc;
      /* two neighbours a step: their values at one offset as the 16-bit
       * halves of one word, times their weights' bytes, added by one
       * __dp2a_lo / __dp2a_hi per tile point and offset (unsigned:
       * similarities <= 32767, weights <= 255, sums < 2^31: cu_alloc) */
      for (int q0 = 0; q0 < tot; q0 += 2 * BAND_QB) { /* BAND_QB pairs' loads in flight */
        band_vec<OPT> sv[2 * BAND_QB];
#pragma unroll
        for (int u = 0; u < 2 * BAND_QB; u++)
          sv[u] = band_load<OPT>(nb0 + nb_j[min(q0 + u, tot - 1)]);
#pragma unroll
        for (int u = 0; u < BAND_QB; u++) {
          int q = q0 + 2 * u;
          if (q >= tot) break;
          unsigned s0 = __byte_perm(sv[2 * u], sv[2 * u + 1], 0x5410); /* offset o0: q, q + 1 */
          unsigned s1 = __byte_perm(sv[2 * u], sv[2 * u + 1], 0x7632); /* offset o0 + 1 */
          uint4 wp = nb_wp[q >> 1];
          unsigned wv[4] = {wp.x, wp.y, wp.z, wp.w};
#pragma unroll
          for (int k = 0; k < 4; k++) {
            acc[2 * k][0] = (int)__dp2a_lo(s0, wv[k], (unsigned)acc[2 * k][0]);
            acc[2 * k][1] = (int)__dp2a_lo(s1, wv[k], (unsigned)acc[2 * k][1]);
            acc[2 * k + 1][0] = (int)__dp2a_hi(s0, wv[k], (unsigned)acc[2 * k + 1][0]);
            acc[2 * k + 1][1] = (int)__dp2a_hi(s1, wv[k], (unsigned)acc[2 * k + 1][1]);
          }
          if (clip) /* (uniform) */
#pragma unroll
            for (int e = q; e < q + 2; e++)
              if (e < tot && !nb_full[e]) {
                int4 r = nb_r[e];
#pragma unroll
                for (int k = 0; k < OPT; k++)
                  if (oxs[k] >= r.x && oxs[k] <= r.y && oys[k] >= r.z && oys[k] <= r.w)
#pragma unroll
                    for (int p = 0; p < NPT; p++) cnt[p][k] += nb_w[e][p];
              }
        }
      }
    } else {
      for (int q0 = 0; q0 < tot; q0 += BAND_QB) { /* BAND_QB neighbours' loads in flight */
        band_vec<OPT> sv[BAND_QB];
#pragma unroll
        for (int u = 0; u < BAND_QB; u++) sv[u] = band_load<OPT>(ncm + (size_t)nb_j[min(q0 + u, tot - 1)] * ms + oc);
#pragma unroll
        for (int u = 0; u < BAND_QB; u++) {
          int q = q0 + u;
          if (q >= tot) break;
          int s[OPT], w[NPT];
#pragma unroll
          for (int k = 0; k < OPT; k++) s[k] = band_at<OPT>(sv[u], k);
#pragma unroll
          for (int p = 0; p < NPT; p++) w[p] = nb_w[q][p];
#pragma unroll
          for (int p = 0; p < NPT; p++)
#pragma unroll
            for (int k = 0; k < OPT; k++) acc[p][k] += w[p] * s[k]; /* integers: exact, any order */
          if (!nb_full[q]) {
            int4 r = nb_r[q];
#pragma unroll
            for (int k = 0; k < OPT; k++)
              if (oxs[k] >= r.x && oxs[k] <= r.y && oys[k] >= r.z && oys[k] <= r.w)
#pragma unroll
                for (int p = 0; p < NPT; p++)
                  if (CSH)
                    cnt_s[p * OPT + k][threadIdx.x] += w[p];
                  else
                    cnt[p][k] += w[p];
          }
        }
      }
    }
  };
  if (LIST) /* (indices as int: ntile * cap * NPT <= INT_MAX, cu_alloc) */
    for (int base = 0; base < box[0]; base += MAP_THREADS) {
      int q = threadIdx.x, tot = min(MAP_THREADS, box[0] - base);
      if (q < tot) {
        int e = (int)blockIdx.x * tl.cap + base + q;
        int j = __ldg(tl.j + e);
        nb_j[q] = j & INT_MAX;
        nb_full[q] = j < 0;
        nb_r[q] = __ldg(tl.r + e);
#pragma unroll
        for (int p = 0; p < NPT; p++) nb_w[q][p] = __ldg(tl.w + e * NPT + p);
      }
      __syncthreads();
      add(tot);
      __syncthreads(); /* the list is rewritten by the next chunk */
    }
  else
    tile_neighbours<NPT>(d, px, py, cstart, wq, box, txs, tys, np, row_s, off_s, wcnt, nb_j, nb_full, nb_r, nb_w,
                         sw_s, full_s, add);
  unsigned rko[OPT]; /* the thread's offsets' ranks (key_rank) */
#pragma unroll
  for (int k = 0; k < OPT; k++) rko[k] = key_rank(oxs[k] * oxs[k] + oys[k] * oys[k], o0 + k);
#pragma unroll
  for (int p = 0; p < NPT; p++) {
    if (p >= np) break;
    unsigned long long key;
    if (IPEAK && pri_s[p].z == 0.0f && full_s[p] == sw_s[p] && sw_s[p] > 0) { /* (uniform) */
      /* every neighbour of p has the whole search area, so C(o) = sw_s[p]
       * at every offset and V(o) = a(o) / den with one den: it grows with
       * a(o) (int to float and the division are both monotone), so the
       * warp's largest V is that of its largest sum amax, one division;
       * an offset with a smaller sum has the same V only if its sum is
       * within ~2^-21 of amax (float's 24-bit significand), so only
       * sums >= amax - amax / 2^16 - 1 are divided (rarely any) and
       * compared; the warp's key is that V and the best rank among the
       * offsets holding it: the same key as the division at every offset */
      int am = 0;
#pragma unroll
      for (int k = 0; k < OPT; k++)
        if (o0 + k < m2) am = max(am, acc[p][k]);
      const int amax = (int)__reduce_max_sync(0xffffffffu, (unsigned)am), alo = amax - (amax >> 16) - 1;
      const float den = __int2float_rn(sw_s[p] * LT_VCM_SIM_ONE), vmax = __fdiv_rn(__int2float_rn(amax), den);
      unsigned rk = 0; /* 0: none of the thread's offsets holds vmax */
#pragma unroll
      for (int k = 0; k < OPT; k++)
        if (o0 + k < m2 && acc[p][k] >= alo &&
            (acc[p][k] == amax || __fdiv_rn(__int2float_rn(acc[p][k]), den) == vmax))
          rk = max(rk, rko[k]);
      key = (unsigned long long)__float_as_uint(vmax) << 32 | __reduce_max_sync(0xffffffffu, rk);
    } else {
      unsigned long long best = 0; /* the thread's best of its OPT offsets (key 0: none) */
#pragma unroll
      for (int k = 0; k < OPT; k++) {
        int o = o0 + k, ox = oxs[k], oy = oys[k];
        if (o >= m2) break;
        int cw = full_s[p] + (CSH ? cnt_s[p * OPT + k][threadIdx.x] : cnt[p][k]);
        float v = vcm_value(acc[p][k], cw, sw_s[p], pri_s[p], ox, oy, d);
        best = max(best, (unsigned long long)__float_as_uint(v) << 32 | rko[k]);
      }
      key = warp_key_max((unsigned)(best >> 32), (unsigned)best);
    }
    if (lane == 0) wkey[warp][p] = key;
  }
  __syncthreads();
  if (threadIdx.x < np) {
    int p = threadIdx.x;
    unsigned long long key = wkey[0][p];
    for (int k = 1; k < MAP_THREADS / 32; k++) key = max(key, wkey[k][p]);
    keys[(size_t)ids[p] * nband + blockIdx.y] = key;
  }
}
/* One warp per point i: the bands' keys merged (the CPU's tie-break), the
 * 3x3 of V around the peak recomputed with the same sums as vcm_band_k's
 * (so the same values): the candidates of up to 32 rows of sub-windows one
 * after the other, 32 at a time; the neighbours among them (ascending j)
 * to shared memory; their products w s at the 9 offsets spread over the
 * lanes (all loads in flight together); then lane t < 9 adds offset t's
 * products in neighbour order. LIST (LT_VCM_PICK=list, where the tile
 * lists exist; slower, docs/PERFORMANCE.md): the neighbours from i's tile's list
 * instead (tile_list_build: the weights' sums from its header, the
 * entries with a weight for i spread over the lanes, each lane's 9
 * products summed in registers, then the warp's sums; integers: any
 * order); where i is not among its tile's points (not expected) the walk
 * as without LIST. Sub-pixel refinement and the vector (vcm_emit). */
template <bool LIST>
__global__ void __launch_bounds__(MAP_THREADS)
vcm_pick_k(const uint16_t *__restrict__ ncm, const uint8_t *__restrict__ q0, const uint8_t *__restrict__ q1,
           const int *__restrict__ px, const int *__restrict__ py, const int *__restrict__ cstart, const int *n,
           const int *__restrict__ wq, const float4 *__restrict__ pri, vcm_dev_params d, int nband,
           const unsigned long long *__restrict__ keys, int tile_x, int tile_y, tile_lists tl,
           lt_vcm_vector *__restrict__ out)
{
  __shared__ int prod_s[MAP_THREADS / 32][32 * 9], nbw_s[MAP_THREADS / 32][32];
  __shared__ int pin_s[MAP_THREADS / 32][32 * 9], nbj_s[MAP_THREADS / 32][32], nbf_s[MAP_THREADS / 32][32];
  __shared__ int4 nbr_s[MAP_THREADS / 32][32];
  int wp = threadIdx.x / 32, lane = threadIdx.x % 32, i = blockIdx.x * (MAP_THREADS / 32) + wp;
  griddep_wait(d); /* the bands' keys */
  if (i >= *n) return;
  unsigned long long key = 0;
  for (int b = lane; b < nband; b += 32) key = max(key, keys[(size_t)i * nband + b]);
  key = warp_key_max((unsigned)(key >> 32), (unsigned)key);
  float best = __uint_as_float((unsigned)(key >> 32));
  int bi = (int)((0xffffffffu - (unsigned)key) & 0x7fffu);
  int M = d.side, S2 = d.search / 2, R = d.radius, bx = bi % M, by = bi / M;
  int x = px[i], y = py[i];
  int acc = 0, cnt = 0, sw = 0, full = 0;
  bool walk = true;
  if (LIST) {
    int ntx = (d.gx + tile_x - 1) / tile_x;
    int tile = (cell_of(y, d.h, d.gy) / tile_y) * ntx + cell_of(x, d.w, d.gx) / tile_x;
    const int *h = tl.hdr + (size_t)tile * TL_HDR;
    int np = h[0], len = h[1];
    unsigned at = __ballot_sync(0xffffffffu, lane < np && lane < TILE_PTS && h[2 + lane] == i);
    if (at) {
      int p = __ffs(at) - 1, a9[9], c9[9];
      walk = false;
      sw = h[2 + TILE_PTS + p];
      full = h[2 + 2 * TILE_PTS + p];
#pragma unroll
      for (int t = 0; t < 9; t++) a9[t] = c9[t] = 0;
      size_t t0 = (size_t)tile * tl.cap;
      for (int e = lane; e < len; e += 32) {
        int wv = tl.w[(t0 + e) * TILE_PTS + p];
        if (!wv) continue; /* not a neighbour of i */
        int jf = tl.j[t0 + e], j = jf & INT_MAX;
        int4 rc = tl.r[t0 + e];
        const uint16_t *nj = ncm + (size_t)j * ncm_stride(M);
#pragma unroll
        for (int t = 0; t < 9; t++) {
          int tx = bx + t % 3 - 1, ty = by + t / 3 - 1, ox = tx - S2, oy = ty - S2;
          if (tx >= 0 && tx < M && ty >= 0 && ty < M) {
            a9[t] += wv * (int)__ldg(nj + ty * M + tx);
            if (jf >= 0 && ox >= rc.x && ox <= rc.y && oy >= rc.z && oy <= rc.w) c9[t] += wv;
          }
        }
      }
#pragma unroll
      for (int t = 0; t < 9; t++) { /* integers: any order */
        int sa = __reduce_add_sync(0xffffffffu, a9[t]), sc = __reduce_add_sync(0xffffffffu, c9[t]);
        if (lane == t) {
          acc = sa;
          cnt = sc;
        }
      }
    }
  }
  int cx0 = cell_of(x - R > 0 ? x - R : 0, d.w, d.gx), cx1 = cell_of(x + R, d.w, d.gx);
  int cy0 = cell_of(y - R > 0 ? y - R : 0, d.h, d.gy), cy1 = cell_of(y + R, d.h, d.gy);
  for (int g0 = walk ? cy0 : cy1 + 1; g0 <= cy1; g0 += 32) {
    int cy = g0 + lane, rs = 0, len = 0;
    if (cy <= cy1) {
      rs = cstart[cy * d.gx + cx0];
      len = cstart[cy * d.gx + cx1 + 1] - rs;
    }
    int incl = len;
    for (int k = 1; k < 32; k <<= 1) {
      int v = __shfl_up_sync(0xffffffffu, incl, k);
      if (lane >= k) incl += v;
    }
    int ncand = __shfl_sync(0xffffffffu, incl, 31), nrow = min(32, cy1 - g0 + 1), off = incl - len;
    for (int base = 0; base < ncand; base += 32) {
      int g = base + lane, j = 0, d2 = 0;
      bool near = false;
      /* the row of candidate g: the last row whose run starts at or before g */
      int r = 0;
      for (int k = 1; k < nrow; k++) r = __shfl_sync(0xffffffffu, off, k) <= g ? k : r;
      int rr = __shfl_sync(0xffffffffu, rs, r), ro = __shfl_sync(0xffffffffu, off, r);
      if (g < ncand) {
        j = rr + g - ro;
        int ex = px[j] - x, ey = py[j] - y;
        d2 = ex * ex + ey * ey;
        near = d2 <= R * R;
      }
      unsigned ball = __ballot_sync(0xffffffffu, near);
      int nq = __popc(ball), wv = 0, isfull = 0;
      if (near) {
        int q = __popc(ball & ((1u << lane) - 1u)), rc[4];
        wv = wq[d2];
        search_rect(d, px[j], py[j], rc);
        isfull = rc[0] == -S2 && rc[1] == S2 && rc[2] == -S2 && rc[3] == S2;
        nbj_s[wp][q] = j;
        nbw_s[wp][q] = wv;
        nbf_s[wp][q] = isfull;
        nbr_s[wp][q] = make_int4(rc[0], rc[1], rc[2], rc[3]);
      }
      sw += __reduce_add_sync(0xffffffffu, wv); /* integers: any order */
      full += __reduce_add_sync(0xffffffffu, isfull ? wv : 0);
      __syncwarp();
      for (int e = lane; e < nq * 9; e += 32) {
        int q = e / 9, t = e - q * 9, tx = bx + t % 3 - 1, ty = by + t / 3 - 1;
        int p = 0, in = 0;
        if (tx >= 0 && tx < M && ty >= 0 && ty < M) {
          p = nbw_s[wp][q] * (int)__ldg(ncm + (size_t)nbj_s[wp][q] * ncm_stride(M) + ty * M + tx);
          int4 rc = nbr_s[wp][q];
          int ox = tx - S2, oy = ty - S2;
          if (!nbf_s[wp][q] && ox >= rc.x && ox <= rc.y && oy >= rc.z && oy <= rc.w)
            in = nbw_s[wp][q];
        }
        prod_s[wp][e] = p;
        pin_s[wp][e] = in;
      }
      __syncwarp();
      if (lane < 9)
        for (int q = 0; q < nq; q++) { /* integers: any order */
          acc += prod_s[wp][q * 9 + lane];
          cnt += pin_s[wp][q * 9 + lane];
        }
      __syncwarp(); /* the lists are rewritten by the next candidates */
    }
  }
  int tx = bx + lane % 3 - 1, ty = by + lane / 3 - 1;
  bool ok = lane < 9 && tx >= 0 && tx < M && ty >= 0 && ty < M;
  float4 pr = d.lam > 0.0f ? pri[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float v = ok ? vcm_value(acc, full + cnt, sw, pr, tx - S2, ty - S2, d) : 0.0f;
  float nb[9];
#pragma unroll
  for (int k = 0; k < 9; k++) nb[k] = __shfl_sync(0xffffffffu, v, k);
  float dx, dy;
  peak_refine(nb + 4, 3, M, bi, d.subpixel, &dx, &dy);
  float norm = pr.z != 0.0f ? __fadd_rn(1.0f, d.lam) : 1.0f;
  vcm_emit(dx, dy, best, norm, q0, q1, d, x, y, &out[i]);
}

/* ---- the backend ---- */

/* points_k for K points per sub-window (K in registers for K <= 4) and
 * the launch bound M (PTS_MINB or 1) */
template <int M>
static const void *points_kernel_m(int k)
{
  return k == 1   ? (const void *)points_k<1, M>
         : k == 2 ? (const void *)points_k<2, M>
         : k == 3 ? (const void *)points_k<3, M>
         : k == 4 ? (const void *)points_k<4, M>
                  : (const void *)points_k<0, M>;
}

static const void *points_kernel(int k, int minb)
{
  return minb == PTS_MINB ? points_kernel_m<PTS_MINB>(k) : points_kernel_m<1>(k);
}

static void cu_destroy(void *vctx)
{
  cuda_ctx *c = (cuda_ctx *)vctx;
  if (!c) return;
  if (c->s) cudaStreamSynchronize(c->s);
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 2; b++)
      for (int e = 0; e < 3; e++)
        for (int f = 0; f < 3; f++)
          if (c->graph[a][e][b][f]) cudaGraphExecDestroy(c->graph[a][e][b][f]);
  if (c->s2) cudaStreamSynchronize(c->s2);
  for (int k = 0; k < 3; k++) {
    cudaFree(c->fr[k]);
    cudaFreeHost(c->h_q[k]);
  }
  if (c->ev_up) cudaEventDestroy(c->ev_up);
  if (c->s2) cudaStreamDestroy(c->s2);
  cudaFree(c->ncm);
  cudaFree(c->wt);
  cudaFree(c->wq);
  cudaFree(c->maxbits);
  cudaFreeHost(c->h_vec);
  cudaFree(c->cellidx);
  cudaFree(c->cellcnt);
  cudaFree(c->cstart);
  cudaFree(c->px);
  cudaFree(c->py);
  cudaFree(c->n);
  cudaFree(c->nprev);
  cudaFree(c->prev);
  cudaFree(c->cur);
  cudaFree(c->keys);
  cudaFree(c->tl.hdr);
  cudaFree(c->tl.j);
  cudaFree(c->tl.w);
  cudaFree(c->tl.r);
  cudaFree(c->pri);
  cudaFreeHost(c->h_n);
  for (int k = 0; k < 4; k++)
    if (c->ev[k]) cudaEventDestroy(c->ev[k]);
  for (int k = 0; k < 3; k++)
    if (c->ev_fk[k]) cudaEventDestroy(c->ev_fk[k]);
  if (c->s3) cudaStreamDestroy(c->s3);
  if (c->s) cudaStreamDestroy(c->s);
  free(c);
}

/* The most entries of a tile's neighbour list (tile_lists): the points of
 * the box of sub-windows that the radius reaches around the tile's
 * sub-windows' pixels (vcm_list_k's box lies inside it: cell_of is
 * monotone), at most K each, over all tiles; at most maxpts. */
static int tile_list_cap(const vcm_dev_params *d, int tx, int ty)
{
  int most[2] = {0, 0}; /* sub-windows of the box across and down, the most over tiles */
  for (int a = 0; a < 2; a++) {
    int gn = a ? d->gy : d->gx, len = a ? d->h : d->w, t = a ? ty : tx;
    for (int c0 = 0; c0 < gn; c0 += t) {
      int c1 = c0 + t < gn ? c0 + t : gn; /* the tile's sub-windows c0 .. c1 - 1: pixels lo .. hi */
      int lo = (int)((long long)c0 * len / gn), hi = (int)((long long)c1 * len / gn) - 1;
      int b0 = cell_of(lo - d->radius > 0 ? lo - d->radius : 0, len, gn), b1 = cell_of(hi + d->radius, len, gn);
      if (b1 - b0 + 1 > most[a]) most[a] = b1 - b0 + 1;
    }
  }
  long long cap = (long long)most[0] * most[1] * d->k;
  return (int)(cap < d->maxpts ? cap : d->maxpts);
}

static int cu_alloc(cuda_ctx *c, int w, int h)
{
  const lt_vcm_params *p = &c->p;
  size_t npx = (size_t)w * h, m2 = (size_t)c->d.side * c->d.side, maxpts = c->d.maxpts;
  size_t ncell = (size_t)p->grid_x * p->grid_y, nwt = (size_t)p->coherence_radius * p->coherence_radius + 1;
  LT_CU(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking), "vcm stream");
  LT_CU(cudaStreamCreateWithFlags(&c->s2, cudaStreamNonBlocking), "vcm upload stream");
  LT_CU(cudaEventCreateWithFlags(&c->ev_up, cudaEventDisableTiming), "vcm upload event");
  for (int k = 0; k < 3; k++) {
    LT_CU(cudaMalloc(&c->fr[k], npx + FRAME_PAD), "vcm frame buffers");
    LT_CU(cudaMemset(c->fr[k], 0, npx + FRAME_PAD), "vcm frame buffers"); /* (the padding: defined bytes) */
    LT_CU(cudaMallocHost(&c->h_q[k], npx), "vcm pinned frame staging");
  }
  c->I0 = c->fr[0];
  c->I1 = c->fr[1];
  c->In = c->fr[2];
  size_t ms = (size_t)ncm_stride(c->d.side);
  LT_CU(cudaMalloc(&c->ncm, maxpts * ms * sizeof(uint16_t)), "vcm NCMs");
  LT_CU(cudaMemset(c->ncm, 0, maxpts * ms * sizeof(uint16_t)), "vcm NCMs"); /* the rows' padding */
  LT_CU(cudaMalloc(&c->wt, nwt * sizeof(float)), "vcm weights");
  LT_CU(cudaMalloc(&c->wq, nwt * sizeof(int)), "vcm integer weights");
  LT_CU(cudaMalloc(&c->maxbits, 7 * sizeof(unsigned)), "vcm maxima");
  LT_CU(cudaMemset(c->maxbits, 0, 7 * sizeof(unsigned)), "vcm maxima");
  LT_CU(cudaMallocHost(&c->h_vec, maxpts * sizeof(lt_vcm_vector)), "vcm pinned vectors");
  LT_CU(cudaMalloc(&c->cellidx, ncell * p->points_per_cell * sizeof(int)), "vcm cells");
  LT_CU(cudaMalloc(&c->cellcnt, ncell * sizeof(int)), "vcm cells");
  LT_CU(cudaMalloc(&c->cstart, (ncell + 1) * sizeof(int)), "vcm cells");
  LT_CU(cudaMalloc(&c->px, maxpts * sizeof(int)), "vcm points");
  LT_CU(cudaMalloc(&c->py, maxpts * sizeof(int)), "vcm points");
  LT_CU(cudaMalloc(&c->n, sizeof(int)), "vcm count");
  LT_CU(cudaMalloc(&c->nprev, sizeof(int)), "vcm count");
  LT_CU(cudaMalloc(&c->prev, maxpts * sizeof(lt_vcm_vector)), "vcm vectors");
  c->prev_base = c->prev;
  LT_CU(cudaMalloc(&c->cur, maxpts * sizeof(lt_vcm_vector)), "vcm vectors");
  LT_CU(cudaMallocHost(&c->h_n, sizeof(int)), "vcm pinned count");
  LT_CU(cudaMemset(c->nprev, 0, sizeof(int)), "vcm count");
  LT_CU(cudaMemset(c->prev, 0, maxpts * sizeof(lt_vcm_vector)), "vcm vectors");
  LT_CU(cudaMemset(c->cur, 0, maxpts * sizeof(lt_vcm_vector)), "vcm vectors");
  for (int k = 0; k < 4; k++) LT_CU(cudaEventCreate(&c->ev[k]), "vcm timing events");
  float *wt = (float *)malloc(nwt * sizeof(float));
  if (!wt) {
    lt_error("vcm: out of memory");
    return LT_ERR_NOMEM;
  }
  lt_vcm_weight_table(p, wt);
  cudaError_t e = cudaMemcpy(c->wt, wt, nwt * sizeof(float), cudaMemcpyHostToDevice);
  int wq_max = INT_MAX; /* the largest integer weight (vcm_band_k's DP: bytes) */
  if (e == cudaSuccess) {
    int32_t *q = (int32_t *)wt; /* the same bytes per entry */
    if (!lt_vcm_weight_q(p, w, h, q)) {
      free(wt);
      lt_error("vcm: out of memory");
      return LT_ERR_NOMEM;
    }
    wq_max = 0;
    for (size_t k = 0; k < nwt; k++) wq_max = q[k] > wq_max ? q[k] : wq_max;
    e = cudaMemcpy(c->wq, q, nwt * sizeof(int), cudaMemcpyHostToDevice);
  }
  free(wt);
  LT_CU(e, "vcm weight upload");
  c->kpt = m2 <= 5 * MAP_THREADS ? 5 : m2 <= 17 * MAP_THREADS ? 17 : 66;
  if (m2 > 66 * MAP_THREADS) {
    lt_error("vcm: search %d too large for the CUDA backend", p->search);
    return LT_ERR_USAGE;
  }
  /* experiments (environment; the same vectors, H100 kernel times in
   * docs/PERFORMANCE.md): LT_VCM_PER_CELL=1 vcm_k with a block per
   * sub-window (1.5x less L2 traffic, yet 128 vs 104 us: half the
   * occupancy); LT_VCM_NCM=sad ncm5_k with __sad per pixel instead of the
   * byte SIMD (62 vs 51 us); LT_VCM_NCM=bytes its window a byte per load
   * (49.5 vs 39.2 us, 2026-11-24 03:44 UTC), words4 by words at 4 blocks
   * per SM (41.5 us); LT_VCM_NCM=col5 its similarities a 16-bit store
   * per offset (41.3 vs 37.4 us with 4 a store, 30.3 vs 26.9 M
   * instructions, 2026-11-24 06:09 UTC); LT_VCM_NO_GRAPH=1 plain launches */
  const char *pc = getenv("LT_VCM_PER_CELL"), *nv = getenv("LT_VCM_NCM"), *ng = getenv("LT_VCM_NO_GRAPH");
  int dev0 = 0;
  c->per_cell = p->points_per_cell <= 2 && c->kpt <= 17 && pc && strcmp(pc, "1") == 0;
  c->ncm_simd = !(nv && strcmp(nv, "sad") == 0);
  c->ncm_words = !c->ncm_simd || (nv && strcmp(nv, "bytes") == 0) ? 0 : nv && strcmp(nv, "words4") == 0 ? 4 : NCM_MINB;
  c->ncm_col5 = c->ncm_words != NCM_MINB || (nv && strcmp(nv, "sad5") == 0) ? 0 : nv && strcmp(nv, "regs") == 0 ? 2 : 1;
  c->ncm_w4 = c->ncm_col5 == 1 && !(nv && strcmp(nv, "col5") == 0);
  c->use_graph = !(ng && *ng && strcmp(ng, "0") != 0);
  /* the kernels after maxima_k as programmatic dependents (sm_90 and up)
   * and the phase events ev[1], ev[2] on a branch beside them (an event
   * node between two kernels is a plain dependency), to close the gaps
   * between the graph's kernels: phase sum 0.0967-0.0978 ms per 640x480
   * pair with 2048 points against 0.1021-0.1104 with LT_VCM_PDL=0 and
   * 0.1008-0.1085 for main's binary (H100 2026-11-24 06:40 UTC, 4 runs
   * each, docs/PERFORMANCE.md); the events beside plain launches alone
   * 0.0975-0.0989, PDL with the events in line 0.1031-0.1102 (no gain
   * over plain launches), with the
   * early trigger (LT_VCM_PDL=early) 0.0981-0.1013. LT_VCM_PDL=0: plain
   * launches and the events in line (as before); LT_VCM_EVENTS=inline or
   * side places the events either way */
  const char *pv = getenv("LT_VCM_PDL"), *evv = getenv("LT_VCM_EVENTS");
  int major = 0;
  c->pdl = pv && strcmp(pv, "0") == 0 ? 0 : pv && strcmp(pv, "early") == 0 ? 2 : 1;
  if (c->pdl && !(cudaGetDevice(&dev0) == cudaSuccess &&
                  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev0) == cudaSuccess &&
                  major >= 9))
    c->pdl = 0;
  c->d.pdl_early = c->pdl == 2;
  c->ev_side = evv && strcmp(evv, "inline") == 0 ? 0 : evv && strcmp(evv, "side") == 0 ? 1 : c->pdl != 0;
  if (c->ev_side) {
    LT_CU(cudaStreamCreateWithFlags(&c->s3, cudaStreamNonBlocking), "vcm timing stream");
    for (int k = 0; k < 3; k++)
      LT_CU(cudaEventCreateWithFlags(&c->ev_fk[k], cudaEventDisableTiming), "vcm timing events");
  }
  /* maxima_k reads the staged I1 over the bus itself (mapped pinned
   * memory) where the device can, instead of a copy before it: points
   * phase 37 vs 44 us per 640x480 pair on the H100 (docs/PERFORMANCE.md,
   * 2026-11-24 03:11 UTC); LT_VCM_UPLOAD=copy: the copy */
  const char *up = getenv("LT_VCM_UPLOAD"), *pf = getenv("LT_VCM_PREFETCH");
  c->no_prefetch = pf && strcmp(pf, "0") == 0;
  int dev = 0, can_map = 0;
  if (!(up && strcmp(up, "copy") == 0) && cudaGetDevice(&dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev) == cudaSuccess && can_map &&
      cudaHostGetDevicePointer((void **)&c->d_q1, c->h_q[1], 0) == cudaSuccess)
    c->map_upload = 1;
  (void)cudaGetLastError(); /* a refusal above leaves the copy */
  /* the tiled accumulation (vcm_band_k + vcm_pick_k) where a point has
   * on average at least 6 neighbours (pi R^2 K per sub-window area), else
   * vcm_k: on the H100 (docs/PERFORMANCE.md, 2026-11-24 01:22 UTC) the
   * tiled one took 102 vs 106 us at 640x480 with 2048 points (~8
   * neighbours) and 0.66 vs 0.88 ms with 8192 (~33), but 0.077 vs 0.068 ms
   * and 0.33 vs 0.29 ms at 1920x1080 (~1.2 and ~5: a tile's neighbours are
   * then mostly other points'). Its tile of sub-windows: 2x2 for K <= 2,
   * 2x1 for K <= 4, 1x1 for K <= 8 (at most TILE_PTS points); K > 8: vcm_k.
   * LT_VCM_TILE=0 (vcm_k) or WxH (the tiled one with that tile, W H K <=
   * TILE_PTS) chooses for A/B runs. */
  int K = p->points_per_cell, tx = K <= 2 ? 2 : K <= 4 ? 2 : K <= 8 ? 1 : 0, ty = K <= 2 ? 2 : K <= 8 ? 1 : 0;
  double nbar = 3.14159265358979 * p->coherence_radius * p->coherence_radius * K * ((double)ncell / ((double)w * h));
  if (nbar < 6.0) tx = ty = 0;
  const char *tv = getenv("LT_VCM_TILE");
  if (tv && *tv) {
    int a = 0, b = 0;
    if (strcmp(tv, "0") == 0)
      tx = ty = 0;
    else if (sscanf(tv, "%dx%d", &a, &b) == 2 && a >= 1 && b >= 1 && a <= TILE_PTS && b <= TILE_PTS &&
             a * b * K <= TILE_PTS) {
      tx = a;
      ty = b;
    } else
      lt_info("vcm: LT_VCM_TILE=%s ignored (0, or WxH with W H K <= %d)", tv, TILE_PTS);
  }
  c->tile_x = tx;
  /* vcm_band_k's offsets per thread: 2 (with the tile lists built once:
   * 48.4 us at 640x480 with 2048 points, H100 2026-11-24 04:02 UTC),
   * LT_VCM_BAND_OPT=4 (55.5 us; 71.3 with each band block building its
   * list) or 1 (86.9 us at 03:44 UTC). The tile lists (tile_lists): by
   * ncm5_k's tail blocks (NCM 42.4 instead of 40.0 us), LT_VCM_BAND_LIST=k
   * by vcm_list_k (9.0 us), 0 by each band block (docs/PERFORMANCE.md) */
  const char *po = getenv("LT_VCM_PTS_OCC");
  c->pts_minb = po && strcmp(po, "0") == 0 ? 1 : PTS_MINB;
  const char *bo = getenv("LT_VCM_BAND_OCC"), *bp = getenv("LT_VCM_BAND_OPT");
  c->band_occ = bo && strcmp(bo, "4") == 0 ? 4 : 5;
  c->band_opt = bp && strcmp(bp, "1") == 0 ? 1 : bp && strcmp(bp, "4") == 0 ? 4 : 2;
  if (c->band_occ == 4) c->band_opt = 1; /* vcm5's experiment: one offset per thread */
  /* with 2 offsets, two neighbours a step by __dp2a (the weights as bytes:
   * lt_vcm_weight_q's are at most LT_VCM_W_ONE = 255; the maps' offsets as
   * int): 41.2 vs 48.3 us at 640x480 with 2048 points (H100, 2026-11-24
   * 05:53 UTC, docs/PERFORMANCE.md); LT_VCM_BAND_DP=0: an integer
   * multiply-add per neighbour, point and offset, as before 2026-11-24
   * 05:30 UTC; q4: 4 pairs' loads in flight (40.4 us at 05:53 UTC; with
   * the integer peak 42.8 vs 40.7 us at 06:09 UTC, so not the default) */
  const char *bd = getenv("LT_VCM_BAND_DP");
  c->band_dp = c->band_opt == 2 && wq_max >= 0 && wq_max <= 255 && maxpts * (size_t)ncm_stride(c->d.side) <= INT_MAX &&
               !(bd && strcmp(bd, "0") == 0);
  if (c->band_dp && bd && strcmp(bd, "q4") == 0) c->band_dp = 4;
  /* with DP, a point whose neighbours all have the whole search area (no
   * prior) finds its band's best from the integer sums, dividing only its
   * warp's largest sum and those within 2^-16 of it, instead of every
   * offset: 25.9 vs 26.9 M instructions, yet no faster (40.7-40.9 vs 40.5
   * us, within the runs' spread; H100 2026-11-24 06:09 UTC,
   * docs/PERFORMANCE.md); LT_VCM_BAND_PEAK=div: a division per offset */
  const char *bk = getenv("LT_VCM_BAND_PEAK");
  c->band_ipeak = c->band_dp && !(bk && strcmp(bk, "div") == 0);
  c->tile_y = ty;
  c->nband = (int)((m2 + MAP_THREADS * c->band_opt - 1) / (MAP_THREADS * c->band_opt));
  const char *bl = getenv("LT_VCM_BAND_LIST");
  c->band_list = bl && strcmp(bl, "0") == 0 ? 0 : (bl && strcmp(bl, "k") == 0) || p->patch != 5 ? 1 : 2;
  if (c->tile_x) {
    LT_CU(cudaMalloc(&c->keys, maxpts * c->nband * sizeof(unsigned long long)), "vcm band maxima");
    size_t ntile = (size_t)((p->grid_x + tx - 1) / tx) * ((p->grid_y + ty - 1) / ty);
    c->ntile = (int)ntile;
    c->tl.cap = tile_list_cap(&c->d, tx, ty);
    if (ntile * c->tl.cap * TILE_PTS > INT_MAX) c->band_list = 0; /* (vcm_band_k's int indices) */
    if (c->band_list) {
      LT_CU(cudaMalloc(&c->tl.hdr, ntile * TL_HDR * sizeof(int)), "vcm tile lists");
      LT_CU(cudaMalloc(&c->tl.j, ntile * c->tl.cap * sizeof(int)), "vcm tile lists");
      LT_CU(cudaMalloc(&c->tl.w, ntile * c->tl.cap * TILE_PTS * sizeof(int)), "vcm tile lists");
      LT_CU(cudaMalloc(&c->tl.r, ntile * c->tl.cap * sizeof(int4)), "vcm tile lists");
    }
    if (p->temporal_weight > 0.0f) LT_CU(cudaMalloc(&c->pri, maxpts * sizeof(float4)), "vcm priors");
  }
  c->vcm_smem = (1 + (c->per_cell ? 2 : 1)) * m2 * sizeof(float); /* the map, then each point's support */
  c->ncm_smem = p->patch == 5 ? ncm5_smem(c->d.side) : (size_t)(p->search + p->patch) * (p->search + p->patch);
  if (!c->tile_x) c->band_list = 0;
  /* vcm_pick_k walks each point's candidate sub-windows (8.8 us at
   * 640x480 with 2048 points, H100 2026-11-24 04:20 UTC); LT_VCM_PICK=list
   * reads the point's tile list where the lists exist (9.4 us: a lane's
   * share of the list is mostly entries of the tile's other points) */
  const char *pk = getenv("LT_VCM_PICK");
  c->pick_list = c->band_list && pk && strcmp(pk, "list") == 0;
  if (c->band_list == 2 && c->ncm_smem < TL_SMEM * sizeof(int)) c->ncm_smem = TL_SMEM * sizeof(int);
  /* a block per sub-window (both its points) where K <= 2 and the sums fit in registers */
  const void *kv = c->kpt == 5    ? (c->per_cell ? (const void *)vcm_k<5, 2> : (const void *)vcm_k<5, 1>)
                   : c->kpt == 17 ? (c->per_cell ? (const void *)vcm_k<17, 2> : (const void *)vcm_k<17, 1>)
                                  : (const void *)vcm_k<66, 1>;
  const void *kn = p->patch == 5 ? (c->ncm_words == NCM_MINB && c->ncm_col5 == 2 ? (const void *)ncm5_k<true, true, NCM_MINB, 2>
                                    : c->ncm_words == NCM_MINB && c->ncm_w4 ? (const void *)ncm5_k<true, true, NCM_MINB, 1, true>
                                    : c->ncm_words == NCM_MINB && c->ncm_col5 ? (const void *)ncm5_k<true, true, NCM_MINB, 1>
                                    : c->ncm_words == NCM_MINB ? (const void *)ncm5_k<true, true, NCM_MINB>
                                    : c->ncm_words          ? (const void *)ncm5_k<true, true, 4>
                                    : c->ncm_simd           ? (const void *)ncm5_k<true, false, 0>
                                                            : (const void *)ncm5_k<false, false, 0>)
                   : c->kpt == 5 ? (const void *)ncm_k<5>
                   : c->kpt == 17 ? (const void *)ncm_k<17> : (const void *)ncm_k<66>;
  if (c->vcm_smem > 48 * 1024)
    LT_CU(cudaFuncSetAttribute(kv, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)c->vcm_smem),
          "vcm shared memory for this search size");
  if (c->ncm_smem > 48 * 1024)
    LT_CU(cudaFuncSetAttribute(kn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)c->ncm_smem),
          "vcm shared memory for this search size");
  /* load the kernels now (lazy module loading would put it in the first pair) */
  const bool L = c->band_list;
  const void *kb = c->band_occ == 4  ? (L ? (const void *)vcm_band_k<TILE_PTS, 4, 8, 1, true>
                                          : (const void *)vcm_band_k<TILE_PTS, 4, 8, 1, false>)
                   : c->band_opt == 1 ? (L ? (const void *)vcm_band_k<TILE_PTS, 5, 4, 1, true>
                                          : (const void *)vcm_band_k<TILE_PTS, 5, 4, 1, false>)
                   : c->band_opt == 2 && c->band_dp == 4 && c->band_ipeak
                       ? (L ? (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, true, true, true>
                            : (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, false, true, true>)
                   : c->band_opt == 2 && c->band_dp == 4
                       ? (L ? (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, true, true>
                            : (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, false, true>)
                   : c->band_opt == 2 && c->band_dp && c->band_ipeak
                       ? (L ? (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, BANDDP_QB, 2, true, true, true>
                            : (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, BANDDP_QB, 2, false, true, true>)
                   : c->band_opt == 2 && c->band_dp
                       ? (L ? (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, BANDDP_QB, 2, true, true>
                            : (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, BANDDP_QB, 2, false, true>)
                   : c->band_opt == 2 ? (L ? (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, true>
                                          : (const void *)vcm_band_k<TILE_PTS, BAND2_MINB, 4, 2, false>)
                                      : (L ? (const void *)vcm_band_k<TILE_PTS, BAND4_MINB, 4, 4, true>
                                          : (const void *)vcm_band_k<TILE_PTS, BAND4_MINB, 4, 4, false>);
  const void *all[8] = {kv, kn, c->map_upload ? (const void *)maxima_k<true> : (const void *)maxima_k<false>,
                        points_kernel(p->points_per_cell, c->pts_minb), c->pick_list ? (const void *)vcm_pick_k<true> : (const void *)vcm_pick_k<false>, (const void *)prior_k, kb,
                        (const void *)vcm_list_k<TILE_PTS>};
  for (int k = 0; k < (c->tile_x ? 8 : 4); k++) {
    cudaFuncAttributes fa;
    LT_CU(cudaFuncGetAttributes(&fa, all[k]), "vcm kernel load");
  }
  return 0;
}

static int cu_create(void **out, const lt_vcm_params *p, int w, int h)
{
  *out = NULL;
  int e = lt_vcm_params_check(p, w, h);
  if (e) return e;
  cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
  if (!c) {
    lt_error("vcm: out of memory");
    return LT_ERR_NOMEM;
  }
  c->p = *p;
  vcm_dev_params &d = c->d;
  d.w = w;
  d.h = h;
  d.gx = p->grid_x;
  d.gy = p->grid_y;
  d.k = p->points_per_cell;
  d.patch = p->patch;
  d.search = p->search;
  d.side = lt_vcm_map_side(p);
  d.radius = p->coherence_radius;
  d.margin = p->patch / 2 > 1 ? p->patch / 2 : 1;
  d.maxpts = lt_vcm_max_points(p);
  d.similarity = p->similarity;
  d.subpixel = p->subpixel;
  d.min_strength = p->min_strength;
  d.min_contrast = p->min_contrast;
  d.gmin = 8.0f * p->min_contrast;
  d.tau = (float)(p->patch * p->patch) * p->sim_h;
  d.lam = p->temporal_weight;
  d.irho2 = 1.0f / (p->temporal_radius * p->temporal_radius);
  if ((e = cu_alloc(c, w, h))) {
    cu_destroy(c);
    return e;
  }
  *out = c;
  return 0;
}

/* Frame t is the last pair's I1, already on the device (vcm.h): the
 * buffers swap. 0, or the error of a first pair without frame t. */
static int cu_keep_last(cuda_ctx *c)
{
  if (!c->have_last) {
    lt_error("vcm: internal: the first pair needs its frame t (I0 NULL)");
    return LT_ERR_INTERNAL;
  }
  uint8_t *t = c->I0;
  c->I0 = c->I1;
  c->I1 = t;
  return 0;
}

static int cu_launch(cuda_ctx *c, int up0, int ondev);
static int cu_collect(cuda_ctx *c, lt_vcm_vector *out, int cap, int *nout);

/* The frames go up as bytes from pinned staging (a quarter of the float
 * frame), asynchronously; the staging is free again since the last pair
 * ended synchronised. pair rounds floats into it (the CPU backend's
 * lt_vcm_round8), pair8 copies 8-bit video's bytes (no rounding: the
 * same values), or finds I1 prefetched (cu_prefetch8). */
static int cu_pair(void *vctx, const float *I0, const float *I1, lt_vcm_vector *out, int cap, int *nout)
{
  cuda_ctx *c = (cuda_ctx *)vctx;
  size_t bytes = (size_t)c->d.w * c->d.h;
  int err, up0 = 0;
  *nout = 0;
  if (!I0 || (I0 == c->last_I1 && I0 != I1)) { /* the last pair's I1 is on the device (vcm.h) */
    if ((err = cu_keep_last(c))) return err;
  } else {
    lt_vcm_round8(I0, bytes, NULL, c->h_q[0]);
    up0 = 1;
  }
  c->last_I1 = NULL; /* until this upload has been made */
  c->have_last = 0;
  c->pf_have = NULL; /* a prefetched frame is not used by pair (floats) */
  lt_vcm_round8(I1, bytes, NULL, c->h_q[1]);
  if ((err = cu_launch(c, up0, 0)) || (err = cu_collect(c, out, cap, nout))) return err;
  c->last_I1 = I1;
  c->have_last = 1;
  return 0;
}

/* pair8's first half (start8): the frames staged or found prefetched, the
 * pair's work queued; no wait. */
static int cu_start8(void *vctx, const uint8_t *Q0, const uint8_t *Q1)
{
  cuda_ctx *c = (cuda_ctx *)vctx;
  size_t bytes = (size_t)c->d.w * c->d.h;
  int err, up0 = 0;
  if (c->inflight) {
    lt_error("vcm: internal: start8 while a pair is in flight");
    return LT_ERR_INTERNAL;
  }
  if (!Q0) {
    if ((err = cu_keep_last(c))) return err;
  } else {
    memcpy(c->h_q[0], Q0, bytes);
    up0 = 1;
  }
  c->last_I1 = NULL; /* no float buffer holds it */
  c->have_last = 0;  /* until this upload has been made */
  /* the frame cu_prefetch8 sent during the last pair, after the last pair's I1 (with its maxima, 2,
   * when that pair's I1 had come the same way) */
  int ondev = !Q0 && c->pf_have && c->pf_have == Q1 ? (c->pf_max ? 2 : 1) : 0;
  c->pf_have = NULL;
  if (ondev) { /* In holds it (once ev_up has passed): it becomes I1, the old I1 the spare */
    uint8_t *t = c->I1;
    c->I1 = c->In;
    c->In = t;
  } else
    memcpy(c->h_q[1], Q1, bytes);
  if ((err = cu_launch(c, up0, ondev))) return err;
  c->have_last = 1; /* I1 holds Q1 for the next pair (stream order) */
  c->inflight = 1;
  return 0;
}

/* The second half (finish): waits for the pair started by start8, its
 * vectors as pair8's. */
static int cu_finish(void *vctx, lt_vcm_vector *out, int cap, int *nout)
{
  cuda_ctx *c = (cuda_ctx *)vctx;
  *nout = 0;
  if (!c->inflight) {
    lt_error("vcm: internal: finish without start8");
    return LT_ERR_INTERNAL;
  }
  c->inflight = 0;
  return cu_collect(c, out, cap, nout);
}

static int cu_pair8(void *vctx, const uint8_t *Q0, const uint8_t *Q1, lt_vcm_vector *out, int cap, int *nout)
{
  int err = cu_start8(vctx, Q0, Q1);
  *nout = 0;
  return err ? err : cu_finish(vctx, out, cap, nout);
}

/* The next pair8's Q1, when the caller knows it (the vcm mode: the next
 * decoded frame): it is staged and sent to the spare frame buffer on the
 * second stream during the next pair's device work, so that pair8 then
 * finds it on the device if Q1 is this pointer (the frame must stay
 * unchanged until then). */
static int cu_prefetch8(void *vctx, const uint8_t *next)
{
  cuda_ctx *c = (cuda_ctx *)vctx;
  if (!c->no_prefetch) c->pf_req = next;
  return 0;
}

/* The device work of a pair on I0 (on the device) and I1 (in the staging),
 * queued on the stream (plain launches, or captured into a graph): the
 * phase events ev[0..3] (external records, so that a graph records them
 * too), I1's upload (a copy, or maxima_k's reads of the mapped staging),
 * the kernels, the count's copies and the vectors' download into the
 * pinned h_vec. */
/* Which of fr[] the frame buffer f is. */
static int frame_slot(const cuda_ctx *c, const uint8_t *f)
{
  return f == c->fr[0] ? 0 : f == c->fr[1] ? 1 : 2;
}

/* kernel<<<grid, block, smem, s>>>(args), as a programmatic dependent of
 * the kernel before it in s where pdl (cuda_ctx::pdl; the kernel calls
 * griddep_wait before its first global memory access) */
template <typename... P, typename... A>
static cudaError_t launch_k(int pdl, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                            A... args)
{
  cudaLaunchAttribute at;
  at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = &at;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

/* With ev_side, the phase event ev (ev[1] or ev[2]) on the branch s3,
 * forked from s by fork: it follows the kernels before it in s, and the
 * next kernel in s follows the last one directly (a programmatic edge
 * where pdl; with an event node between them PDL measured no gain); else
 * in s. The phases then end where each phase's last kernel ends, and the
 * next kernel may already have started (PDL). */
static int phase_event(cuda_ctx *c, cudaEvent_t ev, cudaEvent_t fork, unsigned evf)
{
  if (!c->ev_side) {
    LT_CU(cudaEventRecordWithFlags(ev, c->s, evf), "vcm timing");
    return 0;
  }
  LT_CU(cudaEventRecord(fork, c->s), "vcm timing fork");
  LT_CU(cudaStreamWaitEvent(c->s3, fork, 0), "vcm timing fork");
  LT_CU(cudaEventRecordWithFlags(ev, c->s3, evf), "vcm timing");
  return 0;
}

static int launch_pair(cuda_ctx *c, int capturing, int ondev)
{
  /* external records in a capture (graph nodes that record); outside one
   * that flag is an error (cudaErrorIllegalState), plain records */
  unsigned evf = capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  const vcm_dev_params &d = c->d;
  size_t npx = (size_t)d.w * d.h;
  int ncell = d.gx * d.gy, mblocks = (int)((npx + 4 * MAX_THREADS - 1) / (4 * MAX_THREADS));
  unsigned *mx = c->maxbits + 2 * frame_slot(c, c->I1);
  LT_CU(cudaEventRecordWithFlags(c->ev[0], c->s, evf), "vcm timing");
  if (ondev != 2) /* (zero already: points_k's last block reset them) */
    LT_CU(cudaMemsetAsync(mx, 0, 2 * sizeof(unsigned), c->s), "vcm maxima");
  if (ondev == 1) /* prefetched (cu_launch waits for its upload before the pair) */
    maxima_k<false><<<mblocks, MAX_THREADS, 0, c->s>>>(c->I0, c->I1, NULL, d, mx);
  else if (ondev == 2)
    ; /* prefetched with its maxima (cu_launch) */
  else if (c->map_upload)
    maxima_k<true><<<mblocks, MAX_THREADS, 0, c->s>>>(c->I0, c->d_q1, c->I1, d, mx);
  else {
    LT_CU(cudaMemcpyAsync(c->I1, c->h_q[1], npx, cudaMemcpyHostToDevice, c->s), "vcm frame upload");
    maxima_k<false><<<mblocks, MAX_THREADS, 0, c->s>>>(c->I0, c->I1, NULL, d, mx);
  }
  int pdl_pts = c->pdl && ondev != 2, pe; /* (after maxima_k; else after the timing event) */
#define LT_VCM_PTS(KM, MINB)                                                                                 \
  LT_CU(launch_k(pdl_pts, points_k<KM, MINB>, ncell, PTS_THREADS, 0, c->s, c->I0, c->I1, d, mx, c->maxbits + 6, \
                 c->cellidx, c->cellcnt, c->px, c->py, c->cstart, c->n),                                      \
        "vcm points")
#define LT_VCM_PTS_K(MINB)                                                                                   \
  switch (d.k) {                                                                                             \
  case 1: LT_VCM_PTS(1, MINB); break;                                                                        \
  case 2: LT_VCM_PTS(2, MINB); break;                                                                        \
  case 3: LT_VCM_PTS(3, MINB); break;                                                                        \
  case 4: LT_VCM_PTS(4, MINB); break;                                                                        \
  default: LT_VCM_PTS(0, MINB);                                                                              \
  }
  if (c->pts_minb == PTS_MINB)
    LT_VCM_PTS_K(PTS_MINB)
  else
    LT_VCM_PTS_K(1)
#undef LT_VCM_PTS_K
#undef LT_VCM_PTS
  if ((pe = phase_event(c, c->ev[1], c->ev_fk[0], evf))) return pe;
  int nblocks = d.maxpts + (c->band_list == 2 ? c->ntile : 0); /* ncm5_k's tail: the tile lists */
#define LT_VCM_NCM5(SIMD, WORDS, MINB, ...)                                                                 \
    LT_CU(launch_k(c->pdl, ncm5_k<SIMD, WORDS, MINB, ##__VA_ARGS__>, nblocks, MAP_THREADS, c->ncm_smem, c->s, \
                   c->I0, c->I1, c->px, c->py, c->n, d, c->ncm, c->cstart, c->wq, c->tile_x, c->tile_y, c->tl), \
          "vcm NCM")
  if (d.patch == 5 && c->ncm_words == NCM_MINB && c->ncm_col5 == 2)
    LT_VCM_NCM5(true, true, NCM_MINB, 2);
  else if (d.patch == 5 && c->ncm_words == NCM_MINB && c->ncm_w4)
    LT_VCM_NCM5(true, true, NCM_MINB, 1, true);
  else if (d.patch == 5 && c->ncm_words == NCM_MINB && c->ncm_col5)
    LT_VCM_NCM5(true, true, NCM_MINB, 1);
  else if (d.patch == 5 && c->ncm_words == NCM_MINB)
    LT_VCM_NCM5(true, true, NCM_MINB);
  else if (d.patch == 5 && c->ncm_words)
    LT_VCM_NCM5(true, true, 4);
  else if (d.patch == 5 && c->ncm_simd)
    LT_VCM_NCM5(true, false, 0);
  else if (d.patch == 5)
    LT_VCM_NCM5(false, false, 0);
#undef LT_VCM_NCM5
  else if (c->kpt == 5)
    ncm_k<5><<<d.maxpts, MAP_THREADS, c->ncm_smem, c->s>>>(c->I0, c->I1, c->px, c->py, c->n, d, c->ncm);
  else if (c->kpt == 17)
    ncm_k<17><<<d.maxpts, MAP_THREADS, c->ncm_smem, c->s>>>(c->I0, c->I1, c->px, c->py, c->n, d, c->ncm);
  else
    ncm_k<66><<<d.maxpts, MAP_THREADS, c->ncm_smem, c->s>>>(c->I0, c->I1, c->px, c->py, c->n, d, c->ncm);
  if ((pe = phase_event(c, c->ev[2], c->ev_fk[1], evf))) return pe;
  if (c->tile_x) {
    int ntile = ((d.gx + c->tile_x - 1) / c->tile_x) * ((d.gy + c->tile_y - 1) / c->tile_y);
    int pblocks = (d.maxpts + MAP_THREADS / 32 - 1) / (MAP_THREADS / 32); /* a warp per point */
    if (d.lam > 0.0f)
      prior_k<<<pblocks, MAP_THREADS, 0, c->s>>>(c->px, c->py, c->n, c->prev, c->nprev, c->wt, d, c->pri);
    dim3 bg(ntile, c->nband);
    if (c->band_list == 1)
      vcm_list_k<TILE_PTS><<<ntile, MAP_THREADS, 0, c->s>>>(c->px, c->py, c->cstart, c->wq, d, c->tile_x, c->tile_y,
                                                            c->tl);
#define LT_VCM_BAND(MINB, QB, OPT, ...)                                                                         \
    if (c->band_list)                                                                                           \
      LT_CU(launch_k(c->pdl, vcm_band_k<TILE_PTS, MINB, QB, OPT, true, ##__VA_ARGS__>, bg, MAP_THREADS, 0, c->s,  \
                     c->ncm, c->px, c->py, c->cstart, c->wq, (const float4 *)c->pri, d, c->tile_x, c->tile_y,   \
                     c->tl, c->keys),                                                                           \
            "vcm accumulation");                                                                                \
    else                                                                                                        \
      LT_CU(launch_k(c->pdl, vcm_band_k<TILE_PTS, MINB, QB, OPT, false, ##__VA_ARGS__>, bg, MAP_THREADS, 0, c->s, \
                     c->ncm, c->px, c->py, c->cstart, c->wq, (const float4 *)c->pri, d, c->tile_x, c->tile_y,   \
                     c->tl, c->keys),                                                                           \
            "vcm accumulation")
    if (c->band_opt == 2 && c->band_dp == 4 && c->band_ipeak)
      LT_VCM_BAND(BAND2_MINB, 4, 2, true, true);
    else if (c->band_opt == 2 && c->band_dp == 4)
      LT_VCM_BAND(BAND2_MINB, 4, 2, true);
    else if (c->band_opt == 2 && c->band_dp && c->band_ipeak)
      LT_VCM_BAND(BAND2_MINB, BANDDP_QB, 2, true, true);
    else if (c->band_opt == 2 && c->band_dp)
      LT_VCM_BAND(BAND2_MINB, BANDDP_QB, 2, true);
    else if (c->band_occ == 4)
      LT_VCM_BAND(4, 8, 1);
    else if (c->band_opt == 1)
      LT_VCM_BAND(5, 4, 1);
    else if (c->band_opt == 2)
      LT_VCM_BAND(BAND2_MINB, 4, 2);
    else
      LT_VCM_BAND(BAND4_MINB, 4, 4);
#undef LT_VCM_BAND
    LT_CU(launch_k(c->pdl, c->pick_list ? vcm_pick_k<true> : vcm_pick_k<false>, pblocks, MAP_THREADS, 0, c->s,
                   (const uint16_t *)c->ncm, (const uint8_t *)c->I0, (const uint8_t *)c->I1, (const int *)c->px,
                   (const int *)c->py, (const int *)c->cstart, (const int *)c->n, (const int *)c->wq,
                   (const float4 *)c->pri, d, c->nband, (const unsigned long long *)c->keys, c->tile_x, c->tile_y,
                   c->tl, c->cur),
          "vcm accumulation");
  } else {
#define LT_VCM_K(K, NP, blocks)                                                                       \
    vcm_k<K, NP><<<blocks, MAP_THREADS, c->vcm_smem, c->s>>>(c->ncm, c->I0, c->I1, c->px, c->py, c->cstart, \
                                                            c->n, c->wt, c->wq, c->prev, c->nprev, d, c->cur)
    if (c->kpt == 5 && c->per_cell)
      LT_VCM_K(5, 2, ncell);
    else if (c->kpt == 5)
      LT_VCM_K(5, 1, d.maxpts);
    else if (c->kpt == 17 && c->per_cell)
      LT_VCM_K(17, 2, ncell);
    else if (c->kpt == 17)
      LT_VCM_K(17, 1, d.maxpts);
    else
      LT_VCM_K(66, 1, d.maxpts);
#undef LT_VCM_K
  }
  LT_CU(cudaEventRecordWithFlags(c->ev[3], c->s, evf), "vcm timing");
  if (c->ev_side) { /* the branch joins s again (a capture must end with it joined) */
    LT_CU(cudaEventRecord(c->ev_fk[2], c->s3), "vcm timing join");
    LT_CU(cudaStreamWaitEvent(c->s, c->ev_fk[2], 0), "vcm timing join");
  }
  LT_CU(cudaGetLastError(), "vcm kernels");
  LT_CU(cudaMemcpyAsync(c->h_n, c->n, sizeof(int), cudaMemcpyDeviceToHost, c->s), "vcm count download");
  LT_CU(cudaMemcpyAsync(c->nprev, c->n, sizeof(int), cudaMemcpyDeviceToDevice, c->s), "vcm count");
  /* all slots (n is not known here): at most maxpts, past n unspecified */
  LT_CU(cudaMemcpyAsync(c->h_vec, c->cur, (size_t)d.maxpts * sizeof *c->h_vec, cudaMemcpyDeviceToHost, c->s),
        "vcm vector download");
  return 0;
}

/* launch_pair captured into a graph for the current frame and vector
 * buffers (which rotate from pair to pair: each combination captured at
 * its first use) and ondev; 1 when capturing is not possible (then plain
 * launches from then on), after one note. */
static int pair_graph(cuda_ctx *c, int ondev, cudaGraphExec_t *out)
{
  int g0 = frame_slot(c, c->I0), g1 = frame_slot(c, c->I1);
  cudaGraphExec_t *slot = &c->graph[g0][g1][c->prev != c->prev_base][ondev];
  if (*slot) {
    *out = *slot;
    return 0;
  }
  cudaGraph_t gr = NULL;
  cudaError_t ce = cudaStreamBeginCapture(c->s, cudaStreamCaptureModeThreadLocal);
  int e = ce == cudaSuccess ? launch_pair(c, 1, ondev) : 1;
  if (ce == cudaSuccess) ce = cudaStreamEndCapture(c->s, &gr);
  if (!e && ce == cudaSuccess) ce = cudaGraphInstantiate(slot, gr, 0);
  if (gr) cudaGraphDestroy(gr);
  if (e || ce != cudaSuccess) {
    (void)cudaGetLastError();
    *slot = NULL;
    lt_info("vcm: no CUDA Graph for the pair (%s); plain launches", cudaGetErrorString(ce));
    return 1;
  }
  *out = *slot;
  return 0;
}

/* Uploads I0 when up0 (a first pair: before the timed phases), waits for
 * the prefetch's upload when ondev (I1 came that way), then the pair's
 * device work (one graph launch: I1's upload unless ondev, kernels, the
 * vectors' download); while it runs, the frame of cu_prefetch8 (if any) is
 * staged and sent to the spare buffer In on the second stream; cu_collect
 * then synchronises and copies the pair's n vectors from the pinned h_vec
 * to out.
 * The points phase (ev[0] .. ev[1]) is GPU time: I1's upload (none when
 * prefetched) and the two point kernels. */
static int cu_launch(cuda_ctx *c, int up0, int ondev)
{
  const vcm_dev_params &d = c->d;
  size_t bytes = (size_t)d.w * d.h;
  if (up0) LT_CU(cudaMemcpyAsync(c->I0, c->h_q[0], bytes, cudaMemcpyHostToDevice, c->s), "vcm frame upload");
  if (ondev) LT_CU(cudaStreamWaitEvent(c->s, c->ev_up, 0), "vcm prefetched frame");
  cudaGraphExec_t g = NULL;
  if (c->use_graph && pair_graph(c, ondev, &g)) c->use_graph = 0;
  if (c->use_graph)
    LT_CU(cudaGraphLaunch(g, c->s), "vcm pair graph");
  else {
    int e = launch_pair(c, 0, ondev);
    if (e) return e;
  }
  if (c->pf_req) { /* the next frame travels during this pair's work (In is no frame of it) */
    if (c->pf_pending) LT_CU(cudaEventSynchronize(c->ev_up), "vcm prefetch staging"); /* h_q[2] read */
    memcpy(c->h_q[2], c->pf_req, bytes);
    LT_CU(cudaMemcpyAsync(c->In, c->h_q[2], bytes, cudaMemcpyHostToDevice, c->s2), "vcm frame prefetch");
    /* and, where this pair's I1 came the same way (written on s2 before,
     * not by this pair's graph), the maxima of the pair (I1, In) that the
     * next pair8 is when it gets that frame */
    c->pf_max = ondev != 0;
    if (c->pf_max) {
      unsigned *mx = c->maxbits + 2 * frame_slot(c, c->In);
      int mblocks = (int)((bytes + 4 * MAX_THREADS - 1) / (4 * MAX_THREADS));
      LT_CU(cudaMemsetAsync(mx, 0, 2 * sizeof(unsigned), c->s2), "vcm maxima");
      maxima_k<false><<<mblocks, MAX_THREADS, 0, c->s2>>>(c->I1, c->In, NULL, d, mx);
    }
    LT_CU(cudaEventRecord(c->ev_up, c->s2), "vcm frame prefetch");
    c->pf_pending = 1;
    c->pf_have = c->pf_req;
    c->pf_req = NULL;
  }
  return 0;
}

/* The end of a pair queued by cu_launch: one synchronisation, the phase
 * times, the vectors. */
static int cu_collect(cuda_ctx *c, lt_vcm_vector *out, int cap, int *nout)
{
  LT_CU(cudaStreamSynchronize(c->s), "vcm pair");
  for (int k = 0; k < 3; k++) {
    float ms = 0.0f;
    LT_CU(cudaEventElapsedTime(&ms, c->ev[k], c->ev[k + 1]), "vcm timing");
    c->t[k] += 1e-3 * ms;
  }
  int n = *c->h_n, k = n < cap ? n : cap;
  if (k > 0) memcpy(out, c->h_vec, (size_t)k * sizeof *out);
  lt_vcm_vector *t = c->prev; /* this field is the next pair's prior */
  c->prev = c->cur;
  c->cur = t;
  *nout = k;
  return 0;
}

static void cu_phases(void *vctx, double s[3])
{
  const cuda_ctx *c = (const cuda_ctx *)vctx;
  for (int k = 0; k < 3; k++) s[k] = c->t[k];
}

extern "C" const lt_vcm_backend lt_vcm_backend_cuda = {"cuda",   cu_create, cu_destroy,   cu_pair,  cu_phases,
                                                       cu_pair8, cu_prefetch8, cu_start8, cu_finish};
