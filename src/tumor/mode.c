/* mode.c - the tumour mode's row of the mode table (SPEC 4.2): its options,
 * their defaults and checks. The run itself is pipeline.c. Template sources
 * are only recorded here (in command-line order); files are read, lists
 * expanded and frames cut when the run begins, once the frame size is known. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "opt.h"
#include "tumor/corr.h"
#include "tumor_mode.h"

enum {
  O_TEMPLATE = LT_OPT_MODE_BASE, O_TEMPLATES, O_TEMPLATE_FROM, O_SHIFT, O_ALL_TEMPLATES, O_SCORES, O_PLOT,
  O_EXACT,
};

static const lt_optdef opts[] = {
  {"template", O_TEMPLATE, required_argument, "FILE@X,Y",
   "template image (PNG/PGM/PPM) with its nominal top-left X,Y in the frame (repeatable)"},
  {"templates", O_TEMPLATES, required_argument, "LIST.csv",
   "templates listed as file,x,y per line (paths relative to the list's folder)"},
  {"template-from", O_TEMPLATE_FROM, required_argument, "FRAME:X,Y,W,H",
   "template cut from frame FRAME of the input at X,Y, W x H px (repeatable)"},
  {"shift", O_SHIFT, required_argument, "V,H", "shifts searched: rows -V..V, columns -H..H (default 8,8)"},
  {"all-templates", O_ALL_TEMPLATES, no_argument, NULL, "one row per template and frame (default: the best only)"},
  {"scores", O_SCORES, required_argument, "FILE", "every score of every template and frame (CSV)"},
  {"plot", O_PLOT, required_argument, "FILE.png", "score-over-time plot (+ FILE_shift.png: dy_sub, dx_sub)"},
  {"exact", O_EXACT, no_argument, NULL, "CPU reference by the definition (double, two passes) instead of the fast path"},
};

static void defaults(void *params)
{
  lt_tumor_opts *o = params;
  memset(o, 0, sizeof *o);
  o->shift_v = 8;
  o->shift_h = 8;
}

/* "A,B": two integers in [lo, hi], the whole string. */
static int two_ints(const char *s, long lo, long hi, int *a, int *b)
{
  char *e;
  errno = 0;
  long x = strtol(s, &e, 10);
  if (e == s || *e != ',' || errno) return -1;
  const char *s2 = e + 1;
  long y = strtol(s2, &e, 10);
  if (e == s2 || *e || errno) return -1;
  if (x < lo || x > hi || y < lo || y > hi) return -1;
  *a = (int)x;
  *b = (int)y;
  return 0;
}

static lt_tumor_spec *new_spec(lt_tumor_opts *o, const char *name, const char *a)
{
  if (o->nspec == LT_TUMOR_MAX_SPECS) {
    lt_opt_bad(name, a, "too many template options (at most 256; use --templates LIST.csv)");
    return NULL;
  }
  lt_tumor_spec *t = &o->spec[o->nspec++];
  memset(t, 0, sizeof *t);
  return t;
}

