/* vcm.c - Vector Coherence Mapping, the CPU reference (seeds/002 section 6;
 * SPEC 4.3). For a pair of frames (I0 = frame t, I1 = frame t+1):
 *
 *  1. Interest points. G = |Gx| + |Gy| (3x3 Sobel, L1 magnitude), D = |I1 - I0|,
 *     F = min(G / Gmax, D / Dmax) (fuzzy AND of the two normalised maps). The
 *     frame is cut into grid_x x grid_y sub-windows (cell cx spans columns
 *     cx*w/grid_x .. (cx+1)*w/grid_x - 1) and each keeps its K largest F.
 *  2. NCM. For each point, the sum of absolute differences d(o) between the
 *     P x P patch around it in I0 and the patch displaced by o in I1, for every
 *     o in [-S/2, S/2]^2 (symmetric, so side S+1: no bias towards one
 *     direction), turned into a similarity s(o) in [0, 1], stored as an
 *     integer 0..LT_VCM_SIM_ONE = 32767 (lt_vcm_sim_q; 16-bit maps).
 *  3. VCM. V_i(o) = sum_j w(|p_j - p_i|) s_j(o) over the points j within
 *     coherence_radius of p_i, i itself included, in exact integer
 *     arithmetic: the weights quantised to integers (lt_vcm_weight_q: w(0)
 *     = 255, each at least 1; a smaller scale where more than 257 points can
 *     lie within the radius, so that the 32-bit sums cannot overflow), the
 *     products and sums in int32. V_i is then normalised by the integer
 *     support (below) into a float, one rounding per offset. The peak of
 *     V_i, refined along each axis, is the vector; score = peak / sum_j w.
 *
 * Frames. Every stage works on the frames rounded to integers 0..255
 * (lt_vcm_round8; 8-bit video is unchanged): SADs are then exact integers,
 * summed in 16-bit SIMD lanes here and with __sad on CUDA, equal whatever the
 * order. So are the VCM sums (integer similarities x integer weights): the
 * CPU adds pairs of neighbours' maps by vpmaddwd (AVX-512BW or AVX2, plain
 * C elsewhere), the CUDA backend in tiles and bands, and both give the same
 * values to the bit. The quantisation (2^-15 of the similarity, 1/255 of
 * the weight) moved the test sequences' mean endpoint errors by at most
 * 0.0007 px (tests/test_vcm.c, 2026-11-24). Each vector also carries its motion evidence (lt_vcm_evidence, vcm.h),
 * by which the vcm mode drops chance vectors from static background noise.
 *
 * Borders. Points are only taken where the patch lies inside frame t (at least
 * max(1, P/2) pixels from the border). The search is clamped: offsets whose
 * displaced patch leaves frame t+1 get similarity 0 and take no part in the
 * similarity's normalisation, so frames smaller than the search area work
 * (only patch > frame is an error). Uniform regions: a point needs
 * F >= min_strength and D and G/8 of at least min_contrast grey levels, so a
 * flat or static region gives no points, and a flat frame gives n = 0.
 *
 * Choices the paper leaves open, measured by tests/test_vcm.c ("choice"
 * lines): picked on synthetic noisy sequences made in that test (rotation,
 * zoom, two regions; the TUNING set) and reported on Yosemite 9->10 non-sky
 * points with its ground truth (HELD OUT, not used to pick). Mean EPE, px:
 *  - Similarity: min-max normalisation, squared, ((dmax - d)/(dmax - dmin))^2
 *    (LT_VCM_SIM_MINMAX2): each point votes with the same total strength
 *    whatever its patch's contrast, squaring sharpens the peak; no
 *    transcendental, so CPU and CUDA agree to the bit. Tuning 0.221 vs plain
 *    min-max 0.232 and exp(-(d - dmin)/(P^2 16)) 0.217 (1.8% better but
 *    contrast dependent, needs a tuned h and an expf); held out 0.306 vs
 *    0.298 and 0.341.
 *  - Weighting: linear ramp 1 - r/(R+1) (LT_VCM_W_LINEAR), R = 20 px:
 *    tuning 0.221 vs Gaussian (s = R/2) 0.222 and box 0.274; held out 0.306 vs
 *    0.304 and 0.286. Radius 20: tuning 0.221 vs 10: 0.323, 32: 0.269; held
 *    out Yosemite's smooth flow prefers 32 (0.273): a scene trade-off.
 *  - Sub-pixel: equiangular (symmetric-V) fit instead of a parabola, because
 *    an SAD surface is a cone, not a paraboloid; y is refined on the column
 *    interpolated at the refined x (and x again), which removes the bias of
 *    per-axis fits when both components are fractional. Tuning 0.221 vs
 *    parabola 0.241; held out 0.306 vs 0.361; pure translation by 1.25 px:
 *    EPE 0.026 vs 0.092.
 *  - Border support: V_i(o) is normalised by the weight of the neighbours
 *    whose search rectangle holds o (not by all), so an offset leaving the
 *    frame is "unknown" rather than "dissimilar" (Yosemite 0.97 -> 0.36 px
 *    when introduced); below LT_VCM_MIN_SUPPORT of the weight it is 0.
 *  - Temporal coherence: optional (temporal_weight, default 0 = off, as the
 *    paper's core method; the first pair of a video has no prior anyway).
 *    The previous pair's vectors, averaged with the same spatial weights
 *    around the point (their start positions), predict v; V_i gains
 *    lambda * max(0, 1 - |o - v|^2 / rho^2) (bounded and polynomial, so the
 *    CUDA backend matches to the bit). Yosemite 8->9->10 with lambda 0.5:
 *    0.223 vs 0.306 off (not tuned on synthetic sequences: doubtful for
 *    video whose motion changes abruptly).
 * Points in practice (lt_vcm_points): the Sobel row by row with the maxima,
 * then F row by row inside each row of sub-windows, scanned into the cells'
 * K best in runs of 16 pixels that are skipped when none can enter (two
 * passes over the frame instead of five, no F frame); the same points as
 * lt_vcm_sobel, lt_vcm_strength and lt_vcm_select (tests/test_vcm.c).
 * Threads (cpu_run): one OpenMP team per pair and no barrier in it; the
 * frames' copy, the two passes of the points, the NCMs (4 points a task)
 * and the VCMs (a run of up to 8 pairs of points along a sub-window row a
 * task, shorter towards the end of the list) are tasks taken from counters
 * in one order, a VCM task waiting only for the NCM tasks it reads (made
 * one sub-window row ahead), so a thread that is late (preempted, or
 * waking) holds up only the work it has taken. Consecutive pairs of a row
 * share most neighbours, so a run reads most of its maps from the
 * thread's L2, and the accumulation prefetches each map 4 blocks ahead
 * (~40 streams a pair: more than the hardware prefetchers follow). It
 * sums 4 points a pass (vcm_points: two pairs; their neighbours listed as
 * the first pair's alone, both pairs', the second pair's alone, so each
 * map is read once for all the points that use it) and keeps each
 * point's largest sum. Each NCM starts on a 64-byte boundary, LT_VCM_M2P
 * offsets apart, so that the accumulation's 64-byte loads never straddle
 * two cache lines (640x480 with 8192 points, 1 thread, dev VM: 20 % of
 * the accumulation). The SADs (AVX-512) take two rows of offsets a pass
 * (sad_rows), each patch pixel broadcast once from a 32-bit word in
 * memory. A point whose neighbours' search rectangles are all whole finds
 * its peak on the integer sums (peak_full: one divisor, so only the sums
 * next to the largest are divided). The buffers' pages are mapped at create
 * (touch_pages), not in the first pair by every thread. The support of
 * neighbours whose search rectangle is clamped is summed as row
 * differences (two rows per neighbour, then one pass down the columns).
 * Determinism: SADs and VCM sums are integers (any order), every point's
 * float steps (normalisation, prior, peak) are one thread's in a fixed
 * order, maxima are order-free and selection is per cell, so the output is
 * the same for any number of OpenMP threads. No multiply-add is written
 * where the CUDA side could fuse it differently (the CUDA code uses
 * __fmul_rn / __fadd_rn). */
#include "vcm.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

void lt_vcm_params_default(lt_vcm_params *p)
{
  memset(p, 0, sizeof *p);
  p->grid_x = 32;
  p->grid_y = 32;
  p->points_per_cell = 2;
  p->patch = 5;
  p->search = 64;
  p->coherence_radius = 20;
  p->min_strength = 0.05f;
  p->min_contrast = 2.0f;
  p->similarity = LT_VCM_SIM_MINMAX2;
  p->sim_h = 16.0f;
  p->weighting = LT_VCM_W_LINEAR;
  p->temporal_weight = 0.0f;
  p->temporal_radius = 3.0f;
  p->subpixel = LT_VCM_SUB_EQUIANGULAR;
  p->evidence = 0.7f;
}

int lt_vcm_params_check(const lt_vcm_params *p, int w, int h)
{
  if (p->grid_x < 1 || p->grid_y < 1 || p->grid_x > 4096 || p->grid_y > 4096) {
    lt_error("vcm: grid %dx%d must be 1..4096 each way", p->grid_x, p->grid_y);
    return LT_ERR_USAGE;
  }
  if (p->points_per_cell < 1 || p->points_per_cell > LT_VCM_MAX_K) {
    lt_error("vcm: points per cell %d must be 1..%d", p->points_per_cell, LT_VCM_MAX_K);
    return LT_ERR_USAGE;
  }
  if (p->patch < 1 || p->patch > LT_VCM_MAX_PATCH || p->patch % 2 == 0) {
    lt_error("vcm: patch %d must be odd, 1..%d", p->patch, LT_VCM_MAX_PATCH);
    return LT_ERR_USAGE;
  }
  if (p->search < 2 || p->search > LT_VCM_MAX_SEARCH || p->search % 2) {
    lt_error("vcm: search %d must be even, 2..%d", p->search, LT_VCM_MAX_SEARCH);
    return LT_ERR_USAGE;
  }
  if (p->coherence_radius < 0 || p->coherence_radius > 1024) {
    lt_error("vcm: coherence radius %d must be 0..1024", p->coherence_radius);
    return LT_ERR_USAGE;
  }
  if (p->subpixel < LT_VCM_SUB_PARABOLA || p->subpixel > LT_VCM_SUB_EQUIANGULAR) {
    lt_error("vcm: unknown sub-pixel mode %d", p->subpixel);
    return LT_ERR_USAGE;
  }
  if (p->similarity < LT_VCM_SIM_MINMAX || p->similarity > LT_VCM_SIM_EXP ||
      p->weighting < LT_VCM_W_GAUSS || p->weighting > LT_VCM_W_UNIFORM) {
    lt_error("vcm: unknown similarity %d or weighting %d", p->similarity, p->weighting);
    return LT_ERR_USAGE;
  }
  if (!(p->min_strength >= 0 && p->min_strength <= 1) || !(p->min_contrast >= 0) ||
      !(p->sim_h > 0) || !(p->temporal_weight >= 0) || !(p->temporal_radius > 0) ||
      !(p->evidence >= 0 && p->evidence <= 1)) {
    lt_error("vcm: min strength and evidence must be 0..1; min contrast and temporal weight >= 0; "
             "sim h and temporal radius > 0");
    return LT_ERR_USAGE;
  }
  /* the weights' scale (lt_vcm_weight_q) is at least 2 up to 32767 points
   * within the radius (the sub-windows its box spans) */
  if (w >= p->grid_x && h >= p->grid_y) {
    int nb = lt_vcm_max_neighbours(p, w, h);
    if (nb > 32767) {
      lt_error("vcm: coherence radius %d reaches up to %d points with a %dx%d grid of %dx%d frames and %d per "
               "sub-window (at most 32767): a smaller radius or a coarser grid",
               p->coherence_radius, nb, p->grid_x, p->grid_y, w, h, p->points_per_cell);
      return LT_ERR_USAGE;
    }
  }
  if (w < p->patch || h < p->patch || w < 3 || h < 3) {
    lt_error("vcm: frame %dx%d is smaller than the %dx%d patch (or 3x3)", w, h, p->patch,
             p->patch);
    return LT_ERR_INPUT;
  }
  return 0;
}

int lt_vcm_max_points(const lt_vcm_params *p)
{
  return p->grid_x * p->grid_y * p->points_per_cell;
}

int lt_vcm_map_side(const lt_vcm_params *p)
{
  return p->search + 1;
}

int lt_vcm_max_neighbours(const lt_vcm_params *p, int w, int h)
{
  /* an interval of 2R + 1 pixels meets at most 2R / cw + 2 sub-windows of
   * width >= cw = floor(w / grid) (at least 1) */
  long long cwx = w / p->grid_x > 0 ? w / p->grid_x : 1, cwy = h / p->grid_y > 0 ? h / p->grid_y : 1;
  long long cx = 2LL * p->coherence_radius / cwx + 2, cy = 2LL * p->coherence_radius / cwy + 2;
  long long nb = (cx < p->grid_x ? cx : p->grid_x) * (cy < p->grid_y ? cy : p->grid_y) * p->points_per_cell;
  return nb < INT32_MAX ? (int)nb : INT32_MAX;
}

int lt_vcm_weight_q(const lt_vcm_params *p, int w, int h, int32_t *qtable)
{
  int R = p->coherence_radius, nb = lt_vcm_max_neighbours(p, w, h);
  long long sc = INT32_MAX / ((long long)LT_VCM_SIM_ONE * (nb > 1 ? nb : 1));
  int scale = sc < LT_VCM_W_ONE ? (sc > 1 ? (int)sc : 1) : LT_VCM_W_ONE;
  float *t = malloc(((size_t)R * R + 1) * sizeof *t);
  if (!t) return 0;
  lt_vcm_weight_table(p, t);
  for (int r2 = 0; r2 <= R * R; r2++) {
    int v = (int)floor((double)scale * t[r2] + 0.5);
    qtable[r2] = v > 1 ? v : 1;
  }
  free(t);
  return scale;
}

