/* corr.c - Pearson correlation template matching on the CPU (SPEC 4.2;
 * seeds/001 figs. 1-2): the reference by the definition (exact) and the fast
 * implementation behind lt_tumor_backend_cpu. Conventions (outside = -1,
 * flat = 0, clamp) are in corr.h.
 *
 * Fast, after seeds/001 fig. 2: the template is static, so Tc = T - mean T,
 * sum Tc and A_D = sum Tc^2 are computed once. Per frame and template, two
 * integral images of the template's search region (the tw+2H x th+2V block,
 * clipped to the frame) give every window's sum and sum of squares in four
 * look-ups; they hold B - 128 in double, so for 8-bit frames every entry is an
 * exact integer and the window variance S2 - S1^2/n loses nothing. Only the
 * cross term is evaluated per shift, a row of shifts (template, dy) per
 * OpenMP iteration. 8-bit data (template and search region all integers in
 * 0..255, the usual case): sum T*B exactly in integers, 16-bit products
 * summed in 32-bit SIMD lanes, four shifts per pass over the template, and
 * r from the exact integer sums (sum Tc (B - mean B) = sum T*B - sum T sum B / n).
 * Otherwise sum Tc*B in double with four partial sums over the columns
 * (j mod 4) added in a fixed order. Either way the same bits for any thread
 * count, since each score is computed whole by one thread. */
#include "tumor/corr.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

int lt_tumor_setup_check(const lt_tumor_setup *s)
{
  if (!s || s->frame_w < 1 || s->frame_h < 1 || s->frame_w > 65536 || s->frame_h > 65536) {
    lt_error("tumor: frame size %dx%d out of range", s ? s->frame_w : 0, s ? s->frame_h : 0);
    return LT_ERR_USAGE;
  }
  if (s->ntemplates < 1 || !s->tpl) {
    lt_error("tumor: no templates");
    return LT_ERR_USAGE;
  }
  if (s->shift_v < 0 || s->shift_h < 0 || s->shift_v > LT_TUMOR_MAX_SHIFT || s->shift_h > LT_TUMOR_MAX_SHIFT) {
    lt_error("tumor: shift range +-%d/+-%d out of range (0..%d)", s->shift_v, s->shift_h, LT_TUMOR_MAX_SHIFT);
    return LT_ERR_USAGE;
  }
  for (int k = 0; k < s->ntemplates; k++) {
    const lt_tumor_template *t = &s->tpl[k];
    if (!t->px || t->w < 1 || t->h < 1 || t->w > LT_TUMOR_MAX_SIDE || t->h > LT_TUMOR_MAX_SIDE) {
      lt_error("tumor: template %d: size %dx%d out of range (1..%d)", k, t->w, t->h, LT_TUMOR_MAX_SIDE);
      return LT_ERR_USAGE;
    }
    if (abs(t->x) > 4 * 65536 || abs(t->y) > 4 * 65536) {
      lt_error("tumor: template %d: position %d,%d out of range", k, t->x, t->y);
      return LT_ERR_USAGE;
    }
  }
  return 0;
}

int lt_tumor_npos(const lt_tumor_setup *s)
{
  return (2 * s->shift_v + 1) * (2 * s->shift_h + 1);
}

int lt_tumor_inside(const lt_tumor_setup *s, int k, int dy, int dx)
{
  const lt_tumor_template *t = &s->tpl[k];
  int r = t->y + dy, c = t->x + dx;
  return r >= 0 && c >= 0 && r + t->h <= s->frame_h && c + t->w <= s->frame_w;
}

/* The final step shared by both implementations: cross = sum Tc (B - mean B),
 * ta = sum Tc^2, bb = sum (B - mean B)^2. */
static double score_of(double cross, double ta, double bb, int n)
{
  const double flat = LT_TUMOR_FLAT_VAR * n;
  if (ta <= flat || bb <= flat) return 0.0;
  double r = cross / sqrt(ta * bb);
  return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}

