/* lt_synth.c - deterministic generator of synthetic bright-field leukocyte
 * video with ground truth, for testing and demonstrating leuktrack.
 *
 * Image model (8-bit grey, pixel (c, r) has its centre at (c, r)):
 *   I(c, r, t) = clamp(round(B(c, r) + sum_k S_k(c, r, t) + N(0, noise^2)), 0, 255)
 *   B  static textured background: 120 + five random low-frequency sinusoids
 *      (wavelengths 60..300 px, total amplitude about +-15) + blurred white
 *      noise (std about 3, correlation length a few px).
 *   S_k  cell k as seen in bright field, a radial profile of d = |(c, r) - p_k(t)|:
 *      dark rim ring  rim_k (-35..-45 grey) on r_k-3 <= d <= r_k,
 *      interior       inner_k (-5..+12 grey) on d < r_k-3, with a faint darker
 *                     nucleus (-6 grey, radius r_k/2, off centre),
 *   every edge anti-aliased by the linear coverage clamp(R - d + 0.5, 0, 1).
 *   The truth radius r_k is the outer edge of the dark rim (uniform in [rmin, rmax]).
 * Motion: p_k(t) = p_k(t0) + v_k (t - t0) + j_k(t), speed |v_k| uniform in
 *   [vmin, vmax] px/frame, direction uniform within +-20 deg of +x, j_k a smooth
 *   jitter of two sinusoids per axis with |j| <= 0.2 px.  About C cells are inside
 *   frame 0 (placed uniformly); further cells enter from the left edge (first
 *   frame fully outside) at a rate C*E[v]/W per frame, which replaces the cells
 *   leaving at the right.  Cells are placed by rejection sampling so that for
 *   every pair, over every frame where either can be drawn, the centre distance
 *   exceeds r1 + r2 + 6 px (+0.6 px for the jitter), and so that every cell stays
 *   r + 3 px away from the top and bottom edges; a cell that cannot be placed
 *   is dropped (reported on stderr).
 * Randomness: splitmix64 seeded with --seed, Box-Muller for Gaussians; the same
 *   options give byte-identical video (FFmpeg bitexact flags) and truth files.
 * Output: lossless FFV1 (gray) or rawvideo (gray8) in Matroska or AVI, chosen by
 *   the extension of --out; truth CSV (RFC 4180) with one row per frame per cell
 *   whose centre lies in [0, W-1] x [0, H-1]:
 *   frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px  (v = instantaneous px/frame). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mathematics.h>

#define PROG "lt_synth"
#define SYN_PI 3.14159265358979323846

#define RIM_WIDTH 3.0     /* px, width of the dark rim ring */
#define DRAW_MARGIN 3.0   /* px beyond r where a cell still changes pixels */
#define GAP 6.0           /* px, required clearance between cell rims */
#define JITTER_MAX 0.2    /* px per axis */
#define MAX_ANGLE_DEG 20.0
#define PLACE_TRIES 4000

struct options {
  int width, height, frames, cells;
  uint64_t seed;
  double noise, vmin, vmax, rmin, rmax, fps;
  const char *out, *truth, *codec;
};

struct cell {
  int id;
  double x0, y0, t0;        /* base position at time t0 */
  double vx, vy, r;
  double rim, inner;        /* grey-level offsets */
  double nuc_dx, nuc_dy;    /* nucleus offset from the centre */
  double ja[4], jw[4], jp[4]; /* jitter: x uses terms 0,1; y uses 2,3 */
  double ta, tb;            /* interval (frames) in which the cell can be drawn */
};

/* ------------------------------------------------------------------ */
/* diagnostics */

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": error: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void averr(const char *what, int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE];
  av_strerror(code, buf, sizeof buf);
  err("%s: %s", what, buf);
}

/* ------------------------------------------------------------------ */
/* PRNG: splitmix64, uniform doubles with 53 bits, Box-Muller Gaussians */

struct rng {
  uint64_t s;
  int have_spare;
  double spare;
};