void lt_vcm_weight_table(const lt_vcm_params *p, float *table)
{
  int R = p->coherence_radius;
  double s = R / 2.0;
  for (int r2 = 0; r2 <= R * R; r2++) {
    double r = sqrt((double)r2), wv = 1.0;
    if (p->weighting == LT_VCM_W_GAUSS)
      wv = R > 0 ? exp(-r2 / (2.0 * s * s)) : 1.0;
    else if (p->weighting == LT_VCM_W_LINEAR)
      wv = 1.0 - r / (R + 1.0);
    /* multiples of 2^-16: sums of weights in double are then exact, so
     * they do not depend on the order of summation (CPU vs CUDA) */
    table[r2] = (float)(floor(wv * 65536.0 + 0.5) / 65536.0);
  }
}

/* ---- stage 1: interest points ---- */

static int margin_of(const lt_vcm_params *p)
{
  return p->patch / 2 > 1 ? p->patch / 2 : 1;
}

/* float bits read as integers (non-negative floats order like them) */
typedef uint32_t __attribute__((may_alias)) alias_u32;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LT_VCM_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LT_VCM_CLONES
#endif

/* Sobel of one row between its neighbour rows a, c (replicated at the
 * frame's edge): the borders with clamped columns, the interior as a loop
 * without them that vectorises (the same expression, so the same bits) */
LT_VCM_CLONES
static void sobel_row(const float *restrict a, const float *restrict b, const float *restrict c, int w,
                      float *restrict out)
{
  for (int x = 0; x < w; x += x == 0 && w > 2 ? w - 2 : 1) { /* x = 0 and x = w - 1 */
    int l = x > 0 ? x - 1 : 0, r = x < w - 1 ? x + 1 : w - 1;
    float gx = (a[r] + 2.0f * b[r] + c[r]) - (a[l] + 2.0f * b[l] + c[l]);
    float gy = (c[l] + 2.0f * c[x] + c[r]) - (a[l] + 2.0f * a[x] + a[r]);
    out[x] = fabsf(gx) + fabsf(gy);
  }
  for (int x = 1; x < w - 1; x++) {
    float gx = (a[x + 1] + 2.0f * b[x + 1] + c[x + 1]) - (a[x - 1] + 2.0f * b[x - 1] + c[x - 1]);
    float gy = (c[x - 1] + 2.0f * c[x] + c[x + 1]) - (a[x - 1] + 2.0f * a[x] + a[x + 1]);
    out[x] = fabsf(gx) + fabsf(gy);
  }
}

void lt_vcm_sobel(const float *img, int w, int h, float *mag)
{
#pragma omp parallel for schedule(static)
  for (int y = 0; y < h; y++)
    sobel_row(img + (size_t)(y > 0 ? y - 1 : 0) * w, img + (size_t)y * w,
              img + (size_t)(y < h - 1 ? y + 1 : h - 1) * w, w, mag + (size_t)y * w);
}

/* Largest gradient and frame difference of a row's n pixels into gm, dm
 * (as float bits: non-negative floats order like them, so an integer max
 * vectorises; NaN, whose bits are larger, is skipped as the float
 * comparison skips it) */
LT_VCM_CLONES
static void strength_max_row(const float *restrict g, const float *restrict i0, const float *restrict i1, int n,
                             uint32_t *gm, uint32_t *dm)
{
  uint32_t a = *gm, b = *dm;
  const alias_u32 *gu = (const alias_u32 *)g;
  for (int x = 0; x < n; x++) {
    union { float f; uint32_t u; } dv = {fabsf(i1[x] - i0[x])};
    uint32_t u = gu[x] & -(uint32_t)(gu[x] <= 0x7f800000u), e = dv.u & -(uint32_t)(dv.u <= 0x7f800000u);
    a = u > a ? u : a;
    b = e > b ? e : b;
  }
  *gm = a;
  *dm = b;
}

/* F of a row's n interior pixels (gmax, dmax > 0): every operation on every
 * pixel, so that it vectorises; the same expressions as a branch would */
LT_VCM_CLONES
static void strength_row(const float *restrict g, const float *restrict i0, const float *restrict i1, int n,
                         float gmax, float dmax, float smin, float cmin, float gmin, float *restrict F)
{
  for (int x = 0; x < n; x++) {
    float d = fabsf(i1[x] - i0[x]);
    float gn = g[x] / gmax, dn = d / dmax;
    float f = gn < dn ? gn : dn;
    int drop = (f < smin) | (d < cmin) | (g[x] < gmin);
    F[x] = drop ? 0.0f : f;
  }
}

void lt_vcm_strength(const float *mag, const float *I0, const float *I1, int w, int h,
                     const lt_vcm_params *p, float *F)
{
  int m = margin_of(p);
  uint32_t gbits = 0, dbits = 0;
#pragma omp parallel
  {
    uint32_t gm = 0, dm = 0;
#pragma omp for schedule(static)
    for (int y = m; y < h - m; y++) {
      size_t i = (size_t)y * w + m;
      if (w - 2 * m > 0) strength_max_row(mag + i, I0 + i, I1 + i, w - 2 * m, &gm, &dm);
    }
#pragma omp critical(lt_vcm_strength_max)
    {
      gbits = gm > gbits ? gm : gbits;
      dbits = dm > dbits ? dm : dbits;
    }
  }
  float gmax, dmax, gmin = 8.0f * p->min_contrast;
  memcpy(&gmax, &gbits, sizeof gmax);
  memcpy(&dmax, &dbits, sizeof dmax);
  int any = gmax > 0.0f && dmax > 0.0f;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < h; y++) {
    float *row = F + (size_t)y * w;
    if (!any || y < m || y >= h - m || w - 2 * m <= 0) {
      memset(row, 0, sizeof *row * w);
      continue;
    }
    memset(row, 0, sizeof *row * m);
    memset(row + w - m, 0, sizeof *row * m);
    size_t i = (size_t)y * w + m;
    strength_row(mag + i, I0 + i, I1 + i, w - 2 * m, gmax, dmax, p->min_strength, p->min_contrast, gmin, row + m);
  }
}

/* Inserts (f, idx) into the descending list best[0..*cnt) of at most k; an
 * equal value keeps the earlier (lower) index first because scanning is in
 * index order and only a strictly larger value moves ahead. */
static void topk_insert(float *bf, int *bi, int *cnt, int k, float f, int idx)
{
  int n = *cnt;
  if (n == k && !(f > bf[k - 1])) return;
  int j = n < k ? n : k - 1;
  while (j > 0 && f > bf[j - 1]) {
    bf[j] = bf[j - 1];
    bi[j] = bi[j - 1];
    j--;
  }
  bf[j] = f;
  bi[j] = idx;
  if (n < k) *cnt = n + 1;
}

/* The slots of px (pixel indices, -1 empty; k a cell, ncell cells) packed
 * in cell order into px, py (slot i >= n, so px is rewritten in place);
 * cstart (ncell + 1, or NULL): where each cell's points start; returns the
 * number of points */
static int points_pack(int ncell, int k, int w, int *px, int *py, int *cstart)
{
  int n = 0;
  for (int c = 0, i = 0; c < ncell; c++) {
    if (cstart) cstart[c] = n;
    for (int j = 0; j < k; j++, i++)
      if (px[i] >= 0) {
        int idx = px[i];
        px[n] = idx % w;
        py[n] = idx / w;
        n++;
      }
  }
  if (cstart) cstart[ncell] = n;
  return n;
}

int lt_vcm_select(const float *F, int w, int h, const lt_vcm_params *p, int *px, int *py)
{
  /* each sub-window on its own (rows of them in parallel) into its K slots
   * of px, as pixel indices (-1 = empty); then the slots are packed in cell
   * order: the same points in the same order for any number of threads */
  int k = p->points_per_cell, gx = p->grid_x, gy = p->grid_y;
#pragma omp parallel for schedule(dynamic, 1)
  for (int cy = 0; cy < gy; cy++) {
    int y0 = (int)((long long)cy * h / gy), y1 = (int)((long long)(cy + 1) * h / gy);
    for (int cx = 0; cx < gx; cx++) {
      int x0 = (int)((long long)cx * w / gx);
      int x1 = (int)((long long)(cx + 1) * w / gx);
      float bf[LT_VCM_MAX_K];
      int bi[LT_VCM_MAX_K], cnt = 0, *slot = px + (size_t)(cy * gx + cx) * k;
      for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
          float f = F[(size_t)y * w + x];
          if (f > 0.0f) topk_insert(bf, bi, &cnt, k, f, y * w + x);
        }
      for (int j = 0; j < k; j++) slot[j] = j < cnt ? bi[j] : -1;
    }
  }
  return points_pack(gx * gy, k, w, px, py, NULL);
}

/* The cell's running K best (bf, bi, *cnt; topk_insert's order) over the F
 * of one of its rows, columns x0 .. x1 - 1 (pixel index base + x): in runs
 * of 16 whose largest F (integer maximum of the bits: F >= +0, never NaN)
 * is compared with what an insertion needs (F > the K-th best once there
 * are K, else F > 0) first, so a run that would insert nothing is skipped
 * without a branch per pixel; the same list as topk_insert on every pixel. */
LT_VCM_CLONES
static void cell_row_scan(const float *restrict f, int x0, int x1, int base, int k, float *bf, int *bi, int *cnt)
{
  const alias_u32 *u = (const alias_u32 *)f;
  for (int x = x0; x < x1; x += 16) {
    int e = x + 16 < x1 ? x + 16 : x1;
    uint32_t mx = 0;
    for (int j = x; j < e; j++) mx = u[j] > mx ? u[j] : mx;
    union { float f; uint32_t u; } need = {*cnt == k ? bf[k - 1] : 0.0f};
    if (mx <= need.u) continue;
    for (int j = x; j < e; j++)
      if (f[j] > 0.0f) topk_insert(bf, bi, cnt, k, f[j], base + j);
  }
}

size_t lt_vcm_points_scratch(const lt_vcm_params *p, int w)
{
  size_t b = (size_t)w * sizeof(float) + (size_t)p->grid_x * (p->points_per_cell * (sizeof(float) + sizeof(int)) + sizeof(int));
  return (b + 63) / 64 * 64; /* threads' parts a cache line apart */
}

/* One more round of a wait loop: spins (pause) for its first 256 rounds,
 * then yields the core (on a loaded machine the thread waited for may be
 * the one without a core). */