double lt_tumor_corr2(const float *a, const float *b, int w, int h, size_t bstride)
{
  const int n = w * h;
  double sa = 0, sb = 0;
  for (int i = 0; i < h; i++)
    for (int j = 0; j < w; j++) {
      sa += a[(size_t)i * w + j];
      sb += b[i * bstride + j];
    }
  const double ma = sa / n, mb = sb / n;
  double cross = 0, aa = 0, bb = 0;
  for (int i = 0; i < h; i++)
    for (int j = 0; j < w; j++) {
      double da = a[(size_t)i * w + j] - ma, db = b[i * bstride + j] - mb;
      cross += da * db;
      aa += da * da;
      bb += db * db;
    }
  return score_of(cross, aa, bb, n);
}

int lt_tumor_corr_exact(const lt_tumor_setup *s, const float *frame, double *scores)
{
  int e = lt_tumor_setup_check(s);
  if (e) return e;
  const int npos = lt_tumor_npos(s), V = s->shift_v, H = s->shift_h;
  for (int k = 0; k < s->ntemplates; k++) {
    const lt_tumor_template *t = &s->tpl[k];
    for (int dy = -V; dy <= V; dy++)
      for (int dx = -H; dx <= H; dx++) {
        double *out = &scores[(size_t)k * npos + (size_t)(dy + V) * (2 * H + 1) + (dx + H)];
        if (!lt_tumor_inside(s, k, dy, dx)) {
          *out = LT_TUMOR_OUTSIDE;
          continue;
        }
        const float *win = frame + (size_t)(t->y + dy) * s->frame_w + (t->x + dx);
        *out = lt_tumor_corr2(t->px, win, t->w, t->h, (size_t)s->frame_w);
      }
  }
  return 0;
}

/* ---- fast ---------------------------------------------------------------- */

/* Offset subtracted before integrating: centres 0..255 on zero. */
#define LT_TUMOR_OFFSET 128.0

/* The 8-bit path needs exact 128-bit products of the sums. */
#if defined(__SIZEOF_INT128__)
#define LT_TUMOR_INT8 1
typedef __int128 lt_i128;
#else
#define LT_TUMOR_INT8 0
#endif
/* 8-bit rows are padded with zeros to a multiple of LT_TUMOR_PADW pixels (one
 * AVX2 register of 16-bit lanes); the region copy has LT_TUMOR_PADB more
 * columns so that a block of LT_TUMOR_NB shifts never reads past a row. */
#define LT_TUMOR_PADW 16
#define LT_TUMOR_NB 4
#define LT_TUMOR_PADB (LT_TUMOR_PADW + LT_TUMOR_NB)

typedef struct tpl_state {
  int w, h, x, y, n;
  double *tc;            /* w*h: T - mean T */
  double sum_tc, ta;     /* sum Tc (rounding residue), sum Tc^2 */
  int rx, ry, rw, rh;    /* search region clipped to the frame */
  double *i1, *i2;       /* (rw+1)*(rh+1) integral images of B-128, (B-128)^2 */
  /* 8-bit path (t8: every template pixel an integer in 0..255) */
  int t8, wp, bs;        /* wp: padded width; bs: row stride of b16 */
  int rows_blk;          /* rows whose 32-bit partial sums cannot overflow */
  int b8;                /* this frame's search region is 8-bit too */
  int16_t *t16;          /* h*wp, T, zero padded */
  int16_t *b16;          /* rh*bs, the search region, zero padded */
  int64_t st;            /* sum T */
  double ta8;            /* (n sum T^2 - (sum T)^2) / n, from exact integers */
} tpl_state;

struct lt_tumor_cpu {
  lt_tumor_setup s;      /* copy; s.tpl points to nothing after create */
  lt_tumor_template *geom; /* geometry of each template (px NULL), for lt_tumor_inside */
  tpl_state *t;
};

void lt_tumor_cpu_destroy(lt_tumor_cpu *c)
{
  if (!c) return;
  if (c->t)
    for (int k = 0; k < c->s.ntemplates; k++) {
      free(c->t[k].tc);
      free(c->t[k].i1);
      free(c->t[k].i2);
      free(c->t[k].t16);
      free(c->t[k].b16);
    }
  free(c->t);
  free(c->geom);
  free(c);
}