static uint64_t rng_next(struct rng *g) {
  uint64_t z = (g->s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double rng_unit(struct rng *g) { return (double)(rng_next(g) >> 11) * (1.0 / 9007199254740992.0); }

static double rng_uniform(struct rng *g, double a, double b) { return a + (b - a) * rng_unit(g); }

static double rng_gauss(struct rng *g) {
  if (g->have_spare) {
    g->have_spare = 0;
    return g->spare;
  }
  double u1 = rng_unit(g), u2 = rng_unit(g);
  double m = sqrt(-2.0 * log(1.0 - u1)); /* 1 - u1 in (0, 1] */
  g->spare = m * sin(2.0 * SYN_PI * u2);
  g->have_spare = 1;
  return m * cos(2.0 * SYN_PI * u2);
}

static void rng_seed(struct rng *g, uint64_t seed, uint64_t stream) {
  g->s = seed ^ (stream * 0xD1B54A32D192ED03ULL);
  g->have_spare = 0;
  (void)rng_next(g);
}

/* ------------------------------------------------------------------ */
/* options */

static void usage(FILE *f) {
  fprintf(f,
          "usage: " PROG " --out FILE.mkv|FILE.avi [--truth FILE.csv] [options]\n"
          "Generate a synthetic bright-field leukocyte video with ground truth.\n"
          "  --width W        frame width in px (default 640, >= 64)\n"
          "  --height H       frame height in px (default 480, >= 64)\n"
          "  --frames N       number of frames (default 120)\n"
          "  --cells C        cells inside frame 0 / on average (default 36)\n"
          "  --seed S         PRNG seed, unsigned 64-bit (default 1)\n"
          "  --noise SIGMA    Gaussian noise std in grey levels (default 4)\n"
          "  --vmin V --vmax V  speed range in px/frame (default 0.5, 6)\n"
          "  --rmin R --rmax R  radius range in px (default 8, 20)\n"
          "  --fps F          frame rate written to the container (default 30)\n"
          "  --codec ffv1|rawvideo  lossless codec (default ffv1)\n"
          "  --out FILE       output video; container from the extension (.mkv, .avi;\n"
          "                   .y4m = uncompressed YUV4MPEG2, needs no encoder)\n"
          "  --truth FILE     ground-truth CSV: frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px\n"
          "  --help           this text\n");
}

static int parse_int(const char *name, const char *s, long lo, long hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    err("--%s: expected an integer in [%ld, %ld], got '%s'", name, lo, hi, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int parse_double(const char *name, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
    err("--%s: expected a number in [%g, %g], got '%s'", name, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_u64(const char *name, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s == '-' || *s == '\0') {
    err("--%s: expected an unsigned integer, got '%s'", name, s);
    return -1;
  }
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end) {
    err("--%s: expected an unsigned integer, got '%s'", name, s);
    return -1;
  }
  *out = (uint64_t)v;
  return 0;
}

static const char *extension(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash)) return "";
  return dot + 1;
}

/* Returns 0, 1 for --help, or -1 after a message. */
static int parse_options(int argc, char **argv, struct options *o) {
  enum { O_W = 256, O_H, O_N, O_C, O_SEED, O_NOISE, O_VMIN, O_VMAX, O_RMIN, O_RMAX, O_FPS, O_CODEC, O_OUT, O_TRUTH, O_HELP };
  static const struct option table[] = {
      {"width", required_argument, 0, O_W},     {"height", required_argument, 0, O_H},
      {"frames", required_argument, 0, O_N},    {"cells", required_argument, 0, O_C},
      {"seed", required_argument, 0, O_SEED},   {"noise", required_argument, 0, O_NOISE},
      {"vmin", required_argument, 0, O_VMIN},   {"vmax", required_argument, 0, O_VMAX},
      {"rmin", required_argument, 0, O_RMIN},   {"rmax", required_argument, 0, O_RMAX},
      {"fps", required_argument, 0, O_FPS},     {"codec", required_argument, 0, O_CODEC},
      {"out", required_argument, 0, O_OUT},     {"truth", required_argument, 0, O_TRUTH},
      {"help", no_argument, 0, O_HELP},         {0, 0, 0, 0}};
  *o = (struct options){.width = 640, .height = 480, .frames = 120, .cells = 36, .seed = 1,
                        .noise = 4.0, .vmin = 0.5, .vmax = 6.0, .rmin = 8.0, .rmax = 20.0,
                        .fps = 30.0, .codec = "ffv1"};
  opterr = 0;
  int c, rc = 0;
  while ((c = getopt_long(argc, argv, "", table, NULL)) != -1) {
    switch (c) {
    case O_W: rc = parse_int("width", optarg, 64, 16384, &o->width); break;
    case O_H: rc = parse_int("height", optarg, 64, 16384, &o->height); break;
    case O_N: rc = parse_int("frames", optarg, 1, 1000000, &o->frames); break;
    case O_C: rc = parse_int("cells", optarg, 0, 100000, &o->cells); break;
    case O_SEED: rc = parse_u64("seed", optarg, &o->seed); break;
    case O_NOISE: rc = parse_double("noise", optarg, 0.0, 128.0, &o->noise); break;
    case O_VMIN: rc = parse_double("vmin", optarg, 0.01, 1000.0, &o->vmin); break;
    case O_VMAX: rc = parse_double("vmax", optarg, 0.01, 1000.0, &o->vmax); break;
    case O_RMIN: rc = parse_double("rmin", optarg, 2.0, 4096.0, &o->rmin); break;
    case O_RMAX: rc = parse_double("rmax", optarg, 2.0, 4096.0, &o->rmax); break;
    case O_FPS: rc = parse_double("fps", optarg, 0.1, 10000.0, &o->fps); break;
    case O_CODEC: o->codec = optarg; break;
    case O_OUT: o->out = optarg; break;
    case O_TRUTH: o->truth = optarg; break;
    case O_HELP: usage(stdout); return 1;
    default:
      if (optopt && optopt < 256)
        err("unknown option '-%c' (see --help)", optopt);
      else
        err("unknown option or missing argument '%s' (see --help)", argv[optind - 1]);
      return -1;
    }
    if (rc) return -1;
  }
  if (optind < argc) {
    err("unexpected argument '%s' (see --help)", argv[optind]);
    return -1;
  }
  if (!o->out) {
    err("--out FILE is required (see --help)");
    return -1;
  }
  if (o->vmin > o->vmax) {
    err("--vmin %g is larger than --vmax %g", o->vmin, o->vmax);
    return -1;
  }
  if (o->rmin > o->rmax) {
    err("--rmin %g is larger than --rmax %g", o->rmin, o->rmax);
    return -1;
  }
  if (2.0 * (o->rmax + DRAW_MARGIN) + 2.0 > o->height) {
    err("--rmax %g is too large for a frame height of %d", o->rmax, o->height);
    return -1;
  }
  if (strcmp(o->codec, "ffv1") && strcmp(o->codec, "rawvideo")) {
    err("--codec: expected 'ffv1' or 'rawvideo', got '%s'", o->codec);
    return -1;
  }
  const char *ext = extension(o->out);
  if (strcasecmp(ext, "mkv") && strcasecmp(ext, "avi") && strcasecmp(ext, "y4m")) {
    err("--out '%s': the extension must be .mkv, .avi or .y4m", o->out);
    return -1;
  }
  if (o->truth && !strcmp(o->truth, o->out)) {
    err("--truth and --out name the same file");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* the scene: cells and their trajectories */

static double cell_jit(const struct cell *k, int axis, double t, double *deriv) {
  double p = 0.0, d = 0.0;
  for (int i = 2 * axis; i < 2 * axis + 2; i++) {
    p += k->ja[i] * sin(k->jw[i] * t + k->jp[i]);
    d += k->ja[i] * k->jw[i] * cos(k->jw[i] * t + k->jp[i]);
  }
  if (deriv) *deriv = d;
  return p;
}

static void cell_pos(const struct cell *k, double t, double *x, double *y, double *vx, double *vy) {
  double djx, djy;
  *x = k->x0 + k->vx * (t - k->t0) + cell_jit(k, 0, t, &djx);
  *y = k->y0 + k->vy * (t - k->t0) + cell_jit(k, 1, t, &djy);
  if (vx) *vx = k->vx + djx;
  if (vy) *vy = k->vy + djy;
}

/* Frames during which the base trajectory can touch the image, clipped to [0, N-1];
 * returns 0 if the cell is never drawn. vx > 0 always. */
static int cell_interval(struct cell *k, const struct options *o) {
  double reach = k->r + DRAW_MARGIN + JITTER_MAX;
  double t_in = k->t0 + (-reach - k->x0) / k->vx;
  double t_out = k->t0 + ((o->width - 1) + reach - k->x0) / k->vx;
  k->ta = fmax(t_in, 0.0);
  k->tb = fmin(t_out, (double)(o->frames - 1));
  return k->ta <= k->tb;
}

/* Vertical clearance: the centre stays r + 3 px inside the top and bottom edges. */
static int cell_inside_rows(const struct cell *k, const struct options *o) {
  double lo = k->r + DRAW_MARGIN + JITTER_MAX, hi = (o->height - 1) - lo;
  double ya = k->y0 + k->vy * (k->ta - k->t0), yb = k->y0 + k->vy * (k->tb - k->t0);
  return ya >= lo && ya <= hi && yb >= lo && yb <= hi;
}

/* Minimum distance of two linear base trajectories over their common interval
 * exceeds the clearance (jitter handled by a margin). */
static int cells_clear(const struct cell *a, const struct cell *b) {
  double t0 = fmax(a->ta, b->ta), t1 = fmin(a->tb, b->tb);
  if (t0 > t1) return 1;
  /* relative position at t: D0 + DV t */
  double dx0 = (a->x0 - a->vx * a->t0) - (b->x0 - b->vx * b->t0);
  double dy0 = (a->y0 - a->vy * a->t0) - (b->y0 - b->vy * b->t0);
  double dvx = a->vx - b->vx, dvy = a->vy - b->vy;
  double vv = dvx * dvx + dvy * dvy;
  double t = t0;
  if (vv > 0) {
    t = -(dx0 * dvx + dy0 * dvy) / vv;
    t = fmin(fmax(t, t0), t1);
  }
  double dx = dx0 + dvx * t, dy = dy0 + dvy * t;
  double need = a->r + b->r + GAP + 2.0 * sqrt(2.0) * JITTER_MAX; /* both jitters */
  return dx * dx + dy * dy > need * need;
}

/* Draw the appearance and motion of one candidate cell (position set by the caller). */
static void cell_random(struct cell *k, struct rng *g, const struct options *o) {
  k->r = rng_uniform(g, o->rmin, o->rmax);
  double speed = rng_uniform(g, o->vmin, o->vmax);
  double ang = rng_uniform(g, -MAX_ANGLE_DEG, MAX_ANGLE_DEG) * SYN_PI / 180.0;
  k->vx = speed * cos(ang);
  k->vy = speed * sin(ang);
  k->rim = rng_uniform(g, -45.0, -35.0);
  k->inner = rng_uniform(g, -5.0, 12.0);
  double na = rng_uniform(g, 0.0, 2.0 * SYN_PI);
  k->nuc_dx = 0.2 * k->r * cos(na);
  k->nuc_dy = 0.2 * k->r * sin(na);
  for (int i = 0; i < 4; i++) {
    k->ja[i] = rng_uniform(g, 0.02, JITTER_MAX / 2.0);
    k->jw[i] = 2.0 * SYN_PI / rng_uniform(g, 15.0, 60.0);
    k->jp[i] = rng_uniform(g, 0.0, 2.0 * SYN_PI);
  }
}

static int place_ok(const struct cell *k, const struct cell *cells, int n, const struct options *o) {
  if (!cell_inside_rows(k, o)) return 0;
  for (int i = 0; i < n; i++)
    if (!cells_clear(k, &cells[i])) return 0;
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Build the scene. Returns the number of cells placed (ids 1..n) or -1. */
static int make_scene(const struct options *o, struct cell **out_cells) {
  struct rng g;
  rng_seed(&g, o->seed, 1);
  double mean_v = 0.5 * (o->vmin + o->vmax) * 0.98; /* E[cos] over +-20 deg ~ 0.98 */
  int n_enter = o->frames > 1 ? (int)floor(o->cells * mean_v / o->width * (o->frames - 1) + 0.5) : 0;
  int cap = o->cells + n_enter;
  struct cell *cells = calloc(cap > 0 ? (size_t)cap : 1, sizeof *cells);
  double *tes = malloc((n_enter > 0 ? (size_t)n_enter : 1) * sizeof *tes);
  if (!cells || !tes) {
    err("out of memory for %d cells", cap);
    free(cells);
    free(tes);
    return -1;
  }
  int n = 0, dropped = 0;
  /* cells inside frame 0: centre uniform over the frame */
  for (int i = 0; i < o->cells; i++) {
    int ok = 0;
    for (int tr = 0; tr < PLACE_TRIES && !ok; tr++) {
      struct cell k;
      cell_random(&k, &g, o);
      k.t0 = 0.0;
      k.x0 = rng_uniform(&g, 0.0, o->width - 1);
      k.y0 = rng_uniform(&g, 0.0, o->height - 1);
      if (!cell_interval(&k, o)) continue;
      if (place_ok(&k, cells, n, o)) {
        cells[n++] = k;
        ok = 1;
      }
    }
    dropped += !ok;
  }
  int n_initial = n;
  /* entering cells: entry times uniform in (0, N-1), fully outside at entry */
  for (int i = 0; i < n_enter; i++) tes[i] = rng_uniform(&g, 0.0, o->frames - 1);
  qsort(tes, (size_t)n_enter, sizeof *tes, cmp_double);
  for (int i = 0; i < n_enter; i++) {
    int ok = 0;
    for (int tr = 0; tr < PLACE_TRIES && !ok; tr++) {
      struct cell k;
      cell_random(&k, &g, o);
      k.t0 = tes[i];
      k.x0 = -(k.r + DRAW_MARGIN + JITTER_MAX);
      k.y0 = rng_uniform(&g, 0.0, o->height - 1);
      if (!cell_interval(&k, o)) continue;
      if (place_ok(&k, cells, n, o)) {
        cells[n++] = k;
        ok = 1;
      }
    }
    dropped += !ok;
  }
  for (int i = 0; i < n; i++) cells[i].id = i + 1;
  if (dropped)
    note("warning: %d of %d cells could not be placed without overlap and were dropped", dropped, cap);
  note("%d cells: %d inside frame 0, %d entering from the left", n, n_initial, n - n_initial);
  free(tes);
  *out_cells = cells;
  return n;
}

/* ------------------------------------------------------------------ */
/* rendering */

static double cover(double d, double R) {
  double c = R - d + 0.5;
  return c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
}

/* Static background texture (grey ~120), W*H doubles. */
static double *make_background(const struct options *o) {
  int W = o->width, H = o->height;
  size_t np = (size_t)W * H;
  double *bg = malloc(np * sizeof *bg), *tmp = malloc(np * sizeof *tmp);
  if (!bg || !tmp) {
    err("out of memory for a %dx%d background", W, H);
    free(bg);
    free(tmp);
    return NULL;
  }
  struct rng g;
  rng_seed(&g, o->seed, 2);
  /* blurred white noise: three passes of a 7-px box blur in x and y */
  for (size_t i = 0; i < np; i++) bg[i] = rng_gauss(&g);
  for (int pass = 0; pass < 3; pass++) {
    for (int r = 0; r < H; r++)
      for (int c = 0; c < W; c++) {
        double s = 0.0;
        for (int d = -3; d <= 3; d++) {
          int cc = c + d < 0 ? -(c + d) : (c + d >= W ? 2 * W - 2 - (c + d) : c + d);
          s += bg[(size_t)r * W + cc];
        }
        tmp[(size_t)r * W + c] = s / 7.0;
      }
    for (int r = 0; r < H; r++)
      for (int c = 0; c < W; c++) {
        double s = 0.0;
        for (int d = -3; d <= 3; d++) {
          int rr = r + d < 0 ? -(r + d) : (r + d >= H ? 2 * H - 2 - (r + d) : r + d);
          s += tmp[(size_t)rr * W + c];
        }
        bg[(size_t)r * W + c] = s / 7.0;
      }
  }
  double ss = 0.0;
  for (size_t i = 0; i < np; i++) ss += bg[i] * bg[i];
  double scale = ss > 0 ? 3.0 / sqrt(ss / (double)np) : 0.0;
  /* low-frequency sinusoids */
  enum { NS = 5 };
  double amp[NS], kx[NS], ky[NS], ph[NS];
  for (int i = 0; i < NS; i++) {
    double wl = rng_uniform(&g, 60.0, 300.0), dir = rng_uniform(&g, 0.0, SYN_PI);
    amp[i] = rng_uniform(&g, 2.0, 4.0);
    kx[i] = 2.0 * SYN_PI / wl * cos(dir);
    ky[i] = 2.0 * SYN_PI / wl * sin(dir);
    ph[i] = rng_uniform(&g, 0.0, 2.0 * SYN_PI);
  }
  for (int r = 0; r < H; r++)
    for (int c = 0; c < W; c++) {
      double v = 120.0 + scale * bg[(size_t)r * W + c];
      for (int i = 0; i < NS; i++) v += amp[i] * sin(kx[i] * c + ky[i] * r + ph[i]);
      bg[(size_t)r * W + c] = v;
    }
  free(tmp);
  return bg;
}

static void draw_cell(double *img, int W, int H, const struct cell *k, double cx, double cy) {
  double reach = k->r + DRAW_MARGIN;
  int c0 = (int)floor(cx - reach), c1 = (int)ceil(cx + reach);
  int r0 = (int)floor(cy - reach), r1 = (int)ceil(cy + reach);
  if (c0 < 0) c0 = 0;
  if (r0 < 0) r0 = 0;
  if (c1 > W - 1) c1 = W - 1;
  if (r1 > H - 1) r1 = H - 1;
  double r_in = k->r - RIM_WIDTH, r_nuc = 0.5 * k->r;
  for (int r = r0; r <= r1; r++)
    for (int c = c0; c <= c1; c++) {
      double dx = c - cx, dy = r - cy;
      double d = sqrt(dx * dx + dy * dy);
      if (d > reach) continue;
      double outer = cover(d, k->r), inner = cover(d, r_in);
      double dn = sqrt((dx - k->nuc_dx) * (dx - k->nuc_dx) + (dy - k->nuc_dy) * (dy - k->nuc_dy));
      double nuc = cover(dn, r_nuc) * inner;
      img[(size_t)r * W + c] += k->rim * (outer - inner) + k->inner * inner - 6.0 * nuc;
    }
}

/* ------------------------------------------------------------------ */
/* video output (libavformat/libavcodec) */

struct writer {
  FILE *y4m; /* .y4m: YUV4MPEG2 mono written directly (no encoder needed) */
  AVFormatContext *fmt;
  AVCodecContext *enc;
  AVStream *st;
  AVFrame *frame;
  AVPacket *pkt;
  int header_written;
};

static int writer_drain(struct writer *w, const char *path) {
  for (;;) {
    int ret = avcodec_receive_packet(w->enc, w->pkt);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return 0;
    if (ret < 0) {
      averr("encoding", ret);
      return -1;
    }
    av_packet_rescale_ts(w->pkt, w->enc->time_base, w->st->time_base);
    w->pkt->stream_index = w->st->index;
    ret = av_interleaved_write_frame(w->fmt, w->pkt);
    if (ret < 0) {
      char what[512];
      snprintf(what, sizeof what, "writing '%s'", path);
      averr(what, ret);
      return -1;
    }
  }
}

static void writer_free(struct writer *w) {
  if (w->y4m) fclose(w->y4m);
  if (w->fmt && w->fmt->pb && !(w->fmt->oformat->flags & AVFMT_NOFILE)) avio_closep(&w->fmt->pb);
  avformat_free_context(w->fmt);
  avcodec_free_context(&w->enc);
  av_frame_free(&w->frame);
  av_packet_free(&w->pkt);
  memset(w, 0, sizeof *w);
}

static int writer_open(struct writer *w, const struct options *o) {
  memset(w, 0, sizeof *w);
  if (!strcasecmp(extension(o->out), "y4m")) {
    w->y4m = fopen(o->out, "wb");
    if (!w->y4m) {
      err("cannot write '%s': %s", o->out, strerror(errno));
      return -1;
    }
    int num = (int)lround(o->fps * 1000), den = 1000;
    fprintf(w->y4m, "YUV4MPEG2 W%d H%d F%d:%d Ip A1:1 Cmono\n", o->width, o->height, num, den);
    return 0;
  }
  const char *fmtname = !strcasecmp(extension(o->out), "avi") ? "avi" : "matroska";
  int raw = !strcmp(o->codec, "rawvideo");
  char what[512];
  int ret = avformat_alloc_output_context2(&w->fmt, NULL, fmtname, o->out);
  if (ret < 0 || !w->fmt) {
    snprintf(what, sizeof what, "cannot set up the %s muxer for '%s'", fmtname, o->out);
    averr(what, ret < 0 ? ret : AVERROR(ENOMEM));
    return -1;
  }
  w->fmt->flags |= AVFMT_FLAG_BITEXACT; /* no random UIDs: same seed, same bytes */
  const AVCodec *codec = avcodec_find_encoder(raw ? AV_CODEC_ID_RAWVIDEO : AV_CODEC_ID_FFV1);
  if (!codec) {
    err("this FFmpeg has no %s encoder", o->codec);
    goto fail;
  }
  w->st = avformat_new_stream(w->fmt, NULL);
  w->enc = avcodec_alloc_context3(codec);
  w->frame = av_frame_alloc();
  w->pkt = av_packet_alloc();
  if (!w->st || !w->enc || !w->frame || !w->pkt) {
    err("out of memory setting up the encoder");
    goto fail;
  }
  AVRational fr = av_d2q(o->fps, 1000000);
  w->enc->width = o->width;
  w->enc->height = o->height;
  w->enc->pix_fmt = AV_PIX_FMT_GRAY8;
  w->enc->time_base = av_inv_q(fr);
  w->enc->framerate = fr;
  w->enc->sample_aspect_ratio = (AVRational){1, 1};
  w->enc->gop_size = 1; /* every frame a keyframe: exact seeking */
  w->enc->thread_count = 1;
  w->enc->flags |= AV_CODEC_FLAG_BITEXACT;
  if (w->fmt->oformat->flags & AVFMT_GLOBALHEADER) w->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if ((ret = avcodec_open2(w->enc, codec, NULL)) < 0) {
    snprintf(what, sizeof what, "cannot open the %s encoder (%dx%d gray)", o->codec, o->width, o->height);
    averr(what, ret);
    goto fail;
  }
  if ((ret = avcodec_parameters_from_context(w->st->codecpar, w->enc)) < 0) {
    averr("copying encoder parameters", ret);
    goto fail;
  }
  w->st->time_base = w->enc->time_base;
  w->st->avg_frame_rate = fr;
  w->st->r_frame_rate = fr;
  w->frame->format = AV_PIX_FMT_GRAY8;
  w->frame->width = o->width;
  w->frame->height = o->height;
  if ((ret = av_frame_get_buffer(w->frame, 0)) < 0) {
    averr("allocating a frame", ret);
    goto fail;
  }
  if (!(w->fmt->oformat->flags & AVFMT_NOFILE)) {
    if ((ret = avio_open(&w->fmt->pb, o->out, AVIO_FLAG_WRITE)) < 0) {
      snprintf(what, sizeof what, "cannot create '%s'", o->out);
      averr(what, ret);
      goto fail;
    }
  }
  AVDictionary *mo = NULL;
  if ((ret = avformat_write_header(w->fmt, &mo)) < 0) {
    av_dict_free(&mo);
    snprintf(what, sizeof what, "writing the header of '%s'", o->out);
    averr(what, ret);
    goto fail;
  }
  av_dict_free(&mo);
  w->header_written = 1;
  return 0;
fail:
  writer_free(w);
  return -1;
}

static int writer_put(struct writer *w, const struct options *o, const uint8_t *img, int64_t pts) {
  if (w->y4m) {
    fputs("FRAME\n", w->y4m);
    return fwrite(img, 1, (size_t)o->width * o->height, w->y4m) == (size_t)o->width * o->height ? 0 : -1;
  }
  int ret = av_frame_make_writable(w->frame);
  if (ret < 0) {
    averr("making a frame writable", ret);
    return -1;
  }
  for (int r = 0; r < o->height; r++)
    memcpy(w->frame->data[0] + (size_t)r * w->frame->linesize[0], img + (size_t)r * o->width, (size_t)o->width);
  w->frame->pts = pts;
  if ((ret = avcodec_send_frame(w->enc, w->frame)) < 0) {
    averr("sending a frame to the encoder", ret);
    return -1;
  }
  return writer_drain(w, o->out);
}

static int writer_finish(struct writer *w, const struct options *o) {
  if (w->y4m) {
    int bad = fflush(w->y4m) != 0 || ferror(w->y4m);
    bad |= fclose(w->y4m) != 0;
    w->y4m = NULL;
    if (bad) err("writing '%s' failed: %s", o->out, strerror(errno));
    return bad ? -1 : 0;
  }
  int ret = avcodec_send_frame(w->enc, NULL);
  if (ret < 0 && ret != AVERROR_EOF) {
    averr("flushing the encoder", ret);
    return -1;
  }
  if (writer_drain(w, o->out)) return -1;
  if ((ret = av_write_trailer(w->fmt)) < 0) {
    char what[512];
    snprintf(what, sizeof what, "writing the trailer of '%s'", o->out);
    averr(what, ret);
    return -1;
  }
  if (!(w->fmt->oformat->flags & AVFMT_NOFILE) && (ret = avio_closep(&w->fmt->pb)) < 0) {
    char what[512];
    snprintf(what, sizeof what, "closing '%s'", o->out);
    averr(what, ret);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */

static int write_truth_rows(FILE *f, const struct options *o, const struct cell *cells, int n, int t) {
  for (int i = 0; i < n; i++) {
    const struct cell *k = &cells[i];
    if (t < k->ta - 1.0 || t > k->tb + 1.0) continue;
    double x, y, vx, vy;
    cell_pos(k, t, &x, &y, &vx, &vy);
    if (x < 0.0 || x > o->width - 1 || y < 0.0 || y > o->height - 1) continue;
    if (fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", t, k->id, x, y, k->r, vx, vy) < 0) return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct options o;
  int prc = parse_options(argc, argv, &o);
  if (prc > 0) return 0;
  if (prc < 0) return 2;
  av_log_set_level(AV_LOG_ERROR);

  int status = 1, n_in0 = 0;
  struct cell *cells = NULL;
  double *bg = NULL, *img = NULL;
  uint8_t *pix = NULL;
  FILE *tf = NULL;
  struct writer w = {0};
  int opened = 0, truth_created = 0;
  int n = make_scene(&o, &cells);
  if (n < 0) goto done;
  if (!(bg = make_background(&o))) goto done;
  size_t np = (size_t)o.width * o.height;
  img = malloc(np * sizeof *img);
  pix = malloc(np);
  if (!img || !pix) {
    err("out of memory for a %dx%d frame", o.width, o.height);
    goto done;
  }
  if (o.truth) {
    if (!(tf = fopen(o.truth, "w"))) {
      err("cannot create '%s': %s", o.truth, strerror(errno));
      goto done;
    }
    truth_created = 1;
    if (fprintf(tf, "frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px\n") < 0) goto truth_err;
  }
  if (writer_open(&w, &o)) goto done;
  opened = 1;
  struct rng noise;
  rng_seed(&noise, o.seed, 3);
  for (int t = 0; t < o.frames; t++) {
    memcpy(img, bg, np * sizeof *img);
    for (int i = 0; i < n; i++) {
      const struct cell *k = &cells[i];
      if (t < k->ta - 1.0 || t > k->tb + 1.0) continue;
      double x, y;
      cell_pos(k, t, &x, &y, NULL, NULL);
      if (t == 0 && x >= 0.0 && x <= o.width - 1 && y >= 0.0 && y <= o.height - 1) n_in0++;
      draw_cell(img, o.width, o.height, k, x, y);
    }
    for (size_t i = 0; i < np; i++) {
      double v = floor(img[i] + o.noise * rng_gauss(&noise) + 0.5);
      pix[i] = (uint8_t)(v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v));
    }
    if (writer_put(&w, &o, pix, t)) goto done;
    if (tf && write_truth_rows(tf, &o, cells, n, t)) goto truth_err;
  }
  if (writer_finish(&w, &o)) goto done;
  if (tf) {
    int bad = ferror(tf);
    if (fclose(tf) != 0 || bad) {
      tf = NULL;
      goto truth_err;
    }
    tf = NULL;
  }
  note("wrote %s (%dx%d, %d frames, %s, %d cells in frame 0)%s%s", o.out, o.width, o.height, o.frames, o.codec,
       n_in0, o.truth ? " and " : "", o.truth ? o.truth : "");
  status = 0;
  goto done;
truth_err:
  err("writing '%s': %s", o.truth, strerror(errno));
done:
  if (tf) fclose(tf);
  writer_free(&w);
  if (status) {
    if (opened) unlink(o.out);
    if (truth_created) unlink(o.truth);
  }
  free(cells);
  free(bg);
  free(img);
  free(pix);
  return status;
}
