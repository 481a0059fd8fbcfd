/* leuk.h - leukocyte mode: parameters, cell types, the stage table that each
 * backend fills, and the CPU reference stages.
 *
 * Algorithm: seeds/000 (Boyer et al.) as specified constant by constant in
 * ../shared/spec/leukocyte-algorithm.md, with leuktrack's decisions: exact pi,
 * exact geometry (no -40 row offset), all nine spline control points updated,
 * both probe sides, no one-row tracking bias, bounds-checked interpolation,
 * signed GICOV on every backend. Tracking adds a predicted start position and
 * a local GICOV re-localisation so that fast cells are really followed.
 *
 * Coordinates: pixel (c, r) of an image has its centre at x = c, y = r; row 0
 * is the top. Images are row-major float arrays, width = row length. */
#ifndef LT_LEUK_H
#define LT_LEUK_H

#include <math.h>
#include <stddef.h>

#define LT_LEUK_MAX_RADII 32
#define LT_LEUK_SNAXELS 20       /* tracking snake points (Np) */
#define LT_LEUK_DET_POINTS 36    /* detection circle points */
#define LT_LEUK_CTRL 9           /* periodic B-spline control points */
/* The appearance template (slot lt_leuk_cell.tpl of the backend's pool)
 * covers discs up to this radius, the default rmax: a larger cell is matched
 * on its central disc of it (a pool holds one template per cell slot of the
 * context, so it is not sized for the 100 px that --radius allows). */
#define LT_LEUK_TPL_R 20
#define LT_LEUK_TPL_SIDE (2 * LT_LEUK_TPL_R + 1)
#define LT_LEUK_TPL_N (LT_LEUK_TPL_SIDE * LT_LEUK_TPL_SIDE) /* floats per template */
/* MGVF convergence is tested every this many iterations (and at the cap):
 * at most 3 iterations past the reference's stopping point, each changing F
 * by less than the tolerance, and the GPU saves a block-wide reduction on
 * the other iterations. Both backends use it. */
#define LT_MGVF_CHECK_EVERY 4

typedef struct lt_rect {
  int x, y, w, h;
} lt_rect;