static void region_of(const lt_tumor_setup *s, const lt_tumor_template *t, tpl_state *st)
{
  int x0 = t->x - s->shift_h, y0 = t->y - s->shift_v;
  int x1 = t->x + s->shift_h + t->w, y1 = t->y + s->shift_v + t->h; /* exclusive */
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > s->frame_w) x1 = s->frame_w;
  if (y1 > s->frame_h) y1 = s->frame_h;
  st->rx = x0;
  st->ry = y0;
  st->rw = x1 > x0 ? x1 - x0 : 0;
  st->rh = y1 > y0 ? y1 - y0 : 0;
}

static int tpl_init(const lt_tumor_setup *s, int k, tpl_state *st)
{
  const lt_tumor_template *t = &s->tpl[k];
  st->w = t->w;
  st->h = t->h;
  st->x = t->x;
  st->y = t->y;
  st->n = t->w * t->h;
  region_of(s, t, st);
  st->tc = malloc(sizeof(double) * st->n);
  size_t ni = (size_t)(st->rw + 1) * (st->rh + 1);
  st->i1 = malloc(sizeof(double) * ni);
  st->i2 = malloc(sizeof(double) * ni);
  if (!st->tc || !st->i1 || !st->i2) {
    lt_error("out of memory (tumor template %d, %dx%d)", k, t->w, t->h);
    return LT_ERR_NOMEM;
  }
  double sum = 0;
  for (int i = 0; i < st->n; i++) sum += t->px[i];
  const double mean = sum / st->n;
  double stc = 0, ta = 0;
  for (int i = 0; i < st->n; i++) {
    st->tc[i] = t->px[i] - mean;
    stc += st->tc[i];
    ta += st->tc[i] * st->tc[i];
  }
  st->sum_tc = stc;
  st->ta = ta;
  int t8 = LT_TUMOR_INT8;
  for (int i = 0; i < st->n && t8; i++)
    t8 = t->px[i] >= 0.0f && t->px[i] <= 255.0f && t->px[i] == (float)(int)t->px[i];
  if (!t8) return 0;
  st->wp = (t->w + LT_TUMOR_PADW - 1) / LT_TUMOR_PADW * LT_TUMOR_PADW;
  st->bs = st->rw + LT_TUMOR_PADB;
  /* a block's 32-bit sum is at most rows * wp * 255^2 */
  st->rows_blk = (int)(INT32_MAX / ((int64_t)st->wp * 255 * 255));
  st->t16 = calloc((size_t)st->h * st->wp, sizeof *st->t16);
  st->b16 = calloc((size_t)(st->rh > 0 ? st->rh : 1) * st->bs, sizeof *st->b16);
  if (!st->t16 || !st->b16) {
    lt_error("out of memory (tumor template %d, %dx%d)", k, t->w, t->h);
    return LT_ERR_NOMEM;
  }
#if LT_TUMOR_INT8
  int64_t s1 = 0, s2 = 0;
  for (int i = 0; i < st->h; i++)
    for (int j = 0; j < st->w; j++) {
      int v = (int)t->px[(size_t)i * st->w + j];
      st->t16[(size_t)i * st->wp + j] = (int16_t)v;
      s1 += v;
      s2 += v * v;
    }
  st->st = s1;
  st->ta8 = (double)((lt_i128)st->n * s2 - (lt_i128)s1 * s1) / st->n;
#endif
  st->t8 = 1;
  return 0;
}

int lt_tumor_cpu_create(lt_tumor_cpu **out, const lt_tumor_setup *s)
{
  *out = NULL;
  int e = lt_tumor_setup_check(s);
  if (e) return e;
  lt_tumor_cpu *c = calloc(1, sizeof *c);
  if (!c) goto nomem;
  c->s = *s;
  c->t = calloc((size_t)s->ntemplates, sizeof *c->t);
  c->geom = calloc((size_t)s->ntemplates, sizeof *c->geom);
  if (!c->t || !c->geom) goto nomem;
  for (int k = 0; k < s->ntemplates; k++) {
    c->geom[k] = s->tpl[k];
    c->geom[k].px = NULL;
    if ((e = tpl_init(s, k, &c->t[k]))) {
      lt_tumor_cpu_destroy(c);
      return e;
    }
  }
  c->s.tpl = c->geom;
  *out = c;
  return 0;
nomem:
  lt_error("out of memory (tumor CPU set-up)");
  lt_tumor_cpu_destroy(c);
  return LT_ERR_NOMEM;
}