static void spin_wait(unsigned it)
{
  if (it < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else
    sched_yield();
}

/* Waits until *ctr >= target (acquire). */
static void wait_count(const int *ctr, int target)
{
  for (unsigned it = 0; __atomic_load_n(ctr, __ATOMIC_ACQUIRE) < target; it++) spin_wait(it);
}

/* *a = max(*a, v), atomically */
static void max_u32(uint32_t *a, uint32_t v)
{
  uint32_t o = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (v > o && !__atomic_compare_exchange_n(a, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* The shared state of points_team (all zero at the start) */
typedef struct pts_team {
  uint32_t gbits, dbits;   /* the maxima of G and D (float bits) */
  int row_next, rows_done; /* pass 1: rows taken, rows done */
  int cy_next, cy_done;    /* pass 2: sub-window rows taken, done */
} pts_team;

#define LT_VCM_PTS_ROWS 8 /* rows per task of points_team's pass 1 */

/* lt_vcm_points' two passes, run by every thread of an OpenMP team (st
 * shared, zeroed before): the work taken in tasks from counters, no
 * barrier (a thread that gets a core late finds the work done). The slots
 * of px are full when it returns 1 to the one thread that finished the last
 * sub-window row (the others return 0 as soon as none is left to take).
 * tid: the thread's number in its team (its part of scratch). */
static int points_team(const float *I0, const float *I1, int w, int h, const lt_vcm_params *p, float *mag,
                       void *scratch, int *px, pts_team *st, int tid)
{
  int m = margin_of(p), k = p->points_per_cell, gx = p->grid_x, gy = p->grid_y, last = 0;
  /* pass 1: the Sobel of I0 row by row and, while its row is in the cache,
   * the row's interior maxima of G and D */
  uint32_t gm = 0, dm = 0;
  for (int y0; (y0 = __atomic_fetch_add(&st->row_next, LT_VCM_PTS_ROWS, __ATOMIC_RELAXED)) < h;) {
    int y1 = y0 + LT_VCM_PTS_ROWS < h ? y0 + LT_VCM_PTS_ROWS : h;
    for (int y = y0; y < y1; y++) {
      sobel_row(I0 + (size_t)(y > 0 ? y - 1 : 0) * w, I0 + (size_t)y * w,
                I0 + (size_t)(y < h - 1 ? y + 1 : h - 1) * w, w, mag + (size_t)y * w);
      size_t i = (size_t)y * w + m;
      if (y >= m && y < h - m && w - 2 * m > 0) strength_max_row(mag + i, I0 + i, I1 + i, w - 2 * m, &gm, &dm);
    }
    max_u32(&st->gbits, gm);
    max_u32(&st->dbits, dm);
    __atomic_fetch_add(&st->rows_done, y1 - y0, __ATOMIC_RELEASE);
  }
  wait_count(&st->rows_done, h);
  uint32_t gbits = __atomic_load_n(&st->gbits, __ATOMIC_RELAXED), dbits = __atomic_load_n(&st->dbits, __ATOMIC_RELAXED);
  float gmax, dmax, gmin = 8.0f * p->min_contrast;
  memcpy(&gmax, &gbits, sizeof gmax);
  memcpy(&dmax, &dbits, sizeof dmax);
  int any = gmax > 0.0f && dmax > 0.0f && w - 2 * m > 0;
  /* pass 2: each row of sub-windows on its own: F of each of its rows
   * (lt_vcm_strength's strength_row: the same values) into a row buffer,
   * scanned cell by cell into the cells' K slots of px (pixel indices, -1
   * empty) */
  char *sc = (char *)scratch + lt_vcm_points_scratch(p, w) * tid;
  float *fr = (float *)sc, *bf = fr + w;
  int *bi = (int *)(bf + (size_t)gx * k), *cnt = bi + (size_t)gx * k;
  for (int cy; (cy = __atomic_fetch_add(&st->cy_next, 1, __ATOMIC_RELAXED)) < gy;) {
    int y0 = (int)((long long)cy * h / gy), y1 = (int)((long long)(cy + 1) * h / gy);
    memset(cnt, 0, sizeof *cnt * gx);
    for (int y = y0 > m ? y0 : m; any && y < y1 && y < h - m; y++) {
      size_t i = (size_t)y * w + m;
      strength_row(mag + i, I0 + i, I1 + i, w - 2 * m, gmax, dmax, p->min_strength, p->min_contrast, gmin, fr + m);
      for (int cx = 0; cx < gx; cx++) {
        int x0 = (int)((long long)cx * w / gx), x1 = (int)((long long)(cx + 1) * w / gx);
        x0 = x0 > m ? x0 : m;
        x1 = x1 < w - m ? x1 : w - m;
        cell_row_scan(fr, x0, x1, y * w, k, bf + (size_t)cx * k, bi + (size_t)cx * k, &cnt[cx]);
      }
    }
    for (int cx = 0; cx < gx; cx++) {
      int *slot = px + (size_t)(cy * gx + cx) * k;
      for (int j = 0; j < k; j++) slot[j] = j < cnt[cx] ? bi[(size_t)cx * k + j] : -1;
    }
    last |= __atomic_add_fetch(&st->cy_done, 1, __ATOMIC_ACQ_REL) == gy;
  }
  return last;
}


int lt_vcm_points(const float *I0, const float *I1, int w, int h, const lt_vcm_params *p, int nthreads, float *mag,
                  void *scratch, int *px, int *py)
{
  pts_team st = {0};
#pragma omp parallel num_threads(nthreads)
  points_team(I0, I1, w, h, p, mag, scratch, px, &st, omp_get_thread_num());
  return points_pack(p->grid_x * p->grid_y, p->points_per_cell, w, px, py, NULL);
}

/* ---- stage 2: normal correlation maps ---- */

void lt_vcm_search_rect(const lt_vcm_params *p, int w, int h, int x, int y, int r[4])
{
  int R = p->search / 2, hp = p->patch / 2;
  r[0] = hp - x > -R ? hp - x : -R;
  r[1] = w - 1 - hp - x < R ? w - 1 - hp - x : R;
  r[2] = hp - y > -R ? hp - y : -R;
  r[3] = h - 1 - hp - y < R ? h - 1 - hp - y : R;
}

/* The similarities (lt_vcm_sim_q) of the SADs over the rectangle r: from
 * sad (side*side int32, the reference's sums) where it is not NULL, else
 * from the 16-bit SADs already in ncm (the SIMD paths, in place; their
 * smallest and largest in mm, or mm NULL: found here); the offsets outside
 * r are left as they are (0). Row by row so the loops vectorise. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static void ncm_similarity(uint16_t *ncm, const int32_t *sad, const int *mm, const int r[4], const lt_vcm_params *p)
{
  int R = p->search / 2, M = 2 * R + 1, nx = r[1] - r[0] + 1;
  int32_t dmin = INT32_MAX, dmax = 0;
  if (mm) {
    dmin = mm[0];
    dmax = mm[1];
  } else
    for (int oy = r[2]; oy <= r[3]; oy++) {
      size_t at = (size_t)(oy + R) * M + R + r[0];
      if (sad)
        for (int l = 0; l < nx; l++) {
          dmin = sad[at + l] < dmin ? sad[at + l] : dmin;
          dmax = sad[at + l] > dmax ? sad[at + l] : dmax;
        }
      else
        for (int l = 0; l < nx; l++) {
          dmin = ncm[at + l] < dmin ? ncm[at + l] : dmin;
          dmax = ncm[at + l] > dmax ? ncm[at + l] : dmax;
        }
    }
  float tau = (float)(p->patch * p->patch) * p->sim_h, inv = lt_vcm_sim_inv(dmin, dmax);
  int sim = p->similarity;
  if (sad || sim == LT_VCM_SIM_EXP) { /* the reference: lt_vcm_sim_q itself */
    for (int oy = r[2]; oy <= r[3]; oy++) {
      size_t at = (size_t)(oy + R) * M + R + r[0];
      uint16_t *c = ncm + at;
      if (sad)
        for (int l = 0; l < nx; l++) c[l] = lt_vcm_sim_q(sad[at + l], dmin, dmax, inv, sim, tau);
      else
        for (int l = 0; l < nx; l++) c[l] = lt_vcm_sim_q(c[l], dmin, dmax, inv, sim, tau);
    }
    return;
  }
  /* the SIMD paths: lt_vcm_sim_q's min-max expressions, one loop per kind
   * so that they vectorise (test_vcm holds them to the reference) */
  float fmax = (float)dmax;
  int nrow = r[3] - r[2] + 1;
  if (nx == M) { /* whole rows: one run of nrow M offsets (no tail per row) */
    nx *= nrow;
    nrow = 1;
  }
  for (int oy = r[2]; oy < r[2] + nrow; oy++) {
    uint16_t *c = ncm + (size_t)(oy + R) * M + R + r[0];
    if (sim == LT_VCM_SIM_MINMAX2)
      for (int l = 0; l < nx; l++) {
        float v = (fmax - (float)c[l]) * inv;
        c[l] = (uint16_t)(int)(v * v * (float)LT_VCM_SIM_ONE + 0.5f);
      }
    else
      for (int l = 0; l < nx; l++) {
        float v = (fmax - (float)c[l]) * inv;
        c[l] = (uint16_t)(int)(v * (float)LT_VCM_SIM_ONE + 0.5f);
      }
  }
}

void lt_vcm_ncm(const float *I0, const float *I1, int w, int h, int x, int y,
                const lt_vcm_params *p, uint16_t *ncm)
{
  int R = p->search / 2, M = 2 * R + 1, hp = p->patch / 2, r[4];
  static _Thread_local int32_t sad[(LT_VCM_MAX_SEARCH + 1) * (LT_VCM_MAX_SEARCH + 1)];
  lt_vcm_search_rect(p, w, h, x, y, r);
  int oxa = r[0], oxb = r[1], oya = r[2], oyb = r[3];
  for (int i = 0; i < M * M; i++) {
    ncm[i] = 0;
    sad[i] = 0;
  }
  /* the frames hold integers 0..255 (lt_vcm_round8): each |difference| is
   * one exactly; summed as integers */
  for (int ky = -hp; ky <= hp; ky++)
    for (int kx = -hp; kx <= hp; kx++) {
      float v = I0[(size_t)(y + ky) * w + x + kx];
      for (int oy = oya; oy <= oyb; oy++) {
        const float *row = I1 + (size_t)(y + ky + oy) * w + x + kx;
        int32_t *out = sad + (size_t)(oy + R) * M + R;
        for (int ox = oxa; ox <= oxb; ox++) out[ox] += (int32_t)fabsf(v - row[ox]);
      }
    }
  ncm_similarity(ncm, sad, NULL, r, p);
}

/* lt_vcm_round8 on one block: branch-free loops that vectorise */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static void round8_block(const float *restrict src, size_t n, float *restrict rf, uint8_t *restrict q)
{
  for (size_t i = 0; i < n; i++) {
    float v = src[i], c = v > 0.0f ? (v < 255.0f ? v : 255.0f) : 0.0f; /* NaN -> 0 */
    q[i] = (uint8_t)(int)(c + 0.5f);
  }
  if (rf)
    for (size_t i = 0; i < n; i++) rf[i] = (float)q[i];
}

void lt_vcm_round8(const float *src, size_t n, float *rf, uint8_t *q)
{
  /* one thread, in blocks of 64 Ki pixels (~0.05 ms for 640x480 here;
   * an OpenMP team beside the frame loop's decode and writer threads made it
   * milliseconds at 1920x1080 on the 16-core GPU host) */
  size_t blk = 65536, nb = (n + blk - 1) / blk;
  for (size_t b = 0; b < nb; b++) {
    size_t i0 = b * blk, k = n - i0 < blk ? n - i0 : blk;
    round8_block(src + i0, k, rf ? rf + i0 : NULL, q + i0);
  }
}

/* SADs of the P x P patch of q0 around (x, y) against q1 at the offsets
 * (oxa + l, oy), l < 16 NB, oy = oya..oyb, into sad[(oy - oya) * 16 NB + l]:
 * AVX2, 16 lanes of 16 bits per register (P^2 * 255 < 65536 for P <= 15),
 * the NB accumulators of a row of offsets in registers. Lanes past the
 * rectangle read up to 15 bytes beyond it (LT_VCM_PAD8 covers the last
 * row) and are not used. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_SAD_AVX2 1
__attribute__((target("avx2"), always_inline)) static inline void
sad_avx2_nb(const uint8_t *q0, const uint8_t *q1, int w, int x, int y, int P, int oxa, int oya, int oyb,
            uint16_t *sad, const int NB)
{
  int hp = P / 2;
  for (int oy = oya; oy <= oyb; oy++) {
    __m256i acc[9];
    for (int b = 0; b < NB; b++) acc[b] = _mm256_setzero_si256();
    for (int ky = -hp; ky <= hp; ky++) {
      const uint8_t *a = q0 + (size_t)(y + ky) * w + x;
      const uint8_t *row = q1 + (size_t)(y + ky + oy) * w + x + oxa;
      for (int kx = -hp; kx <= hp; kx++) {
        __m256i v = _mm256_set1_epi16(a[kx]);
        for (int b = 0; b < NB; b++) {
          __m256i r = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row + kx + 16 * b)));
          acc[b] = _mm256_add_epi16(acc[b], _mm256_abs_epi16(_mm256_sub_epi16(r, v)));
        }
      }
    }
    uint16_t *out = sad + (size_t)(oy - oya) * 16 * NB;
    for (int b = 0; b < NB; b++) _mm256_storeu_si256((__m256i *)(out + 16 * b), acc[b]);
  }
}

__attribute__((target("avx2"))) static void sad_avx2(const uint8_t *q0, const uint8_t *q1, int w, int x, int y,
                                                     int P, int oxa, int oya, int oyb, int nb, uint16_t *sad)
{
  switch (nb) {
#define NB_CASE(k) \
  case k: sad_avx2_nb(q0, q1, w, x, y, P, oxa, oya, oyb, sad, k); break;
    NB_CASE(1) NB_CASE(2) NB_CASE(3) NB_CASE(4) NB_CASE(5) NB_CASE(6) NB_CASE(7) NB_CASE(8) NB_CASE(9)
#undef NB_CASE
  }
}


/* One column of offsets (window column c0 - hp .. c0 + hp) for the ny rows
 * of offsets: the window's P columns there copied transposed, so that the
 * lanes are the rows of offsets; the same 16-bit sums as by rows. */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
sad_column(const uint16_t *win, int WW, int c0, const uint8_t *a0, int w, int P, int ny, uint16_t *out, int M,
           __m512i *mn, __m512i *mx)
{
  static _Thread_local uint16_t tw[15][LT_VCM_MAX_SEARCH + 16];
  int hp = P / 2, nr = ny + P - 1;
  for (int rr = 0; rr < nr; rr++)
    for (int kx = 0; kx < P; kx++) tw[kx][rr] = win[(size_t)rr * WW + c0 - hp + kx];
  for (int g = 0; g < ny; g += 32) {
    int left = ny - g;
    __mmask32 k = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
    __m512i acc = _mm512_setzero_si512();
    for (int ky = -hp; ky <= hp; ky++) {
      const uint8_t *a = a0 + (ptrdiff_t)ky * w;
      for (int kx = -hp; kx <= hp; kx++) {
        __m512i r = _mm512_maskz_loadu_epi16(k, tw[kx + hp] + g + ky + hp);
        acc = _mm512_add_epi16(acc, _mm512_abs_epi16(_mm512_sub_epi16(r, _mm512_set1_epi16(a[kx]))));
      }
    }
    uint16_t lane[32];
    _mm512_storeu_si512((void *)lane, acc);
    for (int j = 0; j < left && j < 32; j++) out[(size_t)(g + j) * M] = lane[j];
    *mn = _mm512_mask_min_epu16(*mn, k, *mn, acc);
    *mx = _mm512_mask_max_epu16(*mx, k, *mx, acc);
  }
}

/* The SAD sums of NR (1 or 2) rows of offsets from window row r0 on
 * (sad_avx512_nb's window and broadcast pixels pw) into acc[5 q + b]: two
 * rows share the patch pixel's broadcast and, once unrolled, the loads of
 * the window rows they both read. */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
sad_rows(const uint16_t *win, int WW, const uint32_t *pw, int P, int r0, const int NB, const int NR, __m512i *acc)
{
  for (int q = 0; q < NR; q++)
    for (int b = 0; b < NB; b++) acc[5 * q + b] = _mm512_setzero_si512();
  for (int ky = 0; ky < P; ky++) {
    const uint16_t *row = win + (size_t)(r0 + ky) * WW;
    for (int kx = 0; kx < P; kx++) {
      __m512i v = _mm512_set1_epi32((int)pw[ky * P + kx]); /* a 32-bit broadcast from memory: a load, no shuffle */
      for (int q = 0; q < NR; q++)
        for (int b = 0; b < NB; b++) {
          __m512i r = _mm512_loadu_si512((const void *)(row + (size_t)q * WW + kx + 32 * b));
          acc[5 * q + b] = _mm512_add_epi16(acc[5 * q + b], _mm512_abs_epi16(_mm512_sub_epi16(r, v)));
        }
    }
  }
}

/* The same SADs with AVX-512BW: 32 lanes of 16 bits per register (NB
 * registers per row of offsets), written straight into the NCM rows by
 * masked stores (no scratch rows, no lane past the rectangle written).
 * Loads read up to 31 bytes beyond the rectangle (LT_VCM_PAD8). */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
sad_avx512_nb(const uint8_t *q0, const uint8_t *q1, int w, int x, int y, int P, int oxa, int oya, int oyb, int nx,
              uint16_t *out0, int M, int *mm, const int NB, const int COL)
{
  int hp = P / 2, WW = 32 * NB + 32, nr = oyb - oya + P;
  /* frame t+1's window under the search rectangle widened to 16 bits once
   * (rows of WW: each byte is read by up to P^2 offsets' rows; the loads
   * below are then plain, without a widening shuffle); the last row's
   * loads end at most 63 bytes past the window (LT_VCM_PAD8) */
  static _Thread_local uint16_t win[(LT_VCM_MAX_SEARCH + 16) * (5 * 32 + 32)];
  for (int rr = 0; rr < nr; rr++) {
    const uint8_t *src = q1 + (size_t)(y - hp + oya + rr) * w + x + oxa - hp;
    for (int c = 0; c < WW; c += 32)
      _mm512_storeu_si512((void *)(win + (size_t)rr * WW + c),
                          _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(src + c))));
  }
  uint32_t pw[LT_VCM_MAX_PATCH * LT_VCM_MAX_PATCH]; /* the patch's pixels, each in both halves */
  for (int ky = -hp; ky <= hp; ky++)
    for (int kx = -hp; kx <= hp; kx++) pw[(ky + hp) * P + kx + hp] = q0[(size_t)(y + ky) * w + x + kx] * 0x10001u;
  __m512i mn = _mm512_set1_epi16(-1), mx = _mm512_setzero_si512(); /* the SADs' smallest and largest */
  for (int oy = oya; oy <= oyb; oy += 2) {
    __m512i acc[10]; /* rows of offsets oy (acc[b]) and oy + 1 (acc[5 + b]) */
    int nrow = oy < oyb ? 2 : 1;
    if (nrow == 2) sad_rows(win, WW, pw, P, oy - oya, NB, 2, acc);
    else sad_rows(win, WW, pw, P, oy - oya, NB, 1, acc);
    for (int q = 0; q < nrow; q++) {
      uint16_t *out = out0 + (size_t)(oy + q - oya) * M;
      for (int b = 0; b < NB; b++) {
        __m512i sad = acc[5 * q + b];
        int left = nx - 32 * b;
        __mmask32 k = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
        _mm512_mask_storeu_epi16(out + 32 * b, k, sad);
        mn = _mm512_mask_min_epu16(mn, k, mn, sad);
        mx = _mm512_mask_max_epu16(mx, k, mx, sad);
      }
    }
  }
  if (COL) { /* the offsets' last column, x offset oxa + 32 NB, for all rows of offsets at once */
    sad_column(win, WW, hp + 32 * NB, q0 + (size_t)y * w + x, w, P, oyb - oya + 1, out0 + 32 * NB, M, &mn, &mx);
  }
  mm[0] = (int)_mm512_reduce_min_epu32(_mm512_min_epu32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(mn)),
                                                         _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(mn, 1))));
  mm[1] = (int)_mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(mx)),
                                                         _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(mx, 1))));
}