typedef struct lt_leuk_params {
  lt_rect roi;             /* detection + tracking region (frame coords) */
  lt_rect entry_roi;       /* where re-detection may start new tracks */
  int rmin, rmax, rstep;   /* GICOV circle radii: 8..20 step 1 (the reference: step 2,
                              which misses cells whose dark rim lies on an even radius) */
  int npoints;             /* samples per GICOV circle: 150 */
  double gicov_threshold;  /* |GICOV| above which a maximum is a candidate: 1.8 */
  int dilate_radius;       /* disc radius of the grey dilation: 12 */
  int detect_every;        /* re-detection period in frames: 10 */
  /* detection snake (spline refinement) */
  int snake_iter;          /* 20 */
  double snake_delta;      /* probe distance: 3.0 */
  double snake_dt;         /* 2*dt = 0.02 */
  double border;           /* contour must stay this far inside the frame: 1 (the
                              reference: 5, which delays entering cells by 4 px) */
  /* MGVF */
  double mgvf_mu;          /* 0.5 */
  double mgvf_lambda;      /* 8*mu+1 = 5 */
  double mgvf_tol;         /* mean |change| to stop: 1e-5 */
  int mgvf_max_iter;       /* 500 */
  double mgvf_col;         /* > 0: lt_mgvf_col with this omega (1.8, the default since
                              issue 18: CPU and CUDA backends, docs/PERFORMANCE.md);
                              0: lt_mgvf, Jacobi (section 5.4; LT_MGVF_COL=0) */
  /* ellipse evolution */
  double evolve_tol;       /* 0.1 */
  int evolve_max_iter;     /* 1000 */
  /* tracking */
  int search;              /* re-localisation radius in px around the prediction: 8 */
  double lost_fraction;    /* track lost when |GICOV| < lost_fraction*threshold: 0.5 */
  double appearance;       /* > 0: the re-localisation scores each position by its GICOV
                              plus appearance * the normalised cross-correlation of the
                              frame's disc there with the cell's template (lt_leuk_ncc;
                              issue 15, twelfth pass): 0.7; 0: GICOV alone */
  /* pipeline only (pipeline.c; no backend reads these) */
  int entry_band;          /* 1: detect every frame in the upstream band(s) of the entry ROI */
  int detect_early;        /* full detections also on the first detect_early frames after the
                              first (a cell of the first frame that scores under the threshold
                              there but over it a frame or two later starts its track then,
                              not at the next detect_every frame; pipeline.c) */
  int link_gap;            /* frames a lost track is kept (not written) for re-linking: 5 */
  double gicov_adapt;      /* > 0: new cells need |GICOV| above min(gicov_threshold,
                              max(adapt_floor, gicov_adapt * the median |GICOV| of the
                              maxima at the last full detection)); 0: gicov_threshold */
  double adapt_floor;      /* 1.0 */
  int static_span;         /* > 0: a new cell after the first frame must differ from the
                              frames kept every static_span frames (static.c): 10 */
  double static_ratio;     /* 1.5 */
  int hold;                /* > 0: a new track's rows are held back for its first hold
                              frames; one whose last position then is within hold_move *
                              rmin px of its first (or the median of its last three of that
                              of its first three, held_moved) and that never scored |GICOV| >= hold_gicov *
                              gicov_threshold in them is static background, never
                              written (pipeline.c, judge(); a track that the video's end
                              cut short needs hold_move * rmin * its frames / hold): 20 */
  double hold_move;        /* 0.5 */
  double recheck;          /* > 0: a found track whose tracking went more than recheck * rmin
                              px off its prediction is checked there; a circle of its sign
                              near the prediction that scores more than where the tracking
                              went is the cell (pipeline.c, recheck()): 0 (off) */
  int recheck_search;      /* ... circles of any radius within this many px of it: 6 */
  int motion;              /* > 0: new cells are also detected on the frame less a background
                              (the median of copies kept every motion frames; motion.c) */
  double motion_gate;      /* ... and such a detection needs |GICOV| >= this, of its sign,
                              on the frame itself (a cell's ghost where it was scores the
                              other sign there) */
  int motion_miss;         /* ... a track it found that scores under the threshold on the
                              frame ends when it has not shown on the difference (|GICOV| of
                              its sign >= motion_gate within 1 px) for this many frames in a
                              row (pipeline.c, motion_check): 3 */
  double motion_edge;      /* ... and one that scores under the threshold on the frame
                              starts no track while its circle is less than this many px
                              from the ROI's edge (a cell still partly outside, seen as a
                              smaller circle): 3 */
  double hold_gicov;       /* 1.6 (a clean adherent cell scores >= 3.9, a static
                              structure of real vessel texture up to 2.9) */
  double faint_first;      /* with hold > 0 and gicov_adapt > 0: in the first frame the
                              threshold adapts with faint_first * gicov_adapt (a textured
                              background keeps gicov_threshold); a track started there
                              under the threshold for new cells is written only if it
                              scores above that threshold while held (a faint cell of the
                              first frame is followed from it, the background's maxima
                              that never score so are not written; pipeline.c, judge()):
                              0.8 */
  int reference_geometry;  /* tests only: the reference's GICOV angle table (pi = 3.14159)
                              and its common border rmax+2 for all radii */
} lt_leuk_params;

/* Defaults of the reference (section 0 of the algorithm spec). roi/entry_roi
 * are set to the whole frame by the pipeline when not given. */
void lt_leuk_params_default(lt_leuk_params *p);
/* Number of radii and the radius of circle k. */
int lt_leuk_nradii(const lt_leuk_params *p);

/* Half-width and half-height of a tracked cell's window for radius R
 * (spec 5.3: (2*round(4R)+1) x (2*round(2R)+1), then clamped to the frame);
 * the CUDA kernels use the same functions. */
#ifdef __CUDACC__
#define LT_HOST_DEVICE __host__ __device__
#else
#define LT_HOST_DEVICE
#endif
/* The tracking window around a cell (MGVF and snake): 2R px on each side in
 * both directions. The reference (spec 5.3) takes 4R columns on each side,
 * 81 x 41 for R = 10, because its snake alone had to find a cell that had
 * rolled along x; leuktrack's window is centred on the GICOV re-localised
 * position, where the snake (radii ~R) needs the field within ~R + a few px
 * of the centre. Half the pixels, the same MGVF sweeps per cell (~97 against
 * ~99 on the demo), the accuracy bench unchanged on its tuning seeds 1-15
 * (docs/ACCURACY.md, 2026-11-24) and the GPU's steady state -20 %
 * (docs/PERFORMANCE.md). Both backends size every window buffer from these. */
