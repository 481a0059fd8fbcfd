/* mode.c - the vcm mode's row of the mode table: its options, their
 * defaults and checks (the run itself is pipeline.c). Ranges are those of
 * the core (lt_vcm_params_check, vcm.h); checks that need the frame size
 * (a grid finer than the frame, a frame smaller than the patch) are made in
 * pipeline.c's begin. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "opt.h"
#include "vcm_mode.h"

enum {
  O_GRID = LT_OPT_MODE_BASE, O_POINTS_PER_CELL, O_PATCH, O_SEARCH, O_COHERENCE_RADIUS, O_TEMPORAL, O_EVIDENCE, O_FLO,
  O_ARROW_SCALE,
};

static const lt_optdef opts[] = {
  {"grid", O_GRID, required_argument, "GXxGY", "sub-windows across x down, or N for NxN (default 32x32)"},
  {"points-per-cell", O_POINTS_PER_CELL, required_argument, "K", "interest points per sub-window, 1..16 (default 2)"},
  {"patch", O_PATCH, required_argument, "P", "correlation patch side, odd, 1..31 px (default 5)"},
  {"search", O_SEARCH, required_argument, "S", "search area side, even, 2..128 px: offsets -S/2..S/2 (default 64)"},
  {"coherence-radius", O_COHERENCE_RADIUS, required_argument, "R", "neighbours within R px vote, 0..1024 (default 20)"},
  {"temporal", O_TEMPORAL, required_argument, "W", "weight of the previous pair's field as a prior, 0..10 (default 0 = off)"},
  {"evidence", O_EVIDENCE, required_argument, "A", "drop vectors >= 1 px whose 9x9 window matches frame t+1 no better than A x unmoved, 0..1 (default 0.7; 0 = keep all)"},
  {"flo", O_FLO, required_argument, "DIR", "dense field per pair interpolated from the vectors, Middlebury .flo"},
  {"arrow-scale", O_ARROW_SCALE, required_argument, "F", "--overlay arrows are F times the motion, 0..1000 (default 0 = auto)"},
};

static void defaults(void *params)
{
  lt_vcm_opts *o = params;
  memset(o, 0, sizeof *o);
  lt_vcm_params_default(&o->vcm);
}

/* "GXxGY" or "N", each 1..4096. */
static int parse_grid(const char *name, const char *a, int *gx, int *gy)
{
  char *e;
  long x = strtol(a, &e, 10), y;
  if (e == a || x < 1 || x > 4096) return lt_opt_bad(name, a, "expected GXxGY or N, each 1..4096");
  if (*e == '\0') {
    y = x;
  } else {
    if (*e != 'x' && *e != 'X') return lt_opt_bad(name, a, "expected GXxGY or N, each 1..4096");
    const char *b = e + 1;
    y = strtol(b, &e, 10);
    if (e == b || *e != '\0' || y < 1 || y > 4096 || b[0] == '-' || b[0] == '+' || b[0] == ' ')
      return lt_opt_bad(name, a, "expected GXxGY or N, each 1..4096");
  }
  if (a[0] == '-' || a[0] == '+' || a[0] == ' ') return lt_opt_bad(name, a, "expected GXxGY or N, each 1..4096");
  if (x * y * LT_VCM_MAX_K > 64L * 1024 * 1024) return lt_opt_bad(name, a, "too many sub-windows");
  *gx = (int)x;
  *gy = (int)y;
  return 0;
}

static int set(void *params, int id, const char *name, const char *a)
{
  lt_vcm_opts *o = params;
  lt_vcm_params *p = &o->vcm;
  double t;
  switch (id) {
  case O_GRID: return parse_grid(name, a, &p->grid_x, &p->grid_y);
  case O_POINTS_PER_CELL: return lt_opt_int(name, a, 1, LT_VCM_MAX_K, &p->points_per_cell);
  case O_PATCH:
    if (lt_opt_int(name, a, 1, LT_VCM_MAX_PATCH, &p->patch)) return LT_ERR_USAGE;
    if (p->patch % 2 == 0) return lt_opt_bad(name, a, "the patch side must be odd");
    return 0;
  case O_SEARCH:
    if (lt_opt_int(name, a, 2, LT_VCM_MAX_SEARCH, &p->search)) return LT_ERR_USAGE;
    if (p->search % 2) return lt_opt_bad(name, a, "the search side must be even");
    return 0;
  case O_COHERENCE_RADIUS: return lt_opt_int(name, a, 0, 1024, &p->coherence_radius);
  case O_TEMPORAL:
    if (lt_opt_double(name, a, 0.0, 10.0, &t)) return LT_ERR_USAGE;
    p->temporal_weight = (float)t;
    return 0;
  case O_EVIDENCE:
    if (lt_opt_double(name, a, 0.0, 1.0, &t)) return LT_ERR_USAGE;
    p->evidence = (float)t;
    return 0;
  case O_FLO:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    o->flo_dir = a;
    return 0;
  case O_ARROW_SCALE: return lt_opt_double(name, a, 0.0, 1000.0, &o->arrow_scale);
  }
  lt_error("internal: unhandled vcm option %d", id);
  return LT_ERR_INTERNAL;
}

static int check(void *params, const lt_settings *s)
{
  (void)params;
  if (s->ninputs == 0) {
    lt_error("no input video given (usage: leuktrack vcm [OPTIONS] INPUT, or two or more images; see --help)");
    return LT_ERR_USAGE;
  }
  return 0;
}

const lt_mode lt_mode_vcm = {
  .name = "vcm",
  .purpose = "sparse motion vectors between consecutive frames by Vector Coherence Mapping",
  .usage = "INPUT | IMAGE1 IMAGE2...",
  .example = "leuktrack vcm input.avi -o vectors.csv --overlay arrows/",
  .output_help = "Output (csv): frame,t_s,point,x_px,y_px,dx_px,dy_px,score (frame = first frame of the pair)",
  .opts = opts,
  .nopts = (int)(sizeof opts / sizeof opts[0]),
  .params_size = sizeof(lt_vcm_opts),
  .defaults = defaults,
  .set = set,
  .check = check,
  .run = lt_vcm_run,
};