__attribute__((target("avx512f,avx512bw"))) static void sad_avx512(const uint8_t *q0, const uint8_t *q1, int w, int x,
                                                                    int y, int P, int oxa, int oya, int oyb, int nx,
                                                                    uint16_t *out0, int M, int *mm)
{
  /* the default search (64: 65 offsets a row) leaves 1 offset for a third
   * register of 32 lanes; that column is then done down its rows instead */
  int col = nx > 32 && nx % 32 == 1;
  switch ((nx + 31) / 32 * 2 + col) {
/* the default 5x5 patch as a constant: its 25 pixels' loops unrolled */
#define NB_CASE(k) \
  case 2 * k: \
    if (P == 5) sad_avx512_nb(q0, q1, w, x, y, 5, oxa, oya, oyb, nx, out0, M, mm, k, 0); \
    else sad_avx512_nb(q0, q1, w, x, y, P, oxa, oya, oyb, nx, out0, M, mm, k, 0); \
    break;
#define NB_COL(k) \
  case 2 * k + 1: \
    if (P == 5) sad_avx512_nb(q0, q1, w, x, y, 5, oxa, oya, oyb, nx - 1, out0, M, mm, k - 1, 1); \
    else sad_avx512_nb(q0, q1, w, x, y, P, oxa, oya, oyb, nx - 1, out0, M, mm, k - 1, 1); \
    break;
    NB_CASE(1) NB_CASE(2) NB_CASE(3) NB_CASE(4) NB_CASE(5) NB_COL(2) NB_COL(3) NB_COL(4) NB_COL(5)
#undef NB_CASE
#undef NB_COL
  }
}
#endif

static int simd_max = 3; /* lt_vcm_set_simd */

void lt_vcm_set_simd(int level)
{
  simd_max = level;
}

static int madd_level(void)
{
#if defined(HAVE_SAD_AVX2)
  if (simd_max >= 3 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")) return 3;
  if (simd_max >= 2 && __builtin_cpu_supports("avx512bw")) return 2;
  if (simd_max >= 1 && __builtin_cpu_supports("avx2")) return 1;
#endif
  return 0;
}

void lt_vcm_ncm8(const uint8_t *q0, const uint8_t *q1, const float *I0, const float *I1, int w, int h, int x,
                 int y, const lt_vcm_params *p, uint16_t *scratch, uint16_t *ncm)
{
#ifdef HAVE_SAD_AVX2
  if (p->patch <= 15 && simd_max >= 2 && __builtin_cpu_supports("avx512bw")) {
    int R = p->search / 2, M = 2 * R + 1, r[4];
    lt_vcm_search_rect(p, w, h, x, y, r);
    if (r[1] - r[0] + 1 < M || r[3] - r[2] + 1 < M) /* offsets outside the rectangle are 0 */
      memset(ncm, 0, sizeof *ncm * M * M);
    int mm[2];
    sad_avx512(q0, q1, w, x, y, p->patch, r[0], r[2], r[3], r[1] - r[0] + 1, ncm + (size_t)(r[2] + R) * M + R + r[0], M,
               mm);
    ncm_similarity(ncm, NULL, mm, r, p);
    return;
  }
  if (p->patch <= 15 && simd_max >= 1 && __builtin_cpu_supports("avx2")) { /* a load of libgcc's CPU model */
    int R = p->search / 2, M = 2 * R + 1, r[4];
    lt_vcm_search_rect(p, w, h, x, y, r);
    int nx = r[1] - r[0] + 1, nb = (nx + 15) / 16;
    if (nx < M || r[3] - r[2] + 1 < M) memset(ncm, 0, sizeof *ncm * M * M);
    sad_avx2(q0, q1, w, x, y, p->patch, r[0], r[2], r[3], nb, scratch);
    for (int oy = r[2]; oy <= r[3]; oy++)
      memcpy(ncm + (size_t)(oy + R) * M + R + r[0], scratch + (size_t)(oy - r[2]) * 16 * nb, sizeof *ncm * nx);
    ncm_similarity(ncm, NULL, NULL, r, p);
    return;
  }
#endif
  (void)q0;
  (void)q1;
  (void)scratch;
  lt_vcm_ncm(I0, I1, w, h, x, y, p, ncm); /* exact on 8-bit values: the same map */
}

/* ---- motion evidence of a vector (vcm.h) ---- */

float lt_vcm_evidence(const uint8_t *q0, const uint8_t *q1, int w, int h, const lt_vcm_vector *v)
{
  if (!(v->dx * v->dx + v->dy * v->dy >= 1.0f)) return 0.0f;
  int x = (int)v->x, y = (int)v->y, ox = (int)lrintf(v->dx), oy = (int)lrintf(v->dy);
  int e0 = 0, ev = 0, used = 0, side = 2 * LT_VCM_EVIDENCE_HALF + 1;
  for (int ky = -LT_VCM_EVIDENCE_HALF; ky <= LT_VCM_EVIDENCE_HALF; ky++)
    for (int kx = -LT_VCM_EVIDENCE_HALF; kx <= LT_VCM_EVIDENCE_HALF; kx++) {
      int ax = x + kx, ay = y + ky, bx = ax + ox, by = ay + oy;
      if (ax < 0 || ay < 0 || ax >= w || ay >= h || bx < 0 || by < 0 || bx >= w || by >= h) continue;
      int a = q0[(size_t)ay * w + ax], d0 = a - q1[(size_t)ay * w + ax], dv = a - q1[(size_t)by * w + bx];
      e0 += d0 < 0 ? -d0 : d0;
      ev += dv < 0 ? -dv : dv;
      used++;
    }
  if (2 * used < side * side || (e0 == 0 && ev > 0)) return INFINITY;
  return e0 == 0 ? 0.0f : (float)ev / (float)e0;
}

/* ---- stage 3: vector coherence maps ---- */

/* Shift of the peak c between l (offset -1) and r (+1), within +-0.5. */
static float refine(float l, float c, float r, int mode)
{
  float t = 0.0f;
  if (mode == LT_VCM_SUB_PARABOLA) {
    float den = l - 2.0f * c + r;
    if (den < 0.0f) t = 0.5f * (l - r) / den;
  } else { /* equiangular: a symmetric V through the three values */
    float den = r >= l ? c - l : c - r;
    if (den > 0.0f) t = 0.5f * (r - l) / den;
  }
  return t > 0.5f ? 0.5f : t < -0.5f ? -0.5f : t;
}

/* max of a map (order-free). The maps are >= +0 and never NaN (sums of
 * non-negative similarities, divided by positive supports, plus a
 * non-negative prior), and such floats order like their bit patterns, so
 * the reduction is an integer max, which vectorises (a float max written
 * with ?: does not, for NaN's sake); a map with a negative value takes the
 * plain loop. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static float map_max(const float *map, int n)
{
  const alias_u32 *u = (const alias_u32 *)map;
  uint32_t m = 0, neg = 0;
  for (int i = 0; i < n; i++) {
    m = u[i] > m ? u[i] : m;
    neg |= u[i] & 0x80000000u;
  }
  if (!neg) {
    float bv;
    memcpy(&bv, &m, sizeof bv);
    return bv;
  }
  float bv = -INFINITY;
  for (int i = 0; i < n; i++) bv = map[i] > bv ? map[i] : bv;
  return bv;
}

/* Among the offsets of the map holding bv the one with the smallest
 * |offset|^2, then the lowest index. */
LT_VCM_CLONES
static int peak_index(const float *map, int side, float bv)
{
  int R = side / 2, best = 0, bd = INT32_MAX, n = side * side;
  for (int i0 = 0; i0 < n; i0 += 32) { /* blocks of 32: the test for any hit vectorises */
    int i1 = i0 + 32 < n ? i0 + 32 : n, hit = 0;
    for (int i = i0; i < i1; i++) hit |= map[i] == bv;
    if (hit)
      for (int i = i0; i < i1; i++)
        if (map[i] == bv) {
          int ox = i % side - R, oy = i / side - R, d = ox * ox + oy * oy;
          if (d < bd) {
            best = i;
            bd = d;
          }
        }
  }
  return best;
}

/* The vector of the peak at offset index best: its sub-pixel shift from
 * the map's values at best and its 8 neighbours (those inside the map) */
static void peak_at(const float *map, int side, int subpixel, int best, float *dx, float *dy)
{
  int R = side / 2, bx = best % side, by = best / side;
  float sx = 0.0f, sy = 0.0f;
  const float *c = map + best;
  if (bx > 0 && bx < side - 1 && by > 0 && by < side - 1) {
    /* x along the peak row; y along the column interpolated at that x; x
     * again along the row interpolated at that y. The interpolated profiles
     * are symmetric for a cone whose axis is off the grid in both
     * directions, where the plain peak row/column is not. */
    float sx0 = refine(c[-1], c[0], c[1], subpixel);
    int ci = sx0 >= 0.0f ? 1 : -1;
    float a = fabsf(sx0), b;
    float u = (1.0f - a) * c[-side] + a * c[-side + ci];
    float m = (1.0f - a) * c[0] + a * c[ci];
    float d = (1.0f - a) * c[side] + a * c[side + ci];
    sy = refine(u, m, d, subpixel);
    int rj = sy >= 0.0f ? side : -side;
    b = fabsf(sy);
    float l = (1.0f - b) * c[-1] + b * c[rj - 1];
    float mm = (1.0f - b) * c[0] + b * c[rj];
    float r = (1.0f - b) * c[1] + b * c[rj + 1];
    sx = refine(l, mm, r, subpixel);
  } else {
    if (bx > 0 && bx < side - 1) sx = refine(c[-1], c[0], c[1], subpixel);
    if (by > 0 && by < side - 1) sy = refine(c[-side], c[0], c[side], subpixel);
  }
  *dx = (float)(bx - R) + sx;
  *dy = (float)(by - R) + sy;
}

/* lt_vcm_peak with the map's maximum bv known */
static float peak_of(const float *map, int side, int subpixel, float bv, float *dx, float *dy)
{
  peak_at(map, side, subpixel, peak_index(map, side, bv), dx, dy);
  return bv;
}

float lt_vcm_peak(const float *map, int side, int subpixel, float *dx, float *dy)
{
  /* the maximum, then among the offsets holding it the smallest |offset|^2,
   * then the lowest index (two passes, the same choice as one) */
  return peak_of(map, side, subpixel, map_max(map, side * side), dx, dy);
}

/* ---- the backend ---- */

/* A task of cpu_run: the NCMs of points -begin - 1 .. end - 1 (begin < 0,
 * the need-th NCM task) or the VCMs of points begin .. end - 1 (pairs),
 * after the NCM tasks 0 .. need - 1 */
typedef struct cpu_task {
  int begin, end, need;
} cpu_task;

typedef struct cpu_worker { /* a pool thread's context and number (pool_main) */
  struct cpu_ctx *c;
  int tid;
} cpu_worker;

typedef struct cpu_ctx {
  lt_vcm_params p;
  int w, h, maxpts, side, nthreads;
  float *mag, *map, *wt; /* map: per thread a VCM as floats (vcm_finish) */
  uint16_t *ncm;    /* the NCMs, LT_VCM_SIM_ONE = 1, LT_VCM_M2P(m2) apart from a 64-byte boundary */
  int32_t *acc;     /* per thread LT_VCM_QP points' integer sums */
  const uint16_t **nbl; /* per thread the neighbours' maps of vcm_points (LT_VCM_NBL(maxpts)) */
  uint32_t *wl;     /* and their weights, packed in pairs, per point (LT_VCM_QP LT_VCM_WL(maxpts)) */
  int *jl;          /* per thread vcm_points' neighbours and their parts (2 maxpts) */
  void *pscratch;   /* per thread lt_vcm_points scratch */
  float *rf[2];     /* the pair's frames rounded (lt_vcm_round8), as floats */
  uint8_t *q[2];    /* and as bytes */
  uint16_t *sad;    /* per thread SAD rows (lt_vcm_ncm8) */
  int32_t *cnt;     /* per thread LT_VCM_QP points' support C(o) (integer weights) */
  int32_t *zero;    /* m2 zeros: the support of a point without clamped neighbours */
  int32_t *wq;      /* integer weight table (lt_vcm_weight_q) */
  const float *last_I1; /* the last pair's I1 (its rounded copy is rf[1], q[1]; vcm.h) */
  int have_last;    /* rf[1], q[1] hold the last pair's I1 (pair or pair8) */
  const uint8_t *in8[2]; /* pair8's frames for cpu_run to copy into q, rf (NULL: none) */
  int *px, *py;
  int *cstart;      /* points of sub-window c: cstart[c] .. cstart[c + 1] - 1 */
  cpu_task *task;   /* cpu_run's tasks (build_tasks) */
  int *done;        /* NCM task k of pair gen is done: done[k] == gen */
  int gen;          /* pairs run */
  int run;          /* pairs of points per VCM task at most (LT_VCM_RUN; LT_VCM_CPU_RUN) */
  int qp;           /* points per vcm_points at most (LT_VCM_QP; LT_VCM_CPU_QP 1 .. 4) */
  double *diag;     /* LT_VCM_CPU_DIAG: per thread LT_VCM_DIAG_N sums (cpu_destroy prints them) */
  double *tct;      /* per thread the last pair's correlation and accumulation seconds (cpu_team) */
  /* the pair's team kept across pairs with LT_VCM_CPU_POOL=1 (pool_start;
   * by default none: an OpenMP team per pair): threads 1 .. npool wait for
   * job number jgen */
  pthread_t *pool;
  cpu_worker *wk;   /* their arguments (index = tid) */
  int npool;        /* workers started */
  struct cpu_job *job; /* the job of jgen */
  int jgen, jleft;  /* jobs started; workers still in the last one */
  int quit;         /* with jgen raised: the workers end */
  int sleepers;     /* workers asleep on cv (under mu) */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  double spin_s;    /* a worker's spin before it sleeps (LT_VCM_CPU_SPIN ms) */
  lt_vcm_vector *prev, *cur; /* last pair's vectors (temporal prior), this pair's */
  int nprev;
  double t[3]; /* seconds per phase (points, correlation, accumulation) */
} cpu_ctx;

#define LT_VCM_NCM_TASK 4 /* points per NCM task of cpu_run */
#define LT_VCM_DIAG_N 7   /* LT_VCM_CPU_DIAG sums per thread: NCM, VCM, wait s, tasks, entry, first task, entry max */
#define LT_VCM_SPIN_MS 5.0 /* a pool worker's spin after its last pair before it sleeps (LT_VCM_CPU_SPIN) */
#define LT_VCM_RUN 8      /* pairs of points per VCM task of cpu_run at most (build_tasks) */
#define LT_VCM_PF 128     /* the accumulation's prefetch distance: 4 blocks of 32 offsets */

#define SAD_LANES 144 /* (LT_VCM_MAX_SEARCH + 1) rounded up to 16 */
#define LT_VCM_QP 4       /* points per pass of the accumulation (vcm_points) at most */
#define LT_VCM_NBL(n) ((size_t)(n) + 4) /* a thread's list of maps: n neighbours at most, 3 parts padded */
#define LT_VCM_WL(n) ((size_t)(n) / 2 + 3) /* and its pairs of weights per point */
#define LT_VCM_M2P(m2) (((size_t)(m2) + 31) & ~(size_t)31) /* a point's NCM and sums: whole blocks of acc_sums */

static void *pool_main(void *arg);
static void pool_run(cpu_ctx *c, struct cpu_job *j, int quit);

static void cpu_destroy(void *vctx)
{
  cpu_ctx *c = vctx;
  if (!c) return;
  if (c->npool > 0) { /* the workers end (pool_run quit), then joined */
    pool_run(c, NULL, 1);
    for (int t = 0; t < c->npool; t++) pthread_join(c->pool[t], NULL);
  }
  if (c->pool || c->wk) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
  }
  if (c->diag && c->gen > 0) {
    for (int t = 0; t < c->nthreads; t++) {
      const double *d = c->diag + LT_VCM_DIAG_N * t;
      fprintf(stderr,
              "vcm cpu diag: thread %2d  ncm %.3f  vcm %.3f  wait %.3f ms/pair  tasks %.1f/pair  in team at %.3f "
              "(max %.3f), first task at %.3f ms (%s)\n",
              t, 1e3 * d[0] / c->gen, 1e3 * d[1] / c->gen, 1e3 * d[2] / c->gen, d[3] / c->gen, 1e3 * d[4] / c->gen,
              1e3 * d[6], 1e3 * d[5] / c->gen, c->npool ? "pool" : "OpenMP team per pair");
    }
  }
  free(c->pool);
  free(c->wk);
  free(c->tct);
  free(c->diag);
  free(c->mag);
  free(c->pscratch);
  free(c->ncm);
  free(c->acc);
  free(c->map);
  free(c->nbl);
  free(c->wl);
  free(c->jl);
  free(c->cnt);
  free(c->zero);
  free(c->wt);
  free(c->wq);
  for (int k = 0; k < 2; k++) {
    free(c->rf[k]);
    free(c->q[k]);
  }
  free(c->sad);
  free(c->px);
  free(c->cstart);
  free(c->task);
  free(c->done);
  free(c->py);
  free(c->prev);
  free(c->cur);
  free(c);
}