static inline LT_HOST_DEVICE int lt_leuk_win_half_x(double R) { return (int)(2 * R + 0.5); }
static inline LT_HOST_DEVICE int lt_leuk_win_half_y(double R) { return (int)(2 * R + 0.5); }

/* Double arithmetic that nvcc must not contract into fused multiply-adds
 * (it does by default; the C build is -std=c11, which does not): the device
 * code of a function shared with the CPU spells each operation. */
#ifdef __CUDA_ARCH__
#define LT_DADD(a, b) __dadd_rn((a), (b))
#define LT_DSUB(a, b) __dsub_rn((a), (b))
#define LT_DMUL(a, b) __dmul_rn((a), (b))
#define LT_DDIV(a, b) __ddiv_rn((a), (b))
#define LT_FADD(a, b) __fadd_rn((a), (b))
#define LT_FMUL(a, b) __fmul_rn((a), (b))
#else
#define LT_DADD(a, b) ((a) + (b))
#define LT_DSUB(a, b) ((a) - (b))
#define LT_DMUL(a, b) ((a) * (b))
#define LT_DDIV(a, b) ((a) / (b))
#define LT_FADD(a, b) ((a) + (b))
#define LT_FMUL(a, b) ((a) * (b))
#endif
/* The appearance template's disc radius for a cell of nominal radius R. */
static inline LT_HOST_DEVICE int lt_leuk_tpl_r(double R)
{
  const int r = (int)(R + 0.5);
  return r < 1 ? 1 : r > LT_LEUK_TPL_R ? LT_LEUK_TPL_R : r;
}
/* Template pixel i (row-major in the LT_LEUK_TPL_SIDE square) of a
 * template centred on integer (cx, cy) of a fw x fh frame: its index in the
 * frame, -1 outside it (the template holds NaN there). */
static inline LT_HOST_DEVICE long lt_leuk_tpl_at(int fw, int fh, int cx, int cy, int i)
{
  const int x = cx + i % LT_LEUK_TPL_SIDE - LT_LEUK_TPL_R, y = cy + i / LT_LEUK_TPL_SIDE - LT_LEUK_TPL_R;
  return x < 0 || y < 0 || x >= fw || y >= fh ? -1 : (long)y * fw + x;
}
/* ... its value in img: both backends fill templates with it. */
static inline LT_HOST_DEVICE float lt_leuk_tpl_px(const float *img, int fw, int fh, int cx, int cy, int i)
{
  const long k = lt_leuk_tpl_at(fw, fh, cx, cy, i);
  return k < 0 ? NAN : img[k];
}
/* With the cue (gam > 0), a re-localisation position whose GICOV score b is
 * under this (bmax: the grid's largest) cannot win: its score stays under
 * b + gam, the best b's over bmax - gam (the correlation is within -1..1;
 * the margin widened by 1e-6 against rounding). Both backends skip its
 * correlation. */
static inline LT_HOST_DEVICE double lt_leuk_ncc_cut(double bmax, double gam)
{
  return bmax - 2.000001 * gam;
}
/* Normalised cross-correlation (-1..1) of the disc of radius r (offsets
 * u^2 + v^2 <= r^2, r <= LT_LEUK_TPL_R) of template tpl with the disc around
 * integer (bx, by) of img (fw x fh), over the offsets where both are in
 * their frames; 0 when fewer than 10 are, or either side is flat.
 *
 * One fixed order of operations, nothing contracted, so that the CPU
 * (track.c) and the GPU (track.cu, relocate) get the same bits for any
 * input, whether one thread or a group of 2, 4 or 8 threads computes it:
 * - each row's five sums in float, left to right (at most 41 pixels: for
 *   grey levels 0..255, the integers of 8-bit video, every partial sum is
 *   an integer below 2^24, so exact; FP32 runs at twice the GPU's FP64 rate);
 * - the rows i = v + r in LT_LEUK_NCC_CLASSES classes by i mod 8, each
 *   class's rows added to its double sums in order (lt_leuk_ncc_class);
 * - the classes' sums added pairwise, (0+1)+(2+3) and (4+5)+(6+7), then
 *   those two (lt_leuk_ncc_add; addition is commutative, so a thread that
 *   holds class 1 and adds class 0's sums gets the same bits);
 * - the correlation from the five sums and the pixel count (lt_leuk_ncc_fin).
 * For 8-bit video every sum is an exact integer, so the value does not
 * depend on the order at all. */