/* Integral images of the search region: I(r, c) = sum over rows < r, cols < c. */
static void integrate(tpl_state *st, const float *frame, int fw)
{
  const int W = st->rw + 1;
  for (int c = 0; c < W; c++) st->i1[c] = st->i2[c] = 0;
  for (int r = 0; r < st->rh; r++) {
    const float *row = frame + (size_t)(st->ry + r) * fw + st->rx;
    double *p1 = st->i1 + (size_t)r * W, *p2 = st->i2 + (size_t)r * W;
    double *q1 = p1 + W, *q2 = p2 + W;
    double a1 = 0, a2 = 0;
    q1[0] = q2[0] = 0;
    for (int c = 0; c < st->rw; c++) {
      double v = row[c] - LT_TUMOR_OFFSET;
      a1 += v;
      a2 += v * v;
      q1[c + 1] = p1[c + 1] + a1;
      q2[c + 1] = p2[c + 1] + a2;
    }
  }
  if (!st->t8) return;
  /* the 8-bit copy of the region, if every pixel is an integer in 0..255 */
  int ok = 1;
  for (int r = 0; r < st->rh && ok; r++) {
    const float *row = frame + (size_t)(st->ry + r) * fw + st->rx;
    int16_t *q = st->b16 + (size_t)r * st->bs;
    for (int c = 0; c < st->rw; c++) {
      float v = row[c];
      ok &= v >= 0.0f && v <= 255.0f;
      q[c] = ok ? (int16_t)v : 0;
      ok &= (float)q[c] == v;
    }
  }
  st->b8 = ok;
}

/* sum Tc * B over the window at frame (r0, c0); four column partials. */
static double cross_sum(const tpl_state *st, const float *frame, int fw, int r0, int c0)
{
  double acc = 0;
  const int w = st->w, w4 = w & ~3;
  for (int i = 0; i < st->h; i++) {
    const double *t = st->tc + (size_t)i * w;
    const float *b = frame + (size_t)(r0 + i) * fw + c0;
    double p0 = 0, p1 = 0, p2 = 0, p3 = 0;
    int j = 0;
    for (; j < w4; j += 4) {
      p0 += t[j] * b[j];
      p1 += t[j + 1] * b[j + 1];
      p2 += t[j + 2] * b[j + 2];
      p3 += t[j + 3] * b[j + 3];
    }
    for (; j < w; j++) p0 += t[j] * b[j];
    acc += (p0 + p1) + (p2 + p3);
  }
  return acc;
}

static double fast_score(const lt_tumor_cpu *c, int k, int dy, int dx, const float *frame)
{
  if (!lt_tumor_inside(&c->s, k, dy, dx)) return LT_TUMOR_OUTSIDE;
  const tpl_state *st = &c->t[k];
  const int r0 = st->y + dy, c0 = st->x + dx;
  const int W = st->rw + 1, a = r0 - st->ry, b = c0 - st->rx;
  const size_t i00 = (size_t)a * W + b, i01 = i00 + st->w;
  const size_t i10 = (size_t)(a + st->h) * W + b, i11 = i10 + st->w;
  const double s1 = st->i1[i11] - st->i1[i10] - st->i1[i01] + st->i1[i00];
  const double s2 = st->i2[i11] - st->i2[i10] - st->i2[i01] + st->i2[i00];
  const double n = st->n;
  double bb = s2 - s1 * s1 / n;
  if (bb < 0) bb = 0;
  const double mb = s1 / n + LT_TUMOR_OFFSET;
  const double cross = cross_sum(st, frame, c->s.frame_w, r0, c0) - mb * st->sum_tc;
  return score_of(cross, st->ta, bb, st->n);
}