/* Writes a 0 into every page of p[0 .. n) (buffers that hold zeros or
 * nothing yet): the pages are mapped here, by one thread, and not in the
 * first pair by all of them at once (page faults there contend; ~17 000
 * of them for the NCMs of 8192 points) */
static void touch_pages(void *p, size_t n)
{
  volatile char *b = p;
  for (size_t i = 0; i < n; i += 4096) b[i] = 0;
  if (n) b[n - 1] = 0;
}

/* The pool of cpu_run's teams with LT_VCM_CPU_POOL=1 (an experiment, off by
 * default): nthreads - 1 workers (pool_main; none at 1 thread). On the H100
 * host (16 cores, 2026-11-24 06:42 UTC, docs/PERFORMANCE.md) it took the
 * team's start from ~0.1 ms to ~0.002 ms per pair on Yosemite and the three
 * phases 1-7 % faster (medians of 5), but end to end 9-19 % slower on 4 of
 * 5 inputs: its workers spinning between pairs hold the cores that the
 * decoder and the CSV writer need (the output stage 3-4x longer). */
static int pool_start(cpu_ctx *c)
{
  const char *ev = getenv("LT_VCM_CPU_POOL"), *es = getenv("LT_VCM_CPU_SPIN"); /* experiment switches */
  if (c->nthreads < 2 || !ev || strcmp(ev, "1") != 0) return 0;
  /* more threads than cores: no spin (the spinning ones would hold the cores
   * that the others need), as libgomp's throttled spin */
  c->spin_s = (es && atof(es) >= 0.0 ? atof(es) : c->nthreads > omp_get_num_procs() ? 0.0 : LT_VCM_SPIN_MS) * 1e-3;
  pthread_mutex_init(&c->mu, NULL); /* destroyed by cpu_destroy where pool or wk is set */
  pthread_cond_init(&c->cv, NULL);
  c->pool = malloc((size_t)c->nthreads * sizeof *c->pool);
  c->wk = malloc((size_t)c->nthreads * sizeof *c->wk);
  if (!c->pool || !c->wk) {
    lt_error("vcm: out of memory for %d threads", c->nthreads);
    return LT_ERR_NOMEM;
  }
  for (int t = 1; t < c->nthreads; t++) {
    c->wk[t] = (cpu_worker){c, t};
    if (pthread_create(&c->pool[c->npool], NULL, pool_main, &c->wk[t]) != 0) break; /* fewer: OpenMP teams */
    c->npool++;
  }
  return 0;
}

static int cpu_create(void **out, const lt_vcm_params *p, int w, int h)
{
  *out = NULL;
  int err = lt_vcm_params_check(p, w, h);
  if (err) return err;
  cpu_ctx *c = calloc(1, sizeof *c);
  if (!c) goto nomem;
  c->p = *p;
  c->w = w;
  c->h = h;
  c->maxpts = lt_vcm_max_points(p);
  c->side = lt_vcm_map_side(p);
  c->nthreads = omp_get_max_threads();
  const char *ev = getenv("LT_VCM_CPU_RUN"); /* experiment switch: 1 = a pair per task (before) */
  c->run = ev && atoi(ev) > 0 ? atoi(ev) : LT_VCM_RUN;
  ev = getenv("LT_VCM_CPU_QP"); /* experiment switch: 2 = two points a pass (before) */
  c->qp = ev && atoi(ev) >= 1 && atoi(ev) <= LT_VCM_QP ? atoi(ev) : LT_VCM_QP;
  if (getenv("LT_VCM_CPU_DIAG")) c->diag = calloc((size_t)LT_VCM_DIAG_N * c->nthreads, sizeof *c->diag);
  c->tct = calloc((size_t)2 * c->nthreads, sizeof *c->tct);
  size_t npx = (size_t)w * h, m2 = (size_t)c->side * c->side;
  size_t r2 = (size_t)p->coherence_radius * p->coherence_radius + 1;
  c->mag = malloc(npx * sizeof *c->mag);
  c->pscratch = malloc((size_t)c->nthreads * lt_vcm_points_scratch(p, w));
  /* each NCM on its own cache lines (4225 offsets: 133 lines instead of
   * 133 loads across two lines each in acc_sums; -20 % accumulation at 1
   * thread, 640x480 with 8192 points on the dev VM) */
  size_t ncm_bytes = (size_t)c->maxpts * LT_VCM_M2P(m2) * sizeof *c->ncm;
  if (posix_memalign((void **)&c->ncm, 64, ncm_bytes)) c->ncm = NULL;
  c->acc = malloc((size_t)c->nthreads * LT_VCM_QP * LT_VCM_M2P(m2) * sizeof *c->acc);
  c->map = malloc((size_t)c->nthreads * m2 * sizeof *c->map);
  c->nbl = malloc((size_t)c->nthreads * LT_VCM_NBL(c->maxpts) * sizeof *c->nbl);
  c->wl = malloc((size_t)c->nthreads * LT_VCM_QP * LT_VCM_WL(c->maxpts) * sizeof *c->wl);
  c->jl = malloc((size_t)c->nthreads * 2 * c->maxpts * sizeof *c->jl);
  c->cnt = malloc((size_t)c->nthreads * LT_VCM_QP * m2 * sizeof *c->cnt);
  c->zero = calloc(m2, sizeof *c->zero);
  c->sad = malloc((size_t)c->nthreads * c->side * SAD_LANES * sizeof *c->sad);
  c->wt = malloc(r2 * sizeof *c->wt);
  c->wq = malloc(r2 * sizeof *c->wq);
  for (int k = 0; k < 2; k++) {
    c->rf[k] = malloc(npx * sizeof *c->rf[k]);
    c->q[k] = calloc(npx + LT_VCM_PAD8, 1);
  }
  c->px = malloc((size_t)c->maxpts * sizeof *c->px);
  c->cstart = malloc(((size_t)p->grid_x * p->grid_y + 1) * sizeof *c->cstart);
  c->py = malloc((size_t)c->maxpts * sizeof *c->py);
  /* NCM tasks <= maxpts / LT_VCM_NCM_TASK + 1, VCM tasks <= maxpts / 2 + grid_y */
  size_t ntask = (size_t)c->maxpts / LT_VCM_NCM_TASK + (size_t)c->maxpts / 2 + p->grid_y + 2;
  c->task = malloc(ntask * sizeof *c->task);
  c->done = calloc((size_t)c->maxpts / LT_VCM_NCM_TASK + 2, sizeof *c->done);
  c->prev = malloc((size_t)c->maxpts * sizeof *c->prev);
  c->cur = malloc((size_t)c->maxpts * sizeof *c->cur);
  if (!c->mag || !c->pscratch || !c->ncm || !c->acc || !c->map || !c->nbl || !c->wl || !c->jl || !c->cnt || !c->zero || !c->sad || !c->wt || !c->wq || !c->rf[0] ||
      !c->rf[1] || !c->q[0] || !c->q[1] || !c->px || !c->py || !c->prev || !c->cur ||
      !c->cstart || !c->task || !c->done || !c->tct)
    goto nomem;
  lt_vcm_weight_table(p, c->wt);
  if (!lt_vcm_weight_q(p, w, h, c->wq)) goto nomem;
  memset(c->ncm, 0, ncm_bytes); /* the pages mapped here (touch_pages), the padding's sums finite */
  touch_pages(c->mag, npx * sizeof *c->mag);
  touch_pages(c->acc, (size_t)c->nthreads * LT_VCM_QP * LT_VCM_M2P(m2) * sizeof *c->acc);
  touch_pages(c->map, (size_t)c->nthreads * m2 * sizeof *c->map);
  touch_pages(c->cnt, (size_t)c->nthreads * LT_VCM_QP * m2 * sizeof *c->cnt);
  for (int k = 0; k < 2; k++) {
    touch_pages(c->rf[k], npx * sizeof *c->rf[k]);
    touch_pages(c->q[k], npx + LT_VCM_PAD8);
  }
  if ((err = pool_start(c))) goto fail;
  *out = c;
  return 0;
nomem:
  lt_error("vcm: out of memory for %dx%d frames, %d points", w, h, lt_vcm_max_points(p));
  err = LT_ERR_NOMEM;
fail:
  cpu_destroy(c);
  return err;
}

