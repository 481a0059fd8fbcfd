/* corr.h - the computational core of the tumour mode (SPEC 4.2; seeds/001
 * and 004): Pearson correlation (MATLAB corr2, OpenCV TM_CCOEFF_NORMED) of
 * static templates against every shifted window of a frame, the best peak and
 * its sub-pixel refinement, and the backend table (CPU here, CUDA in
 * cuda/tumor/).
 *
 * Geometry. The frame is float, w x h, row-major, row 0 = top, values on the
 * 0..255 scale. Template k is tw x th pixels (cols x rows) with nominal
 * top-left (x, y) in the frame. For a shift (dy, dx) in [-V,V] x [-H,H] the
 * window is the tw x th block of the frame whose top-left is (y+dy, x+dx), and
 *   r = sum (T - mean T)(B - mean B) / sqrt(sum (T - mean T)^2 sum (B - mean B)^2).
 *
 * Score maps. Template k's map holds npos = (2V+1)(2H+1) scores at
 * scores[k*npos + (dy+V)*(2H+1) + (dx+H)] (dy major).
 *
 * Conventions, the same in every backend:
 *   - a window that is not entirely inside the frame scores
 *     LT_TUMOR_OUTSIDE (-1) and is never chosen as a peak (the peak search
 *     decides from the geometry, lt_tumor_inside, not from the value);
 *   - a flat template (sum (T - mean T)^2 <= LT_TUMOR_FLAT_VAR * n) scores 0
 *     everywhere, a flat window likewise 0 (never NaN);
 *   - scores are clamped to [-1, 1].
 *
 * Every function returns 0 or a negative lt_err after one lt_error. */
#ifndef LT_TUMOR_CORR_H
#define LT_TUMOR_CORR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Score of a window that leaves the frame. */
#define LT_TUMOR_OUTSIDE (-1.0f)
/* Per-pixel variance (grey levels^2) at or below which a window or template
 * counts as flat: std 1e-3 grey levels, far below the 1-level quantisation of
 * 8-bit video and far above the rounding of the sums. */
#define LT_TUMOR_FLAT_VAR 1e-6
/* Largest template side and shift half-range accepted (keeps every index
 * product far inside int). */
#define LT_TUMOR_MAX_SIDE 8192
#define LT_TUMOR_MAX_SHIFT 4096

typedef struct lt_tumor_template {
  const float *px; /* w*h, row-major, 0..255 */
  int w, h;        /* columns, rows */
  int x, y;        /* nominal top-left in the frame (may lie outside) */
} lt_tumor_template;

/* What a backend's create() is given. The pixel pointers need only live
 * until create() returns: backends copy what they keep. */
typedef struct lt_tumor_setup {
  int frame_w, frame_h;
  int ntemplates;
  const lt_tumor_template *tpl;
  int shift_v, shift_h; /* V (rows), H (columns): shifts in [-V,V] x [-H,H] */
} lt_tumor_setup;

/* Checks sizes and ranges; LT_ERR_USAGE after one lt_error otherwise. */
int lt_tumor_setup_check(const lt_tumor_setup *s);
/* (2V+1)(2H+1). */
int lt_tumor_npos(const lt_tumor_setup *s);
/* 1 when template k's window at shift (dy, dx) lies entirely inside the frame. */
int lt_tumor_inside(const lt_tumor_setup *s, int k, int dy, int dx);

/* corr2 of a (w x h, contiguous) against b (w x h, row stride bstride), by
 * the definition in double (two passes). The conventions above apply (flat
 * -> 0, clamp). */
double lt_tumor_corr2(const float *a, const float *b, int w, int h, size_t bstride);

/* Every score of every template by the definition (lt_tumor_corr2 per
 * window, double): the reference the other backends are tested against.
 * scores: ntemplates*npos doubles. Allocates nothing. */
int lt_tumor_corr_exact(const lt_tumor_setup *s, const float *frame, double *scores);

/* The fast CPU implementation: template terms once (create), then per frame
 * window sums and sums of squares from integral images of the search region
 * (double, offset 128 so 8-bit frames give exact integers), and only the
 * cross term per shift, OpenMP over rows of shifts (template, dy). When the
 * template and the frame's search region are 8-bit (every pixel an integer
 * in 0..255, checked per template and frame), sum T*B is computed exactly in
 * integers (SIMD 16-bit multiply-adds, four shifts per pass) and r from the
 * exact integer sums; otherwise sum Tc*B in double with four column partials
 * in a fixed order. Either way each score is computed whole by one thread, so
 * the result does not depend on the thread count. */