/* ---- the 8-bit cross term ------------------------------------------------------
 * sum T*B of the LT_TUMOR_NB windows whose top-left lies in the region copy b
 * (row stride bs) at columns 0..NB-1, T the padded template t (h rows of wp):
 * exact, in 32-bit lanes over blocks of rows_blk rows (no overflow: see
 * rows_blk), the blocks added in 64 bits. Integer sums do not depend on the
 * order, so every variant gives the same numbers. */
typedef void (*cross_fn)(const int16_t *t, int wp, int h, int rows_blk, const int16_t *b, int bs,
                         int64_t out[LT_TUMOR_NB]);

static void cross8_c(const int16_t *t, int wp, int h, int rows_blk, const int16_t *b, int bs,
                     int64_t out[LT_TUMOR_NB])
{
  (void)rows_blk; /* the 32-bit sums here are per row: wp * 255^2 < 2^31 */
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int i = 0; i < h; i++) {
    const int16_t *tr = t + (size_t)i * wp, *br = b + (size_t)i * bs;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int j = 0; j < wp; j++) {
      int32_t v = tr[j];
      a0 += v * br[j];
      a1 += v * br[j + 1];
      a2 += v * br[j + 2];
      a3 += v * br[j + 3];
    }
    s0 += a0;
    s1 += a1;
    s2 += a2;
    s3 += a3;
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_CROSS8_X86 1
/* the lanes' total fits 32 bits (rows_blk), so the horizontal sum does too */
__attribute__((target("avx2"), always_inline)) static inline int32_t hsum_avx2(__m256i v)
{
  __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
  return _mm_cvtsi128_si32(x);
}

/* AVX2: 16 pixels per register, _mm256_madd_epi16 (pairs of 16-bit products
 * into 32-bit lanes), the NB windows' accumulators in registers. */
__attribute__((target("avx2"))) static void cross8_avx2(const int16_t *t, int wp, int h, int rows_blk,
                                                        const int16_t *b, int bs, int64_t out[LT_TUMOR_NB])
{
  int64_t s[LT_TUMOR_NB] = {0};
  for (int i0 = 0; i0 < h; i0 += rows_blk) {
    const int i1 = h - i0 < rows_blk ? h : i0 + rows_blk;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = i0; i < i1; i++) {
      const int16_t *tr = t + (size_t)i * wp, *br = b + (size_t)i * bs;
      for (int j = 0; j < wp; j += 16) {
        __m256i tv = _mm256_loadu_si256((const __m256i *)(tr + j));
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(br + j))));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(br + j + 1))));
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(br + j + 2))));
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(br + j + 3))));
      }
    }
    s[0] += hsum_avx2(a0);
    s[1] += hsum_avx2(a1);
    s[2] += hsum_avx2(a2);
    s[3] += hsum_avx2(a3);
  }
  for (int d = 0; d < LT_TUMOR_NB; d++) out[d] = s[d];
}

/* AVX-512BW: 32 pixels per register, a last 16 (wp is a multiple of 16) in
 * an AVX2 register. */