/* Weighted mean of the previous vectors around (x, y); 0 when none is near. */
static int temporal_predict(const cpu_ctx *c, int x, int y, float *vx, float *vy)
{
  int R = c->p.coherence_radius;
  float sw = 0.0f, sx = 0.0f, sy = 0.0f;
  for (int k = 0; k < c->nprev; k++) {
    int ex = (int)c->prev[k].x - x, ey = (int)c->prev[k].y - y, d2 = ex * ex + ey * ey;
    if (d2 > R * R) continue;
    float wv = c->wt[d2];
    sw += wv;
    sx += wv * c->prev[k].dx;
    sy += wv * c->prev[k].dy;
  }
  if (!(sw > 0.0f)) return 0;
  *vx = sx / sw;
  *vy = sy / sw;
  return 1;
}

/* acc += wv * s over m2 offsets, in integers (lt_vcm_weight_q keeps every
 * sum within int32) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static void acc_add(int32_t *restrict acc, const uint16_t *restrict s, int32_t wv, int m2, int first)
{
  if (first)
    for (int o = 0; o < m2; o++) acc[o] = wv * s[o];
  else
    for (int o = 0; o < m2; o++) acc[o] += wv * s[o];
}

/* acc_add into two sums from one read of s; first: the sums start here */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static void acc_add2(int32_t *restrict a0, int32_t *restrict a1, const uint16_t *restrict s, int32_t w0, int32_t w1,
                     int m2, int first)
{
  if (first)
    for (int o = 0; o < m2; o++) {
      int32_t v = s[o];
      a0[o] = w0 * v;
      a1[o] = w1 * v;
    }
  else
    for (int o = 0; o < m2; o++) {
      int32_t v = s[o];
      a0[o] += w0 * v;
      a1[o] += w1 * v;
    }
}

/* The sums of up to four points over n neighbours' maps nb[k] in blocks of
 * 32 offsets (AVX-512BW) or 16 (AVX2), each block's sums in registers while
 * every neighbour is added: neighbours in pairs (k, k + 1), one
 * multiply-add per pair of 16-bit lanes (vpmaddwd: w_k s_k(o) + w_k+1
 * s_k+1(o) into 32 bits; similarities <= 32767 and weights <= 255 fit its
 * signed lanes), the weights of point p packed per pair in w[p][k / 2] (low
 * half k, high half k + 1). The points are two pairs, A (0, 1) and B (2,
 * 3); the list holds the neighbours of A alone (0 .. sa - 1), of both (sa
 * .. sb - 1) and of B alone (sb .. n - 1), each part of even length (a
 * neighbour of weight 0 fills an odd one; the weights of a pair in a part
 * not its own are 0 too). A map is read once for the points that use it:
 * 4 multiply-adds per pair of neighbours in the middle part. vpunpck{l,h}wd
 * leave a block's sums in lane order; they are put back in offset order
 * when stored (a[p], p < nq). The maps and a[p] have whole blocks
 * (LT_VCM_M2P), aligned: sums past m2 are not used. */
#if defined(HAVE_SAD_AVX2)
/* acc + the pairs' products of x and W: vpmaddwd + vpaddd, or vpdpwssd
 * (AVX-512 VNNI) in one instruction, exact in int32 either way */
#define MADD_PLAIN(acc, x, W) _mm512_add_epi32(acc, _mm512_madd_epi16(x, W))
/* (in asm: GCC 12 copies every sum to another register and back around
 * the builtin's tied operand, 16 moves per pair of neighbours) */
#define MADD_VNNI(acc, x, W)                                                                                     \
  ({                                                                                                             \
    __m512i acc_ = (acc);                                                                                        \
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc_) : "v"(x), "v"(W));                                               \
    acc_;                                                                                                        \
  })
/* point p's sums l, h + neighbours k, k + 1 (lo, hi) */
#define MADD_W(MADD, p, l, h)                                                                                    \
  {                                                                                                              \
    __m512i W = _mm512_set1_epi32((int)w[p][k / 2]);                                                            \
    l = MADD(l, lo, W);                                                                                          \
    h = MADD(h, hi, W);                                                                                          \
  }
/* neighbours k, k + 1 of block o into pair A's sums (AP) and B's (BP) */
#define MADD_PAIR(MADD, AP, BP)                                                                                  \
  {                                                                                                              \
    const uint16_t *sa_ = nb[k] + o, *sb_ = nb[k + 1] + o;                                                       \
    _mm_prefetch((const char *)(sa_ + LT_VCM_PF), _MM_HINT_T0);                                                  \
    _mm_prefetch((const char *)(sb_ + LT_VCM_PF), _MM_HINT_T0);                                                  \
    __m512i A = _mm512_loadu_si512((const void *)sa_), B = _mm512_loadu_si512((const void *)sb_);               \
    __m512i lo = _mm512_unpacklo_epi16(A, B), hi = _mm512_unpackhi_epi16(A, B);                                  \
    if (AP) {                                                                                                    \
      MADD_W(MADD, 0, l0, h0)                                                                                    \
      MADD_W(MADD, 1, l1, h1)                                                                                    \
    }                                                                                                            \
    if (BP) {                                                                                                    \
      MADD_W(MADD, 2, l2, h2)                                                                                    \
      MADD_W(MADD, 3, l3, h3)                                                                                    \
    }                                                                                                            \
  }
#define MADD_STORE(p, l, h)                                                                                      \
  if (nq > p) {                                                                                                  \
    __m512i v0 = _mm512_permutex2var_epi32(l, i0, h), v1 = _mm512_permutex2var_epi32(l, i1, h);                  \
    _mm512_storeu_si512((void *)(a[p] + o), v0);                                                                 \
    _mm512_storeu_si512((void *)(a[p] + o + 16), v1);                                                            \
    mx##p = _mm512_max_epi32(mx##p, _mm512_max_epi32(v0, v1));                                                    \
  }
#define MADD_AVX512_BODY(MADD)                                                                                   \
  {                                                                                                              \
    const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);                \
    const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);          \
    __m512i mx0 = _mm512_setzero_si512(), mx1 = mx0, mx2 = mx0, mx3 = mx0;                                            \
    for (int o = 0; o < m2; o += 32) {                                                                           \
      __m512i l0 = _mm512_setzero_si512(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;         \
      int k = 0;                                                                                                 \
      for (; k < sa; k += 2) MADD_PAIR(MADD, 1, 0)                                                               \
      for (; k < sb; k += 2) MADD_PAIR(MADD, 1, 1)                                                               \
      for (; k < n; k += 2) MADD_PAIR(MADD, 0, 1)                                                                \
      MADD_STORE(0, l0, h0)                                                                                      \
      MADD_STORE(1, l1, h1)                                                                                      \
      MADD_STORE(2, l2, h2)                                                                                      \
      MADD_STORE(3, l3, h3)                                                                                      \
    }                                                                                                            \
    amax[0] = _mm512_reduce_max_epi32(mx0);                                                                      \
    amax[1] = _mm512_reduce_max_epi32(mx1);                                                                      \
    amax[2] = _mm512_reduce_max_epi32(mx2);                                                                      \
    amax[3] = _mm512_reduce_max_epi32(mx3);                                                                      \
  }

__attribute__((target("avx512f,avx512bw"))) static void madd_avx512(int32_t *const *a, const uint16_t *const *nb,
                                                                     const uint32_t *const *w, int sa, int sb, int n,
                                                                     int m2, int nq, int32_t *amax)
MADD_AVX512_BODY(MADD_PLAIN)

/* madd_avx512 with AVX-512 VNNI (vpdpwssd: one instruction per product
 * pair and sum instead of two) */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
madd_vnni(int32_t *const *a, const uint16_t *const *nb, const uint32_t *const *w, int sa, int sb, int n, int m2, int nq,
          int32_t *amax)
MADD_AVX512_BODY(MADD_VNNI)

/* One pair of points a0 (and a1 where two) over np neighbours with AVX2,
 * 16 offsets a block (madd_avx512's layout; np even) */
__attribute__((target("avx2"))) static void madd_avx2(int32_t *restrict a0, int32_t *restrict a1,
                                                      const uint16_t *const *nb, const uint32_t *w0,
                                                      const uint32_t *w1, int np, int m2, int two)
{
  for (int o = 0; o < m2; o += 16) {
    __m256i l0 = _mm256_setzero_si256(), h0 = l0, l1 = l0, h1 = l0;
    for (int k = 0; k < np; k += 2) {
      const uint16_t *sb = nb[k + 1 < np ? k + 1 : k];
      __m256i A = _mm256_loadu_si256((const __m256i *)(nb[k] + o)), B = _mm256_loadu_si256((const __m256i *)(sb + o));
      __m256i lo = _mm256_unpacklo_epi16(A, B), hi = _mm256_unpackhi_epi16(A, B);
      __m256i W0 = _mm256_set1_epi32((int)w0[k / 2]);
      l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(lo, W0));
      h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(hi, W0));
      if (two) {
        __m256i W1 = _mm256_set1_epi32((int)w1[k / 2]);
        l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(lo, W1));
        h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(hi, W1));
      }
    }
    _mm256_storeu_si256((__m256i *)(a0 + o), _mm256_permute2x128_si256(l0, h0, 0x20));
    _mm256_storeu_si256((__m256i *)(a0 + o + 8), _mm256_permute2x128_si256(l0, h0, 0x31));
    if (two) {
      _mm256_storeu_si256((__m256i *)(a1 + o), _mm256_permute2x128_si256(l1, h1, 0x20));
      _mm256_storeu_si256((__m256i *)(a1 + o + 8), _mm256_permute2x128_si256(l1, h1, 0x31));
    }
  }
}
#endif

/* The accumulation's SIMD level: 3 AVX-512BW with VNNI (vpdpwssd), 2
 * AVX-512BW, 1 AVX2, 0 plain C (capped by lt_vcm_set_simd). */
static int madd_level(void);

/* a[p] (p < nq) = the sums over the neighbours' maps nb[k] with the
 * packed weights w[p] (madd_avx512's layout and parts sa, sb, n) at the
 * SIMD level lv, and with AVX-512 amax[p] their largest (of whole blocks:
 * the maps' padding is 0), else -1. Below AVX-512 one pair at a time: A over 0 .. sb - 1, B
 * over sa .. n - 1 (each holds its points themselves, so is not empty). */
static void acc_sums(int lv, int32_t *const *a, const uint16_t *const *nb, const uint32_t *const *w, int sa, int sb,
                     int n, int m2, int nq, int32_t *amax)
{
#if defined(HAVE_SAD_AVX2)
  if (lv == 3) {
    madd_vnni(a, nb, w, sa, sb, n, m2, nq, amax);
    return;
  }
  if (lv == 2) {
    madd_avx512(a, nb, w, sa, sb, n, m2, nq, amax);
    return;
  }
#endif
  for (int q = 0; q < LT_VCM_QP; q++) amax[q] = -1; /* not known: peak_full finds it */
  for (int g = 0; 2 * g < nq; g++) {
    int k0 = g ? sa : 0, np = (g ? n : sb) - k0, two = nq > 2 * g + 1;
    const uint16_t *const *b = nb + k0;
    const uint32_t *w0 = w[2 * g] + k0 / 2, *w1 = w[2 * g + 1] + k0 / 2;
    int32_t *a0 = a[2 * g], *a1 = a[2 * g + 1];
#if defined(HAVE_SAD_AVX2)
    if (lv == 1) {
      madd_avx2(a0, a1, b, w0, w1, np, m2, two);
      continue;
    }
#endif
    for (int k = 0; k < np; k++) {
      int32_t wa = (int32_t)(w0[k / 2] >> (k % 2 * 16) & 0xffffu), wb = (int32_t)(w1[k / 2] >> (k % 2 * 16) & 0xffffu);
      if (two)
        acc_add2(a0, a1, b[k], wa, wb, m2, k == 0);
      else
        acc_add(a0, b[k], wa, m2, k == 0);
    }
  }
}

/* row[0 .. n) += v (a neighbour's clamped rectangle: its top row, and -v
 * below its bottom row) */
LT_VCM_CLONES
static void row_add(int32_t *restrict row, int n, int32_t v)
{
  for (int l = 0; l < n; l++) row[l] += v;
}