#define LT_LEUK_NCC_CLASSES 8
typedef struct lt_leuk_ncc_sums {
  double a, b, aa, bb, ab; /* sums of template, image, their squares, their product */
} lt_leuk_ncc_sums;
/* The double sums of the rows i = c, c + 8, ... (i = v + r, v = -r..r) of
 * class c, in order, into *o; returns their pixel count. */
static inline LT_HOST_DEVICE int lt_leuk_ncc_class(const float *tpl, const float *img, int fw, int fh, int bx,
                                                   int by, int r, int c, lt_leuk_ncc_sums *o)
{
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  int m = 0;
  for (int v = c - r; v <= r; v += LT_LEUK_NCC_CLASSES) {
    const int yb = by + v;
    if (yb < 0 || yb >= fh) continue;
    /* the row's offsets u^2 <= r^2 - v^2 (integer square root), within
     * the frame: the disc's pixels of the row in order, no test each */
    const int q = r * r - v * v;
    int hw = (int)sqrt((double)q);
    while (hw * hw > q) hw--;
    while ((hw + 1) * (hw + 1) <= q) hw++;
    const int u0 = -hw > -bx ? -hw : -bx, u1 = hw < fw - 1 - bx ? hw : fw - 1 - bx;
    const float *trow = tpl + (v + LT_LEUK_TPL_R) * LT_LEUK_TPL_SIDE + LT_LEUK_TPL_R;
    const float *irow = img + (size_t)yb * fw; /* bx + u in 0..fw-1 */
    float ra = 0.0f, rb = 0.0f, raa = 0.0f, rbb = 0.0f, rab = 0.0f;
    /* no branch: a template pixel outside its frame (NaN) adds +0 to each
     * sum, which leaves it as it is (the sums start at +0 and grey levels
     * are >= 0), so the loop unrolls and its loads overlap (a correlation
     * is on the GPU's critical path) */
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
    for (int u = u0; u <= u1; u++) {
      const float a0 = trow[u], b0 = irow[bx + u];
      const int in = a0 == a0;
      const float a = in ? a0 : 0.0f, b = in ? b0 : 0.0f;
      ra = LT_FADD(ra, a);
      rb = LT_FADD(rb, b);
      raa = LT_FADD(raa, LT_FMUL(a, a));
      rbb = LT_FADD(rbb, LT_FMUL(b, b));
      rab = LT_FADD(rab, LT_FMUL(a, b));
      m += in;
    }
    sa = LT_DADD(sa, (double)ra);
    sb = LT_DADD(sb, (double)rb);
    saa = LT_DADD(saa, (double)raa);
    sbb = LT_DADD(sbb, (double)rbb);
    sab = LT_DADD(sab, (double)rab);
  }
  o->a = sa;
  o->b = sb;
  o->aa = saa;
  o->bb = sbb;
  o->ab = sab;
  return m;
}
/* x += y, sum by sum */
static inline LT_HOST_DEVICE void lt_leuk_ncc_add(lt_leuk_ncc_sums *x, const lt_leuk_ncc_sums *y)
{
  x->a = LT_DADD(x->a, y->a);
  x->b = LT_DADD(x->b, y->b);
  x->aa = LT_DADD(x->aa, y->aa);
  x->bb = LT_DADD(x->bb, y->bb);
  x->ab = LT_DADD(x->ab, y->ab);
}
/* The correlation from all rows' sums s over m pixels. */
static inline LT_HOST_DEVICE double lt_leuk_ncc_fin(const lt_leuk_ncc_sums *s, int m)
{
  if (m < 10) return 0.0;
  const double ca = LT_DSUB(s->aa, LT_DDIV(LT_DMUL(s->a, s->a), m));
  const double cb = LT_DSUB(s->bb, LT_DDIV(LT_DMUL(s->b, s->b), m));
  const double cab = LT_DSUB(s->ab, LT_DDIV(LT_DMUL(s->a, s->b), m));
  return ca > 0 && cb > 0 ? LT_DDIV(cab, sqrt(LT_DMUL(ca, cb))) : 0.0;
}
/* The correlation by one thread (the CPU): the classes, then the pairs. */
static inline LT_HOST_DEVICE double lt_leuk_ncc(const float *tpl, const float *img, int fw, int fh, int bx,
                                                int by, int r)
{
  lt_leuk_ncc_sums s[LT_LEUK_NCC_CLASSES];
  int m = 0;
  for (int c = 0; c < LT_LEUK_NCC_CLASSES; c++) m += lt_leuk_ncc_class(tpl, img, fw, fh, bx, by, r, c, &s[c]);
  for (int d = 1; d < LT_LEUK_NCC_CLASSES; d *= 2)
    for (int c = 0; c < LT_LEUK_NCC_CLASSES; c += 2 * d) lt_leuk_ncc_add(&s[c], &s[c + d]);
  return lt_leuk_ncc_fin(&s[0], m);
}