__attribute__((target("avx512f,avx512bw"))) static void cross8_avx512(const int16_t *t, int wp, int h,
                                                                      int rows_blk, const int16_t *b, int bs,
                                                                      int64_t out[LT_TUMOR_NB])
{
  int64_t s[LT_TUMOR_NB] = {0};
  const int w32 = wp & ~31;
  for (int i0 = 0; i0 < h; i0 += rows_blk) {
    const int i1 = h - i0 < rows_blk ? h : i0 + rows_blk;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    for (int i = i0; i < i1; i++) {
      const int16_t *tr = t + (size_t)i * wp, *br = b + (size_t)i * bs;
      for (int j = 0; j < w32; j += 32) {
        __m512i tv = _mm512_loadu_si512((const void *)(tr + j));
        a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(tv, _mm512_loadu_si512((const void *)(br + j))));
        a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(tv, _mm512_loadu_si512((const void *)(br + j + 1))));
        a2 = _mm512_add_epi32(a2, _mm512_madd_epi16(tv, _mm512_loadu_si512((const void *)(br + j + 2))));
        a3 = _mm512_add_epi32(a3, _mm512_madd_epi16(tv, _mm512_loadu_si512((const void *)(br + j + 3))));
      }
      if (w32 < wp) {
        __m256i tv = _mm256_loadu_si256((const __m256i *)(tr + w32));
        const int16_t *bj = br + w32;
        c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)bj)));
        c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(bj + 1))));
        c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(bj + 2))));
        c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(tv, _mm256_loadu_si256((const __m256i *)(bj + 3))));
      }
    }
    s[0] += _mm512_reduce_add_epi32(a0) + hsum_avx2(c0);
    s[1] += _mm512_reduce_add_epi32(a1) + hsum_avx2(c1);
    s[2] += _mm512_reduce_add_epi32(a2) + hsum_avx2(c2);
    s[3] += _mm512_reduce_add_epi32(a3) + hsum_avx2(c3);
  }
  for (int d = 0; d < LT_TUMOR_NB; d++) out[d] = s[d];
}
#endif

static int simd_max = 2; /* lt_tumor_cpu_set_simd */

void lt_tumor_cpu_set_simd(int level)
{
  simd_max = level;
}

static cross_fn pick_cross(void)
{
#ifdef HAVE_CROSS8_X86
  if (simd_max >= 2 && __builtin_cpu_supports("avx512bw")) return cross8_avx512;
  if (simd_max >= 1 && __builtin_cpu_supports("avx2")) return cross8_avx2;
#endif
  return cross8_c;
}

#if LT_TUMOR_INT8
/* Window sums from the integral images (exact integers for an 8-bit region). */
static void window_sums(const tpl_state *st, int r0, int c0, int64_t *s1, int64_t *s2)
{
  const int W = st->rw + 1, a = r0 - st->ry, b = c0 - st->rx;
  const size_t i00 = (size_t)a * W + b, i01 = i00 + st->w;
  const size_t i10 = (size_t)(a + st->h) * W + b, i11 = i10 + st->w;
  *s1 = (int64_t)(st->i1[i11] - st->i1[i10] - st->i1[i01] + st->i1[i00]);
  *s2 = (int64_t)(st->i2[i11] - st->i2[i10] - st->i2[i01] + st->i2[i00]);
}

/* Scores of one row of shifts (dy) of an 8-bit template over an 8-bit
 * region: sum T*B exact, then
 *   n sum Tc (B - mean B) = n sum T*B - sum T sum B,  n sum (B - mean B)^2 = n S2 - S1^2
 * (S1, S2: sums of B - 128 and its square) in 128-bit integers, divided by n
 * in double for score_of: the only roundings are those of the final double
 * operations, the same for any order or thread count. */
static void row_int8(const lt_tumor_cpu *c, const tpl_state *st, int k, int dy, cross_fn cross, double *out)
{
  const int H = c->s.shift_h, nx = 2 * H + 1;
  int lo = 0, hi = -1; /* inside dx range, as indices 0..nx-1 */
  for (int p = 0; p < nx; p++) {
    int in = lt_tumor_inside(&c->s, k, dy, p - H);
    out[p] = in ? 0.0 : LT_TUMOR_OUTSIDE;
    if (in) {
      if (hi < lo) lo = p;
      hi = p;
    }
  }
  const int r0 = st->y + dy;
  const int16_t *brow = st->b16 + (size_t)(r0 - st->ry) * st->bs;
  const lt_i128 n = st->n;
  for (int p = lo; p <= hi; p += LT_TUMOR_NB) {
    int64_t tb[LT_TUMOR_NB];
    const int c0 = st->x + p - H;
    cross(st->t16, st->wp, st->h, st->rows_blk, brow + (c0 - st->rx), st->bs, tb);
    for (int d = 0; d < LT_TUMOR_NB && p + d <= hi; d++) {
      int64_t s1, s2;
      window_sums(st, r0, c0 + d, &s1, &s2);
      const int64_t sb = s1 + (int64_t)128 * st->n;
      const double cross_n = (double)(n * tb[d] - (lt_i128)st->st * sb);
      const double bb_n = (double)(n * s2 - (lt_i128)s1 * s1);
      out[p + d] = score_of(cross_n / st->n, st->ta8, bb_n / st->n, st->n);
    }
  }
}
#endif