/* The support from its row differences (row_add's): each row of the
 * side x side map plus the row above it, top to bottom */
LT_VCM_CLONES
static void rows_sum(int32_t *cnt, int side)
{
  for (int oy = 1; oy < side; oy++) {
    int32_t *restrict row = cnt + (size_t)oy * side;
    const int32_t *restrict up = row - side;
    for (int l = 0; l < side; l++) row[l] += up[l];
  }
}

/* V(o) = acc[o] / (C(o) LT_VCM_SIM_ONE) as a float, C(o) = full + cnt[o],
 * where 4 C(o) >= sw (LT_VCM_MIN_SUPPORT = 1/4) and C(o) > 0, else 0: the
 * integer sum and support each rounded to float once, then one division
 * (C LT_VCM_SIM_ONE <= INT32_MAX by lt_vcm_weight_q's scale). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static float normalise(const int32_t *restrict acc, float *restrict map, const int32_t *restrict cnt, int m2,
                       int32_t sw, int32_t full)
{
  /* the division on every lane, a divisor of 1 and the result's bits
   * masked to +0 where C(o) fails: vectorises (with ?: GCC keeps a branch
   * around the division, which may trap). Returns the map's maximum (its
   * values are +0 or positive, never NaN: the largest bits, map_max's) */
  uint32_t mx = 0;
  for (int o = 0; o < m2; o++) {
    int32_t cw = full + cnt[o], ok = -((4 * cw >= sw) & (cw > 0));
    union { float f; int32_t i; } den = {(float)(cw * LT_VCM_SIM_ONE)}, one = {1.0f}, q;
    den.i = (den.i & ok) | (one.i & ~ok);
    q.f = (float)acc[o] / den.f;
    q.i &= ok;
    map[o] = q.f;
    mx = (uint32_t)q.i > mx ? (uint32_t)q.i : mx;
  }
  float bv;
  memcpy(&bv, &mx, sizeof bv);
  return bv;
}

/* V_i(o) = sum_j w_ij s_j(o) / C(o), C(o) = sum of w_ij over the j whose
 * search rectangle holds o; 0 where C(o) < LT_VCM_MIN_SUPPORT sum_j w_ij.
 * Weights (lt_vcm_weight_q) and similarities are integers, so the sums are
 * exact and do not depend on the order of summation (CPU vs CUDA). */
/* Sub-window of pixel column x of w (cell g spans g*w/gn .. (g+1)*w/gn - 1). */
static int cell_of(int x, int w, int gn)
{
  int g = (int)(((long long)(x + 1) * gn + w - 1) / w) - 1;
  return g < 0 ? 0 : g >= gn ? gn - 1 : g;
}

/* max of acc[0 .. m2) (>= 0) */
LT_VCM_CLONES
static int32_t acc_max(const int32_t *restrict acc, int m2)
{
  int32_t m = 0;
  for (int o = 0; o < m2; o++) m = acc[o] > m ? acc[o] : m;
  return m;
}

/* Among the offsets with acc[o] >= lo, the one with the largest
 * acc[o] / den (rounded as normalise rounds it), then the smallest
 * |offset|^2, then the lowest index (peak_index's order); its value in *bv */
LT_VCM_CLONES
static int acc_peak(const int32_t *restrict acc, int side, int32_t lo, float den, float *bv)
{
  int R = side / 2, n = side * side, best = 0, bd = INT32_MAX;
  float bq = -1.0f;
  for (int i0 = 0; i0 < n; i0 += 32) { /* blocks of 32: the test for any hit vectorises */
    int i1 = i0 + 32 < n ? i0 + 32 : n, hit = 0;
    for (int i = i0; i < i1; i++) hit |= acc[i] >= lo;
    if (hit)
      for (int i = i0; i < i1; i++)
        if (acc[i] >= lo) {
          float q = (float)acc[i] / den;
          int ox = i % side - R, oy = i / side - R, d = ox * ox + oy * oy;
          if (q > bq || (q == bq && d < bd)) {
            best = i;
            bd = d;
            bq = q;
          }
        }
  }
  *bv = bq;
  return best;
}

/* The peak of a point whose every neighbour's search rectangle is whole
 * (C(o) = full = sw at every offset): V(o) = acc[o] / den with one den,
 * which grows with acc[o] (int to float and the division are both
 * monotone), so the offsets holding the maximum of V are among those
 * with acc[o] >= amax - amax / 2^16 - 1 (V equal to the maximum's needs
 * acc[o] within ~2^-21 of amax); only they are divided, then the peak's
 * neighbours for peak_at. The same vector and score as normalise +
 * peak_of (SIMD level 0 keeps those: test_vcm compares the two). */
static void peak_full(const cpu_ctx *c, const int32_t *acc, int32_t amax, float *map, int32_t full, float *bv,
                      float *dx, float *dy)
{
  int M = c->side;
  float den = (float)(full * LT_VCM_SIM_ONE);
  if (amax < 0) amax = acc_max(acc, M * M);
  int best = acc_peak(acc, M, amax - (amax >> 16) - 1, den, bv), bx = best % M, by = best / M;
  for (int y = by > 0 ? by - 1 : 0; y <= by + 1 && y < M; y++)
    for (int x = bx > 0 ? bx - 1 : 0; x <= bx + 1 && x < M; x++) map[y * M + x] = (float)acc[y * M + x] / den;
  peak_at(map, M, c->p.subpixel, best, dx, dy);
}

/* The end of point i's VCM from its sums acc (weights' sum sw, support
 * full + cnt): normalisation into map, temporal prior, peak, evidence. */
static void vcm_finish(const cpu_ctx *c, int i, const int32_t *acc, int32_t amax, float *map, const int32_t *cnt, int32_t sw,
                       int32_t full, lt_vcm_vector *out)
{
  int M = c->side, m2 = M * M, S2 = c->p.search / 2;
  float lam = c->p.temporal_weight, vx, vy, norm = 1.0f, bv, dx, dy, v;
  int prior = lam > 0.0f && temporal_predict(c, c->px[i], c->py[i], &vx, &vy);
  if (!prior && cnt == c->zero && full == sw && full > 0 && simd_max >= 1) {
    peak_full(c, acc, amax, map, full, &v, &dx, &dy); /* no division per offset */
    goto found;
  }
  bv = normalise(acc, map, cnt, m2, sw, full);
  if (prior) {
    float irho2 = 1.0f / (c->p.temporal_radius * c->p.temporal_radius);
    for (int o = 0; o < m2; o++) {
      float ex = (float)(o % M - S2) - vx, ey = (float)(o / M - S2) - vy;
      float q = 1.0f - (ex * ex + ey * ey) * irho2;
      if (q > 0.0f) map[o] += lam * q;
    }
    norm = 1.0f + lam;
    bv = map_max(map, m2);
  }
  v = peak_of(map, M, c->p.subpixel, bv, &dx, &dy);
found:
  out->x = (float)c->px[i];
  out->y = (float)c->py[i];
  out->dx = dx;
  out->dy = dy;
  out->score = v / norm;
  out->evidence = lt_vcm_evidence(c->q[0], c->q[1], c->w, c->h, out);
}

/* The VCMs of points i .. i + np - 1 (np 1 .. LT_VCM_QP: consecutive
 * points, in the same or neighbouring sub-windows of a row, which share
 * most neighbours), each into its own acc / cnt (whole blocks apart): the
 * neighbours j of the sub-windows the radius reaches around any of them,
 * first gathered in jl with their part (bit 1: near point 0 or 1, bit 2:
 * near point 2 or 3), then listed in nbl by part (acc_sums' A, both, B)
 * with their weights packed in wl + p wl_n (0 for a j beyond point p's
 * radius), then their sums by acc_sums, each NCM read once for all the
 * points that use it. */
static void vcm_points(const cpu_ctx *c, int i, int np, int32_t *acc, float *map, int32_t *cnt, const uint16_t **nbl,
                       uint32_t *wl, size_t wl_n, int *jl, lt_vcm_vector *out)
{
  int R = c->p.coherence_radius, M = c->side, m2 = M * M, S2 = c->p.search / 2, gx = c->p.grid_x;
  int32_t sw[LT_VCM_QP] = {0}, full[LT_VCM_QP] = {0};
  int nc = 0, part[4] = {0, 0, 0, 0}, partial[LT_VCM_QP] = {0}; /* candidates kept, per part; cnt[k] set (else C(o) = full: c->zero) */
  size_t m2p = LT_VCM_M2P(m2);
  int xlo = c->px[i], xhi = xlo, ylo = c->py[i], yhi = ylo;
  for (int k = 1; k < np; k++) {
    xlo = c->px[i + k] < xlo ? c->px[i + k] : xlo;
    xhi = c->px[i + k] > xhi ? c->px[i + k] : xhi;
    ylo = c->py[i + k] < ylo ? c->py[i + k] : ylo;
    yhi = c->py[i + k] > yhi ? c->py[i + k] : yhi;
  }
  int cx0 = cell_of(xlo - R > 0 ? xlo - R : 0, c->w, gx), cx1 = cell_of(xhi + R, c->w, gx);
  int cy0 = cell_of(ylo - R > 0 ? ylo - R : 0, c->h, c->p.grid_y), cy1 = cell_of(yhi + R, c->h, c->p.grid_y);
  for (int cy = cy0; cy <= cy1; cy++)
    for (int j = c->cstart[cy * gx + cx0]; j < c->cstart[cy * gx + cx1 + 1]; j++) {
      int d2[LT_VCM_QP], near[LT_VCM_QP], g = 0;
      for (int k = 0; k < np; k++) {
        int ex = c->px[j] - c->px[i + k], ey = c->py[j] - c->py[i + k];
        d2[k] = ex * ex + ey * ey;
        near[k] = d2[k] <= R * R;
        if (near[k]) g |= k < 2 ? 1 : 2;
      }
      if (!g) continue;
      jl[2 * nc] = j;
      jl[2 * nc + 1] = g;
      nc++;
      part[g]++;
      int r[4];
      lt_vcm_search_rect(&c->p, c->w, c->h, c->px[j], c->py[j], r);
      int isfull = r[0] == -S2 && r[1] == S2 && r[2] == -S2 && r[3] == S2;
      for (int k = 0; k < np; k++) {
        if (!near[k]) continue;
        int32_t wq = c->wq[d2[k]];
        sw[k] += wq;
        if (isfull) {
          full[k] += wq;
          continue;
        }
        if (!partial[k]) {
          memset(cnt + (size_t)k * m2, 0, sizeof *cnt * m2);
          partial[k] = 1;
        }
        /* the rectangle as differences between rows: +wq on its top row,
         * -wq on the row below it (rows_sum adds them up: the same integers) */
        row_add(cnt + (size_t)k * m2 + (r[2] + S2) * M + S2 + r[0], r[1] - r[0] + 1, wq);
        if (r[3] + S2 + 1 < M) row_add(cnt + (size_t)k * m2 + (r[3] + S2 + 1) * M + S2 + r[0], r[1] - r[0] + 1, -wq);
      }
    }
  for (int k = 0; k < np; k++)
    if (partial[k]) rows_sum(cnt + (size_t)k * m2, M);
  /* the list: A's alone, both, B's alone, each of even length */
  int at[4];
  at[1] = 0;
  at[3] = (part[1] + 1) & ~1;
  at[2] = at[3] + ((part[3] + 1) & ~1);
  int sa = at[3], sb = at[2], n = sb + ((part[2] + 1) & ~1);
  for (int e = 0; e < nc; e++) {
    int j = jl[2 * e], k = at[jl[2 * e + 1]]++;
    nbl[k] = c->ncm + (size_t)j * m2p;
    for (int q = 0; q < LT_VCM_QP; q++) {
      uint32_t wv = 0;
      if (q < np) {
        int ex = c->px[j] - c->px[i + q], ey = c->py[j] - c->py[i + q], d2 = ex * ex + ey * ey;
        wv = d2 <= R * R ? (uint32_t)c->wq[d2] : 0u;
      }
      uint32_t *wp = wl + (size_t)q * wl_n + k / 2;
      *wp = k % 2 ? *wp | wv << 16 : wv;
    }
  }
  for (int g = 1; g < 4; g++) /* an odd part: its last map again, at weight 0 (the pair's high half) */
    if (part[g] % 2) nbl[at[g]] = nbl[at[g] - 1];
  int32_t *a[LT_VCM_QP];
  const uint32_t *w[LT_VCM_QP];
  for (int q = 0; q < LT_VCM_QP; q++) {
    a[q] = acc + (size_t)q * m2p;
    w[q] = wl + (size_t)q * wl_n;
  }
  int32_t amax[LT_VCM_QP];
  acc_sums(madd_level(), a, nbl, w, sa, sb, n, m2, np, amax); /* n >= 2: i itself */
  for (int k = 0; k < np; k++)
    vcm_finish(c, i + k, a[k], amax[k], map, partial[k] ? cnt + (size_t)k * m2 : c->zero, sw[k], full[k], out + k);
}

/* cpu_run's work, one stream of tasks per pair that the threads take in
 * order from one counter (no barrier between the phases): NCM tasks of
 * LT_VCM_NCM_TASK points and VCM tasks of up to c->run pairs of points (a
 * pair: one or two points that vcm_points sums together) along a
 * sub-window row, each VCM task after every NCM task that holds a map it
 * reads. The NCMs are made a few sub-window
 * rows ahead of the VCMs that read them, so those are still in the cache. */
/* The task list of n points (cstart: the points of each sub-window) into
 * c->task (begin, end, and the NCM tasks before it; negative begin - 1 for
 * an NCM task); returns the number of tasks. */