/* A local maximum of the dilated GICOV map (frame coordinates). */
typedef struct lt_leuk_max {
  int x, y;
  float gicov;  /* signed: mean/std of the winning circle */
  int radius;   /* radius of the winning circle */
} lt_leuk_max;

/* A refined detection (frame coordinates). */
typedef struct lt_leuk_det {
  double x, y, r;
  float gicov;
  int ok;       /* 0 if the refined contour left the frame (border check) */
} lt_leuk_det;

enum { LT_CELL_ACTIVE = 0, LT_CELL_LEFT = 1, LT_CELL_LOST = 2 };

/* Tracking state of one cell (frame coordinates). */
typedef struct lt_leuk_cell {
  double xc, yc;                  /* centre */
  double r[LT_LEUK_SNAXELS];      /* snaxel radii */
  double R;                       /* the cell's nominal radius (size prior, window size) */
  double vx, vy;                  /* velocity estimate, px/frame */
  float gicov;                    /* signed GICOV at the new position */
  int sign;                       /* +1 bright-inside / -1: sign of the detection GICOV */
  int status;                     /* LT_CELL_* after the track stage */
  int mgvf_iter, evolve_iter;     /* work done in the last frame (stats) */
  /* --appearance: the cell's template slot in the backend's pool (tpl_set),
   * -1 = none. A template is the cell's disc of radius lt_leuk_tpl_r(R)
   * around its centre, in a square of LT_LEUK_TPL_SIDE^2 (row-major, NaN
   * outside the frame), from the frame where it was detected and then from
   * every frame where it scored |GICOV| >= the threshold (the backend's
   * track); all 0 = none yet (the correlation is then 0). The templates
   * stay in the backend (on the GPU for CUDA): the cell state that goes up
   * and down every frame keeps its size (a 6.7 KB template in it cost a
   * quarter of the many-video throughput, docs/PERFORMANCE.md). */
  int tpl;
} lt_leuk_cell;

enum { LT_MAP_GICOV = 0, LT_MAP_DILATED = 1 };

/* The per-mode stage table. A backend owns its memory (allocated in create,
 * never per frame); callers hold the opaque ctx. Every function returns 0 or
 * a negative lt_err after reporting it once. */
typedef struct lt_leuk_backend {
  const char *name;
  int (*create)(void **ctx, const lt_leuk_params *p, int width, int height, int max_cells);
  void (*destroy)(void *ctx);
  /* The frame the following calls work on (width*height, 0..255); frame8,
   * when not NULL, holds the same pixels as bytes (a backend may use it). */
  int (*set_frame)(void *ctx, const float *frame, const unsigned char *frame8);
  /* Gradient, GICOV, dilation and local maxima over roi; maxima in scan
   * order (row, then column), all of them (no threshold). */
  int (*detect)(void *ctx, const lt_rect *roi, lt_leuk_max *out, int cap, int *n);
  /* Spline-snake refinement of n maxima (of the last detect). */
  int (*refine)(void *ctx, const lt_leuk_max *m, int n, lt_leuk_det *out);
  /* One tracking step of n cells on the current frame, in place (with
   * --appearance, each cell's template slot refreshed as it scores). */
  int (*track)(void *ctx, lt_leuk_cell *cells, int n);
  /* --appearance: template slot `slot` (0 <= slot < max_cells) becomes tpl
   * (LT_LEUK_TPL_N floats) for the following track calls. */
  int (*tpl_set)(void *ctx, int slot, const float *tpl);
  /* Test access: template slot `slot` into tpl. */
  int (*tpl_get)(void *ctx, int slot, float *tpl);
  /* Test access: the GICOV or dilated map of the last detect (roi size). */
  int (*get_map)(void *ctx, int which, float *dst);
  /* Test access: MGVF of one window E (w*h, already normalised) into F. */
  int (*mgvf)(void *ctx, const float *E, int w, int h, float *F, int *iters);
  /* Optional (NULL): the frame that the next set_frame will name, with the
   * same pointers, which stay unchanged until then; a backend may start
   * moving it while it works on the current frame. */
  int (*prefetch)(void *ctx, const float *frame, const unsigned char *frame8);
  /* 1: set_frame and prefetch read only frame8 when it is not NULL (frame
   * may then be NULL), so the decoder may skip the float copy. */
  int bytes_ok;
  /* Optional (both NULL): detect in two halves, with the same results as
   * detect. detect_start queues the work over roi; detect_end waits for it
   * and returns the maxima. Between them the caller may call track (which
   * leaves the detection's maps alone), so that a backend overlaps them or
   * runs them without a host round trip in between. lo: the caller takes
   * only maxima whose |GICOV| exceeds it (0: any, and all of them come
   * back), so a backend that refines ahead may leave the others out of its
   * refinements, and detect_end may leave them out of its maxima (the
   * others come back in roi's scan order, as detect's). */
  int (*detect_start)(void *ctx, const lt_rect *roi, double lo);
  int (*detect_end)(void *ctx, lt_leuk_max *out, int cap, int *n);
} lt_leuk_backend;