typedef struct lt_tumor_cpu lt_tumor_cpu;
int lt_tumor_cpu_create(lt_tumor_cpu **c, const lt_tumor_setup *s);
/* scores: ntemplates*npos doubles. Allocates nothing. */
int lt_tumor_cpu_match_d(lt_tumor_cpu *c, const float *frame, double *scores);
void lt_tumor_cpu_destroy(lt_tumor_cpu *c); /* NULL is fine */
/* Widest SIMD the 8-bit cross term may use (tests): 2 AVX-512BW (default),
 * 1 AVX2, 0 portable C; the CPU decides below that. Same numbers in each. */
void lt_tumor_cpu_set_simd(int level);

/* Best shift of one template (or of all). */
typedef struct lt_tumor_peak {
  int tpl;              /* template index */
  int dy, dx;           /* integer shift of the best score */
  int row, col;         /* window top-left in the frame: y+dy, x+dx */
  float score;          /* r at (dy, dx) */
  double dy_sub, dx_sub; /* dy, dx plus the sub-pixel offset (see below) */
} lt_tumor_peak;

/* Best score over template k's shifts whose window is inside the frame; ties
 * go to the first in scan order (dy, then dx, ascending). Sub-pixel offset:
 * separable parabola fits through the 3x3 neighbourhood's centre row (for dx)
 * and centre column (for dy), delta = (s[-1] - s[+1]) / (2 (s[-1] - 2 s[0] + s[+1])),
 * clamped to [-0.5, 0.5]; 0 on an axis where a neighbour is out of the shift
 * range or its window leaves the frame, or where the parabola is not concave.
 * Returns 0, or LT_ERR_INPUT when no shift of template k is inside the frame
 * (no peak; *p then holds score -1 and zero shifts). */
int lt_tumor_peak_one(const lt_tumor_setup *s, const float *scores, int k, lt_tumor_peak *p);
/* Best over all templates (ties to the lowest index); per_tpl (may be NULL)
 * receives every template's peak. Returns 0 or LT_ERR_INPUT when no template
 * has a shift inside the frame. */
int lt_tumor_peak_best(const lt_tumor_setup *s, const float *scores, lt_tumor_peak *best,
                       lt_tumor_peak *per_tpl);

/* What a backend reports about its set-up (compile time separate from
 * per-frame time). */
typedef struct lt_tumor_stats {
  double setup_s;     /* create(), everything included */
  double compile_s;   /* kernel specialisation (NVRTC compile or cache load); 0 if none */
  int specialised;    /* 1: a kernel compiled for these sizes runs; 0: generic */
  int cache_hit;      /* 1: the specialised kernel came from the on-disk cache */
  char kernel[96];    /* short description of what runs */
  char cache_file[512]; /* on-disk cache entry of the specialised kernel ("" if none) */
} lt_tumor_stats;

/* A backend: create does all allocation and set-up (templates uploaded and
 * their statistics computed once); match computes every score of one frame
 * without allocating; destroy accepts NULL. frame: frame_w x frame_h floats
 * (only the search region is read); scores: ntemplates*npos floats, layout
 * above. */
typedef struct lt_tumor_backend {
  const char *name;
  int (*create)(void **ctx, const lt_tumor_setup *s);
  void (*destroy)(void *ctx);
  int (*match)(void *ctx, const float *frame, float *scores);
  void (*stats)(const void *ctx, lt_tumor_stats *st);
  /* Optional (NULL in the CPU backends): every template's peak computed by
   * the backend, the same as lt_tumor_peak_one on the scores match() gives
   * (a template without an inside shift: score -1, shifts 0). frame8, when
   * not NULL, holds the same frame as bytes (frame may then be NULL);
   * scores, when not NULL, also receives the maps. */
  int (*match_peaks)(void *ctx, const float *frame, const unsigned char *frame8, float *scores,
                     lt_tumor_peak *peaks);
  /* Optional: the next frame's bytes, to be uploaded while the next
   * match_peaks call's predecessor works (valid until that call). */
  int (*prefetch)(void *ctx, const unsigned char *frame8);
  /* Optional, the two-deep pipeline (8-bit frames, no maps): submit starts
   * a frame's work (its bytes are copied before it returns, unless they lie
   * in the memory map given to map below) and returns
   * without waiting; collect waits for the oldest submitted frame not yet
   * collected and gives its peaks, as match_peaks would. At most two frames
   * are submitted and not collected. */
  int (*submit)(void *ctx, const unsigned char *frame8);
  int (*collect)(void *ctx, lt_tumor_peak *peaks);
  /* Optional, with submit: the input's memory map (lt_loop_map), valid
   * until unmap. Frames lying in it may then be read from it after submit
   * returns (until their collect) instead of being copied by submit.
   * unmap: every submitted frame's reads done, the map no longer used
   * (called before the input is closed; also on abort). */
  void (*map)(void *ctx, const void *base, size_t size);
  void (*unmap)(void *ctx);
} lt_tumor_backend;

/* The fast CPU implementation behind the table. */
extern const lt_tumor_backend lt_tumor_backend_cpu;

#ifdef __cplusplus
}
#endif

#endif