int lt_tumor_cpu_match_d(lt_tumor_cpu *c, const float *frame, double *scores)
{
  const int K = c->s.ntemplates, V = c->s.shift_v, H = c->s.shift_h;
  const int nx = 2 * H + 1, ny = 2 * V + 1, npos = lt_tumor_npos(&c->s);
  const cross_fn cross = pick_cross();
  const int rows = K * ny;
  /* one parallel region; dynamic schedules, so that a thread the OS holds
   * back (a shared machine) does not hold up a fixed share of the work */
#pragma omp parallel
  {
#pragma omp for schedule(dynamic, 1)
    for (int k = 0; k < K; k++) integrate(&c->t[k], frame, c->s.frame_w);
    /* one row of shifts (template k, dy) per iteration; each score is
     * computed whole by one thread */
#pragma omp for schedule(dynamic, 1)
    for (int q = 0; q < rows; q++) {
      const int k = q / ny, dy = q % ny - V;
      const tpl_state *st = &c->t[k];
      double *out = scores + (size_t)k * npos + (size_t)(dy + V) * nx;
#if LT_TUMOR_INT8
      if (st->t8 && st->b8) {
        row_int8(c, st, k, dy, cross, out);
        continue;
      }
#endif
      (void)cross;
      (void)st;
      for (int p = 0; p < nx; p++) out[p] = fast_score(c, k, dy, p - H, frame);
    }
  }
  return 0;
}

/* ---- the backend table ------------------------------------------------------ */

typedef struct cpu_ctx {
  lt_tumor_cpu *c;
  double *buf; /* ntemplates*npos */
  double setup_s;
} cpu_ctx;

static void cpu_destroy(void *p)
{
  cpu_ctx *x = p;
  if (!x) return;
  lt_tumor_cpu_destroy(x->c);
  free(x->buf);
  free(x);
}

static int cpu_create(void **out, const lt_tumor_setup *s)
{
  const double t0 = lt_now();
  *out = NULL;
  cpu_ctx *x = calloc(1, sizeof *x);
  if (!x) {
    lt_error("out of memory (tumor CPU backend)");
    return LT_ERR_NOMEM;
  }
  int e = lt_tumor_cpu_create(&x->c, s);
  if (e) {
    cpu_destroy(x);
    return e;
  }
  x->buf = malloc(sizeof(double) * (size_t)s->ntemplates * lt_tumor_npos(s));
  if (!x->buf) {
    lt_error("out of memory (tumor score buffer)");
    cpu_destroy(x);
    return LT_ERR_NOMEM;
  }
  x->setup_s = lt_now() - t0;
  *out = x;
  return 0;
}

static int cpu_match(void *p, const float *frame, float *scores)
{
  cpu_ctx *x = p;
  int e = lt_tumor_cpu_match_d(x->c, frame, x->buf);
  if (e) return e;
  const long total = (long)x->c->s.ntemplates * lt_tumor_npos(&x->c->s);
  for (long q = 0; q < total; q++) scores[q] = (float)x->buf[q];
  return 0;
}

static void cpu_stats(const void *p, lt_tumor_stats *st)
{
  const cpu_ctx *x = p;
  memset(st, 0, sizeof *st);
  st->setup_s = x->setup_s;
  const cross_fn f = pick_cross();
  const char *simd = f == cross8_c ? "C" : "AVX2";
#ifdef HAVE_CROSS8_X86
  if (f == cross8_avx512) simd = "AVX-512BW";
#endif
  snprintf(st->kernel, sizeof st->kernel, "cpu: integral images + cross term (8-bit exact %s, else double; OpenMP)",
           simd);
}

const lt_tumor_backend lt_tumor_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .match = cpu_match,
    .stats = cpu_stats,
};