static int set(void *params, int id, const char *name, const char *a)
{
  lt_tumor_opts *o = params;
  lt_tumor_spec *t;
  switch (id) {
  case O_TEMPLATE: {
    const char *at = strrchr(a, '@');
    if (!at || at == a) return lt_opt_bad(name, a, "expected FILE@X,Y");
    int x, y;
    if (two_ints(at + 1, -4 * 65536, 4 * 65536, &x, &y))
      return lt_opt_bad(name, a, "expected FILE@X,Y with integer X,Y (the template's top-left in the frame)");
    if (!(t = new_spec(o, name, a))) return LT_ERR_USAGE;
    t->kind = LT_TSPEC_FILE;
    t->file = a;
    t->file_len = (int)(at - a);
    t->x = x;
    t->y = y;
    return 0;
  }
  case O_TEMPLATES:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    if (!(t = new_spec(o, name, a))) return LT_ERR_USAGE;
    t->kind = LT_TSPEC_LIST;
    t->file = a;
    t->file_len = (int)strlen(a);
    return 0;
  case O_TEMPLATE_FROM: {
    const char *colon = strchr(a, ':');
    char *e;
    errno = 0;
    long fr = strtol(a, &e, 10);
    if (!colon || e != colon || e == a || errno || fr < 0 || fr > INT_MAX)
      return lt_opt_bad(name, a, "expected FRAME:X,Y,W,H (FRAME a 0-based frame index)");
    int x, y, w, h;
    if (lt_opt_rect(name, colon + 1, &x, &y, &w, &h)) return LT_ERR_USAGE;
    if (w > LT_TUMOR_MAX_SIDE || h > LT_TUMOR_MAX_SIDE) return lt_opt_bad(name, a, "template side above 8192 px");
    if (!(t = new_spec(o, name, a))) return LT_ERR_USAGE;
    t->kind = LT_TSPEC_FROM;
    t->frame = (int)fr;
    t->x = x;
    t->y = y;
    t->w = w;
    t->h = h;
    return 0;
  }
  case O_SHIFT:
    if (two_ints(a, 0, LT_TUMOR_MAX_SHIFT, &o->shift_v, &o->shift_h))
      return lt_opt_bad(name, a, "expected V,H: two integers 0..4096 (rows, columns)");
    return 0;
  case O_ALL_TEMPLATES: o->all_templates = 1; return 0;
  case O_SCORES:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    o->scores = a;
    return 0;
  case O_PLOT:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    o->plot = a;
    return 0;
  case O_EXACT: o->exact = 1; return 0;
  }
  lt_error("internal: unhandled tumor option %d", id);
  return LT_ERR_INTERNAL;
}

static int check(void *params, const lt_settings *s)
{
  lt_tumor_opts *o = params;
  if (s->ninputs == 0) {
    lt_error("no input video given (usage: leuktrack tumor [OPTIONS] --template FILE@X,Y INPUT; see --help)");
    return LT_ERR_USAGE;
  }
  if (s->ninputs > 1) {
    lt_error("one input video expected, got %d ('%s', '%s'...); an image sequence is one pattern such as "
             "IM0_%%02d.jpg", s->ninputs, s->inputs[0], s->inputs[1]);
    return LT_ERR_USAGE;
  }
  if (o->nspec == 0) {
    lt_error("no templates given: use --template FILE@X,Y, --templates LIST.csv or --template-from FRAME:X,Y,W,H");
    return LT_ERR_USAGE;
  }
  /* a search window of (2V+1)(2H+1) positions per template: keep one frame's
   * maps (templates x positions floats) within reason */
  if ((long)(2 * o->shift_v + 1) * (2 * o->shift_h + 1) > 16L * 1024 * 1024) {
    lt_error("--shift %d,%d: %ld positions per template is too many (at most 16M)", o->shift_v, o->shift_h,
             (long)(2 * o->shift_v + 1) * (2 * o->shift_h + 1));
    return LT_ERR_USAGE;
  }
  if (o->exact && s->backend == LT_BACKEND_CUDA) {
    lt_error("--exact is the CPU reference; it cannot run with --backend cuda");
    return LT_ERR_USAGE;
  }
  return 0;
}

const lt_mode lt_mode_tumor = {
  .name = "tumor",
  .purpose = "track a tumour in fluoroscopy by matching static templates (Pearson correlation over shifts)",
  .usage = "INPUT",
  .example = "leuktrack tumor cine.mkv --template-from 0:200,180,54,53 --shift 18,9 -o track.csv",
  .output_help = "Output (csv): frame,t_s,template,dy,dx,row,col,score,dy_sub,dx_sub",
  .opts = opts,
  .nopts = (int)(sizeof opts / sizeof opts[0]),
  .params_size = sizeof(lt_tumor_opts),
  .defaults = defaults,
  .set = set,
  .check = check,
  .run = lt_tumor_run,
};