static int build_tasks(cpu_ctx *c, int n, int nthreads)
{
  int gx = c->p.grid_x, gy = c->p.grid_y, h = c->h, nt = 0, made = 0, nn = 0;
  for (int cy = 0; cy < gy; cy++) {
    /* the NCMs that the VCMs of rows cy and cy + 1 read (one row ahead, so
     * that a VCM task seldom waits for an NCM task still running) */
    int ahead = cy + 1 < gy ? cy + 1 : cy, need = 0;
    for (int r = cy; r <= ahead; r++) {
      int ylast = (int)((long long)(r + 1) * h / gy) - 1;
      int nr = c->cstart[(cell_of(ylast + c->p.coherence_radius, h, gy) + 1) * gx];
      if (r == cy) need = (nr + LT_VCM_NCM_TASK - 1) / LT_VCM_NCM_TASK; /* the NCM tasks row cy waits for */
      for (; made < nr; made += LT_VCM_NCM_TASK, nn++, nt++) {
        c->task[nt].begin = -made - 1;
        c->task[nt].end = made + LT_VCM_NCM_TASK < n ? made + LT_VCM_NCM_TASK : n;
        c->task[nt].need = nn;
      }
    }
    int i0 = c->cstart[cy * gx], i1 = c->cstart[(cy + 1) * gx];
    for (int i = i0, run; i < i1; i += 2 * run, nt++) {
      /* up to c->run pairs; fewer once less than 4 full runs per thread
       * are left, so that the threads end together */
      run = (n - i) / (8 * nthreads);
      run = run < 1 ? 1 : run > c->run ? c->run : run;
      c->task[nt].begin = i;
      c->task[nt].end = i + 2 * run < i1 ? i + 2 * run : i1;
      c->task[nt].need = need;
    }
  }
  return nt;
}

/* Waits until the NCM tasks 0 .. need - 1 of pair gen are done (*known: the
 * first ones this thread has seen done; spin_wait). */
static void wait_ncm(const int *done, int need, int gen, int *known)
{
  for (unsigned it = 0; *known < need; it++) {
    if (__atomic_load_n(&done[*known], __ATOMIC_ACQUIRE) == gen) {
      (*known)++;
      it = 0;
    } else
      spin_wait(it);
  }
}

/* Frame t is the last pair's I1 (its rounded copies move to slot 0), or 0
 * after the error of a first pair without frame t. */
static int keep_last(cpu_ctx *c)
{
  if (!c->have_last) {
    lt_error("vcm: internal: the first pair needs its frame t (I0 NULL)");
    return LT_ERR_INTERNAL;
  }
  float *tf = c->rf[0];
  uint8_t *tq = c->q[0];
  c->rf[0] = c->rf[1];
  c->q[0] = c->q[1];
  c->rf[1] = tf;
  c->q[1] = tq;
  return 0;
}

/* cpu_pair8's frames c->in8 (where not NULL) copied into q and rf by
 * every thread of cpu_run's team (st: rows taken, rows done; zero before),
 * in tasks of LT_VCM_PTS_ROWS rows; returns when all are in */
static void bytes_in(cpu_ctx *c, int st[2])
{
  int w = c->w, h = c->h;
  for (int y0; (y0 = __atomic_fetch_add(&st[0], LT_VCM_PTS_ROWS, __ATOMIC_RELAXED)) < h;) {
    int y1 = y0 + LT_VCM_PTS_ROWS < h ? y0 + LT_VCM_PTS_ROWS : h;
    size_t a = (size_t)y0 * w, n = (size_t)(y1 - y0) * w;
    for (int k = 0; k < 2; k++)
      if (c->in8[k]) {
        uint8_t *restrict q = c->q[k] + a;
        float *restrict rf = c->rf[k] + a;
        memcpy(q, c->in8[k] + a, n);
        for (size_t i = 0; i < n; i++) rf[i] = (float)q[i];
      }
    __atomic_fetch_add(&st[1], y1 - y0, __ATOMIC_RELEASE);
  }
  wait_count(&st[1], h);
}

static int cpu_run(cpu_ctx *c, lt_vcm_vector *out, int cap, int *nout, double t0);

static int cpu_pair(void *vctx, const float *I0, const float *I1, lt_vcm_vector *out, int cap,
                    int *nout)
{
  cpu_ctx *c = vctx;
  size_t npx = (size_t)c->w * c->h;
  double t0 = lt_now();
  int err;
  if (!I0 || (I0 == c->last_I1 && I0 != I1)) { /* the last pair's I1, already rounded */
    if ((err = keep_last(c))) return err;
  } else
    lt_vcm_round8(I0, npx, c->rf[0], c->q[0]);
  lt_vcm_round8(I1, npx, c->rf[1], c->q[1]);
  c->in8[0] = c->in8[1] = NULL; /* nothing for cpu_run to copy */
  c->last_I1 = I1;
  c->have_last = 1;
  return cpu_run(c, out, cap, nout, t0);
}

static int cpu_pair8(void *vctx, const uint8_t *Q0, const uint8_t *Q1, lt_vcm_vector *out, int cap, int *nout)
{
  cpu_ctx *c = vctx;
  double t0 = lt_now();
  int err;
  if (!Q0 && (err = keep_last(c))) return err;
  c->in8[0] = Q0; /* copied by cpu_run's team (bytes_in) */
  c->in8[1] = Q1;
  c->last_I1 = NULL; /* no float buffer holds it */
  c->have_last = 1;
  return cpu_run(c, out, cap, nout, t0);
}

/* The shared state of one pair's team (cpu_team) */
typedef struct cpu_job {
  double t0, t1;  /* the pair's start (loading), the tasks listed */
  int gen, n, ntask, next, ready;
  pts_team st;
  int in8[2];     /* bytes_in's rows taken, done */
  double *tct;    /* per thread correlation, accumulation seconds (2 each) */
} cpu_job;

/* One thread (tid of nt) of a pair's team, no barrier inside: pair8's
 * frames copied in (bytes_in), the points (points_team); the thread that
 * finishes them packs them and lists the tasks, the others wait for that;
 * then the threads take the tasks in list order (cpu_ctx.task): each NCM
 * task marks itself done with this pair's number, each VCM task first
 * waits for the NCM tasks before it in the list. The same maps and sums as
 * one pass over all NCMs and then all VCMs. */
static void cpu_team(cpu_ctx *c, cpu_job *j, int tid, int nt)
{
  int w = c->w, h = c->h, M = c->side, gen = j->gen;
  size_t m2 = (size_t)M * M;
  double tc = 0.0, tv = 0.0;
  double *dg = c->diag ? c->diag + LT_VCM_DIAG_N * tid : NULL; /* LT_VCM_CPU_DIAG */
  if (dg) {
    double in = lt_now() - j->t0;
    dg[4] += in;
    dg[6] = in > dg[6] ? in : dg[6];
  }
  if (c->in8[1]) bytes_in(c, j->in8);
  if (points_team(c->rf[0], c->rf[1], w, h, &c->p, c->mag, c->pscratch, c->px, &j->st, tid)) {
    j->n = points_pack(c->p.grid_x * c->p.grid_y, c->p.points_per_cell, w, c->px, c->py, c->cstart);
    j->ntask = build_tasks(c, j->n, nt);
    j->t1 = lt_now();
    __atomic_store_n(&j->ready, 1, __ATOMIC_RELEASE);
  } else
    wait_count(&j->ready, 1);
  int ntask = j->ntask;
  uint16_t *sad = c->sad + (size_t)tid * M * SAD_LANES;
  int32_t *acc = c->acc + (size_t)tid * LT_VCM_QP * LT_VCM_M2P(m2);
  float *map = c->map + (size_t)tid * m2;
  size_t wl_n = LT_VCM_WL(c->maxpts); /* a thread's neighbour list: maps and packed weights */
  const uint16_t **nbl = c->nbl + (size_t)tid * LT_VCM_NBL(c->maxpts);
  uint32_t *wl = c->wl + (size_t)tid * LT_VCM_QP * wl_n;
  int *jl = c->jl + (size_t)tid * 2 * c->maxpts;
  int32_t *cnt = c->cnt + (size_t)tid * LT_VCM_QP * m2;
  int known = 0;
  if (dg) dg[5] += lt_now() - j->t0;
  size_t m2p = LT_VCM_M2P(m2);
  for (int k; (k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < ntask;) {
    const cpu_task *tk = &c->task[k];
    double ts = lt_now();
    if (tk->begin < 0) {
      for (int i = -tk->begin - 1; i < tk->end; i++)
        lt_vcm_ncm8(c->q[0], c->q[1], c->rf[0], c->rf[1], w, h, c->px[i], c->py[i], &c->p, sad,
                    c->ncm + (size_t)i * m2p);
      __atomic_store_n(&c->done[tk->need], gen, __ATOMIC_RELEASE);
      tc += lt_now() - ts;
    } else {
      wait_ncm(c->done, tk->need, gen, &known);
      if (dg) dg[2] += lt_now() - ts;
      for (int i = tk->begin, np; i < tk->end; i += np) {
        np = tk->end - i < c->qp ? tk->end - i : c->qp;
        vcm_points(c, i, np, acc, map, cnt, nbl, wl, wl_n, jl, &c->cur[i]);
      }
      tv += lt_now() - ts;
    }
    if (dg) dg[3] += 1.0;
  }
  j->tct[2 * tid] = tc;
  j->tct[2 * tid + 1] = tv;
  if (dg) {
    dg[0] += tc;
    dg[1] += tv;
  }
}

/* The pool's threads 1 .. npool (pool_start): each runs cpu_team for every
 * job (c->jgen raised by pool_run), then waits for the next one: spinning
 * (pause) for up to c->spin_s seconds after its last job, yielding the core
 * now and then, then asleep on c->cv. The same team for every pair: no
 * team start-up per pair. */

static void *pool_main(void *arg)
{
  const cpu_worker *wk = arg;
  cpu_ctx *c = wk->c;
  int seen = 0;
  for (;;) {
    double since = lt_now();
    for (unsigned it = 1; __atomic_load_n(&c->jgen, __ATOMIC_ACQUIRE) == seen; it++) {
      if (it % 1024 == 0 && lt_now() - since > c->spin_s) {
        pthread_mutex_lock(&c->mu);
        __atomic_add_fetch(&c->sleepers, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&c->jgen, __ATOMIC_SEQ_CST) == seen) pthread_cond_wait(&c->cv, &c->mu);
        __atomic_sub_fetch(&c->sleepers, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&c->mu);
        break;
      }
      if (it % 4096 == 0)
        sched_yield(); /* now and then: a thread waiting for a core gets it */
#if defined(__x86_64__) || defined(__i386__)
      else
        __builtin_ia32_pause();
#endif
    }
    seen = __atomic_load_n(&c->jgen, __ATOMIC_ACQUIRE);
    if (c->quit) return NULL;
    cpu_team(c, c->job, wk->tid, c->npool + 1);
    __atomic_sub_fetch(&c->jleft, 1, __ATOMIC_RELEASE);
  }
}

/* Starts job j on the pool (threads 1 .. npool) and runs its thread 0 here;
 * returns when every thread has finished it. quit: the workers end instead. */
static void pool_run(cpu_ctx *c, cpu_job *j, int quit)
{
  c->job = j;
  c->quit = quit;
  c->jleft = c->npool;
  __atomic_add_fetch(&c->jgen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&c->sleepers, __ATOMIC_SEQ_CST) > 0) { /* pool_main's sleep: the gen under mu */
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
  if (quit) return;
  cpu_team(c, j, 0, c->npool + 1);
  for (unsigned it = 0; __atomic_load_n(&c->jleft, __ATOMIC_ACQUIRE) > 0; it++) spin_wait(it);
}

/* The stages on the loaded frames rf / q (t0: when loading began): one
 * team for the pair, the pool (pool_start) when there is one with the
 * pair's thread count, else an OpenMP team. */
static int cpu_run(cpu_ctx *c, lt_vcm_vector *out, int cap, int *nout, double t0)
{
  int nt = omp_get_max_threads() < c->nthreads ? omp_get_max_threads() : c->nthreads;
  cpu_job j = {.t0 = t0, .t1 = t0, .gen = ++c->gen, .tct = c->tct};
  if (nt == 1)
    cpu_team(c, &j, 0, 1);
  else if (c->npool + 1 == nt)
    pool_run(c, &j, 0);
  else {
#pragma omp parallel num_threads(nt)
    cpu_team(c, &j, omp_get_thread_num(), omp_get_num_threads());
  }
  double tc = 0.0, tv = 0.0;
  for (int t = 0; t < c->nthreads; t++) { /* tct: zero for threads not in the team */
    tc += c->tct[2 * t];
    tv += c->tct[2 * t + 1];
    c->tct[2 * t] = c->tct[2 * t + 1] = 0.0;
  }
  /* the two phases overlap: their wall time split by the threads' time in
   * each (a VCM task's wait for its NCMs counted as accumulation) */
  double t3 = lt_now(), fc = tc + tv > 0.0 ? tc / (tc + tv) : 0.0;
  c->t[0] += j.t1 - t0;
  c->t[1] += (t3 - j.t1) * fc;
  c->t[2] += (t3 - j.t1) * (1.0 - fc);
  int n = j.n, k = n < cap ? n : cap;
  memcpy(out, c->cur, (size_t)k * sizeof *out);
  lt_vcm_vector *t = c->prev; /* this field is the next pair's prior */
  c->prev = c->cur;
  c->cur = t;
  c->nprev = n;
  *nout = k;
  return 0;
}

static void cpu_phases(void *vctx, double s[3])
{
  const cpu_ctx *c = vctx;
  for (int k = 0; k < 3; k++) s[k] = c->t[k];
}

const lt_vcm_backend lt_vcm_backend_cpu = {"cpu", cpu_create, cpu_destroy, cpu_pair, cpu_phases, cpu_pair8, NULL, NULL, NULL};