extern const lt_leuk_backend lt_leuk_backend_cpu;
/* cuda/leukocyte/backend.cu; exists only in CUDA builds (registered in
 * src/backend.c). */
extern const lt_leuk_backend lt_leuk_backend_cuda;

/* ---- CPU reference stages (also used by tests) ---------------------- */

/* MATLAB-style gradient: central differences inside, one-sided at borders. */
void lt_gradient(const float *m, int w, int h, float *gx, float *gy);

/* Circle stencils: cos/sin of the n sample angles (exact pi) and the integer
 * offsets trunc(cos*rho), trunc(sin*rho) per radius. */
typedef struct lt_stencil {
  int npoints, nradii;
  int radius[LT_LEUK_MAX_RADII];
  double *cosv, *sinv;  /* npoints */
  int *dx, *dy;         /* nradii*npoints */
  int border_all;       /* 0: circle k needs radius_k+1 px of border; else this for all */
} lt_stencil;
int lt_stencil_init(lt_stencil *s, const lt_leuk_params *p);
void lt_stencil_free(lt_stencil *s);

/* GICOV score of circle k at (x, y) of image img (w x h): signed mean/std
 * of the outward radial gradient at the stencil points. Returns 0 when the
 * circle (plus one pixel) leaves the image or the variance is 0. Used by
 * the tracking (re-localisation, status); its sums are the map's (float,
 * shifted by the first sample, fused multiply-adds; mean and variance in
 * double) split over LT_GICOV_LANES interleaved partials (gicov.c). */
#define LT_GICOV_LANES 16
double lt_gicov_at(const float *img, int w, int h, int x, int y, const lt_stencil *s, int k);
/* Sub-pixel refinement of circle k's best integer position (x, y) (signed
 * score best): parabolas in x and y, steps of at most half a pixel added to
 * *qx, *qy (track.c). */
void lt_gicov_subpixel(const float *img, int w, int h, int x, int y, const lt_stencil *s, int k, int sign,
                       double best, double *qx, double *qy);

/* GICOV map over an image of w x h: at pixels where circle k fits (at
 * least radius_k+1 from every border), the signed GICOV of the circle with the largest mean^2/var (ties
 * keep the smaller radius); 0 elsewhere. radius_idx may be NULL. The sums
 * are in float, shifted by each circle's first sample (gicov.c; the CUDA
 * maps do the same operations). */
void lt_gicov_map(const float *gx, const float *gy, int w, int h, const lt_stencil *s,
                  float *gicov, unsigned char *radius_idx);

/* The fused multiply-add of the GICOV sums (gicov.c), chosen once from the
 * CPU; all three give the same bits: LT_FMA_HW fmaf inline (x86-64-v3
 * loops; fmaf off x86), LT_FMA_LIBM libm's fmaf (x86 with FMA or FMA4 but
 * not x86-64-v3), LT_FMA_SOFT the exact emulation in double (x86 without
 * FMA, where libm's is slow software). lt_gicov_fma returns the path;
 * lt_gicov_fma_force (a test aid, like LT_GICOV_FMA=soft|libm) takes
 * LT_FMA_SOFT or LT_FMA_LIBM on any CPU, another value chooses again. */
enum { LT_FMA_HW = 0, LT_FMA_LIBM = 1, LT_FMA_SOFT = 2 };
int lt_gicov_fma(void);
void lt_gicov_fma_force(int path);

/* Grey dilation of src (w x h) with a flat disc of radius rad (offsets with
 * dx^2+dy^2 <= rad^2), out-of-image neighbours skipped, floor 0. */
void lt_dilate_disc(const float *src, int w, int h, int rad, float *dst, float *scratch);

/* Local maxima: mg != 0 and dil == mg, scan order. Returns the count found
 * (may exceed cap; only cap are stored). */
int lt_local_maxima(const float *mg, const float *dil, int w, int h, int *xs, int *ys, int cap);

/* Spline-snake refinement of one candidate at (x0, y0) (image coords of
 * gx/gy), initial circle radius r0, sign of its GICOV. Writes the refined
 * centre and mean radius; returns 0, or 1 if the contour left the image by
 * less than `border` (x_off, y_off, fw, fh: the image's place in the frame). */
int lt_spline_refine(const float *gx, const float *gy, int w, int h, double x0, double y0,
                     double r0, int sign, const lt_leuk_params *p, int x_off, int y_off,
                     int fw, int fh, double *xc, double *yc, double *rc);

/* The spline tables of lt_spline_refine (for other backends): basis values
 * a,b,c,d and their derivatives at s = j/4, and the least-squares fit
 * (B^T B)^-1 B^T of 9 control points to the 36 samples. */
void lt_spline_tables(double basis[4][4], double dbasis[4][4],
                      double fit[LT_LEUK_CTRL][LT_LEUK_DET_POINTS]);

/* MGVF (section 5.4) of E (w x h, normalised to 0..1) into F, Jacobi
 * iterations until mean |change| <= tol, tested at every
 * LT_MGVF_CHECK_EVERY-th iteration, or max_iter. tmp: w*h floats.
 * Returns the number of iterations. */
int lt_mgvf(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda,
            double tol, int max_iter);

/* The same fixed point by column two-colour over-relaxed sweeps (mgvf.c;
 * LT_MGVF_COL, both backends): even columns from F, then odd columns from
 * F and the new even columns, each change times omega, the same stopping
 * rule. tmp: w*h floats. Returns the number of sweeps. */
int lt_mgvf_col(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda, double omega,
                double tol, int max_iter);

/* Normalise E in place: (E - min) / (max - min + 2^-52). */
void lt_normalise(float *E, int n);

/* Ellipse (circle-with-radii) snake evolution on F (section 5.5) in window
 * coordinates: centre (*xc, *yc), radii r[20], size prior R, path prior ey.
 * fx, fy: scratch w*h floats. Returns the number of iterations. */
int lt_evolve(const float *F, int w, int h, float *fx, float *fy, double *xc, double *yc,
              double *r, double R, double ey, const lt_leuk_params *p);

/* One full tracking step of one cell on frame img (fw x fh), CPU reference:
 * prediction, local GICOV re-localisation, window, gradient magnitude,
 * MGVF, evolution, new GICOV and status. work: lt_leuk_track_work_size()
 * floats. */
size_t lt_leuk_track_work_size(const lt_leuk_params *p);
/* The MGVF of p's solver (lt_mgvf, or lt_mgvf_col when p->mgvf_col > 0);
 * tmp: w*h floats. Returns the number of iterations. */
int lt_leuk_mgvf(const lt_leuk_params *p, const float *E, int w, int h, float *F, float *tmp);
/* tpl: the cell's template (LT_LEUK_TPL_N floats; read, and refreshed on
 * a frame where it scores >= the threshold), or NULL without --appearance. */
void lt_leuk_track_cell(const float *img, int fw, int fh, const lt_stencil *s,
                        const lt_leuk_params *p, lt_leuk_cell *c, float *tpl, float *work);

/* A new track's state from a refined detection: centre, all radii and the
 * size prior R (the winning GICOV circle), sign of its GICOV, no velocity. */
void lt_leuk_cell_init(lt_leuk_cell *c, const lt_leuk_det *d, double R);
/* The cell's appearance template (LT_LEUK_TPL_N floats into tpl) from img
 * (fw x fh), the square of lt_leuk_tpl_px around its rounded centre. */
void lt_leuk_cell_template(const lt_leuk_cell *c, const float *img, int fw, int fh, float *tpl);

/* Snaxel angle j (exact pi). */
double lt_snaxel_angle(int j);

#endif
