/* mode.c - the flow mode's row of the mode table (SPEC 4.4): its options,
 * their defaults (the solver's tuned defaults, clg.h) and checks; the run
 * itself is pipeline.c. */
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "flow/flow_mode.h"
#include "log.h"
#include "opt.h"

enum {
  O_ALPHA = LT_OPT_MODE_BASE, O_RHO, O_SIGMA, O_LEVELS, O_WARPS, O_ITERATIONS, O_COLOR, O_SUMMARY,
  O_GROUND_TRUTH, O_MASK, O_PLOT, O_3D, O_BETA, O_DISPLACEMENT, O_EPS_DATA, O_EPS_SMOOTH, O_OMEGA,
};


static const lt_optdef opts[] = {
  {"alpha", O_ALPHA, required_argument, "A", "smoothness weight, > 0 (default 500, with --3d 50; intensities 0..255)"},
  {"rho", O_RHO, required_argument, "S", "motion-tensor integration scale, px, 0..16 (default 2)"},
  {"sigma", O_SIGMA, required_argument, "S", "pre-smoothing of both frames, px, 0..16 (default 0.5)"},
  {"levels", O_LEVELS, required_argument, "N", "coarse-to-fine pyramid levels, 1..16 (default 3)"},
  {"warps", O_WARPS, required_argument, "N", "warps (re-linearisations) per level, 1..1000 (default 2)"},
  {"iterations", O_ITERATIONS, required_argument, "N",
   "relaxation iterations per warp on the finest level, doubled per coarser level, 1..100000 (default 10)"},
  {"eps-data", O_EPS_DATA, required_argument, "E", "Charbonnier scale of the data term, grey levels; 0 = quadratic (default 1)"},
  {"eps-smooth", O_EPS_SMOOTH, required_argument, "E",
   "Charbonnier scale of the smoothness term, flow gradient; 0 = quadratic (default 0.03)"},
  {"omega", O_OMEGA, required_argument, "W", "relaxation: SOR factor in (0, 2), or 0 for Jacobi (default 1.8)"},
  {"color", O_COLOR, no_argument, NULL, "also write a Middlebury colour-coded PNG next to each .flo"},
  {"summary", O_SUMMARY, required_argument, "FILE", "per-pair CSV: frame,t_s,mean_mag_px,p95_mag_px,max_mag_px"},
  {"ground-truth", O_GROUND_TRUTH, required_argument, "FILE", "true flow (.flo) of the first pair: print AEE and AAE on stdout"},
  {"mask", O_MASK, required_argument, "PNG", "with --ground-truth: evaluate only where the mask is non-zero"},
  {"plot", O_PLOT, required_argument, "FILE", "PNG plot of mean and p95 flow magnitude over the pairs"},
  {"3d", O_3D, no_argument, NULL, "3D motion of a NIfTI volume sequence (a 4D file or several 3D files)"},
  {"beta", O_BETA, required_argument, "B", "--3d: weight of the volume-preserving (divergence) term (default 0)"},
  {"displacement", O_DISPLACEMENT, required_argument, "world|voxel", "--3d: components in world mm (default) or along the voxel axes"},
};

static void defaults(void *params)
{
  lt_flow_opts *o = params;
  memset(o, 0, sizeof *o);
  lt_flow_params_default(&o->flow);
}

static int set(void *params, int id, const char *name, const char *a)
{
  lt_flow_opts *o = params;
  double d;
  switch (id) {
  case O_ALPHA:
    if (lt_opt_double(name, a, 0.0, 1e8, &d)) return LT_ERR_USAGE;
    if (!(d > 0)) return lt_opt_bad(name, a, "must be > 0");
    o->flow.alpha = (float)d;
    o->alpha_set = 1;
    return 0;
  case O_RHO:
  case O_SIGMA:
    /* the Gaussian's radius (3 sigma) is bounded by the solver's kernel size */
    if (lt_opt_double(name, a, 0.0, LT_GAUSS_RMAX / 3.0, &d)) return LT_ERR_USAGE;
    if (id == O_RHO) o->flow.rho = (float)d;
    else o->flow.sigma = (float)d;
    return 0;
  case O_EPS_DATA:
  case O_EPS_SMOOTH:
    if (lt_opt_double(name, a, 0.0, 1e8, &d)) return LT_ERR_USAGE;
    if (id == O_EPS_DATA) o->flow.eps_data = (float)d;
    else o->flow.eps_smooth = (float)d;
    return 0;
  case O_OMEGA:
    if (lt_opt_double(name, a, 0.0, 2.0, &d)) return LT_ERR_USAGE;
    if (!(d < 2.0)) return lt_opt_bad(name, a, "must be below 2 (SOR diverges at 2)");
    o->flow.omega = (float)d;
    return 0;
  case O_LEVELS: return lt_opt_int(name, a, 1, LT_FLOW_MAX_LEVELS, &o->flow.levels);
  case O_WARPS: return lt_opt_int(name, a, 1, 1000, &o->flow.warps);
  case O_ITERATIONS: return lt_opt_int(name, a, 1, LT_FLOW_MAX_ITERATIONS, &o->flow.iterations);
  case O_COLOR: o->color = 1; return 0;
  case O_3D: o->three_d = 1; return 0;
  case O_BETA:
    if (lt_opt_double(name, a, 0.0, 1e8, &d)) return LT_ERR_USAGE;
    o->flow.beta = (float)d;
    return 0;
  case O_DISPLACEMENT: return lt_opt_choice(name, a, "world|voxel", &o->voxel_axes);
  case O_SUMMARY:
  case O_GROUND_TRUTH:
  case O_MASK:
  case O_PLOT:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    if (id == O_SUMMARY) o->summary = a;
    else if (id == O_GROUND_TRUTH) o->ground_truth = a;
    else if (id == O_MASK) o->mask = a;
    else o->plot = a;
    return 0;
  }
  lt_error("internal: unhandled flow option %d", id);
  return LT_ERR_INTERNAL;
}

static int is_stdout(const char *p) { return p && !strcmp(p, "-"); }

static int check(void *params, const lt_settings *s)
{
  lt_flow_opts *o = params;
  if (s->ninputs == 0) {
    lt_error("no input given (usage: leuktrack flow [OPTIONS] A B -o OUT.flo, or VIDEO -o DIR; see --help)");
    return LT_ERR_USAGE;
  }
  if (o->three_d && !o->alpha_set) o->flow.alpha = LT_FLOW_DEFAULT_ALPHA_3D;
  if (lt_flow_params_check(&o->flow)) return LT_ERR_USAGE;
  if (o->three_d) {
    if (o->ground_truth || o->mask || o->plot) {
      lt_error("--ground-truth, --mask and --plot are for 2D flow; not with --3d");
      return LT_ERR_USAGE;
    }
    if (!s->output && !o->summary) {
      lt_error("no output given: -o OUT.nii.gz (one pair) or -o DIR (a sequence), or --summary");
      return LT_ERR_USAGE;
    }
    if (o->color && !s->output) {
      lt_error("--color with --3d writes a mid-slice PNG next to each field: give -o");
      return LT_ERR_USAGE;
    }
    return 0;
  }
  if (o->flow.beta != 0 || o->voxel_axes) {
    lt_error("--beta and --displacement are for --3d");
    return LT_ERR_USAGE;
  }
  /* two inputs: an image pair, -o is the .flo; one video (or 3+ images):
   * every consecutive pair, -o is a folder (also for a pair when -o names
   * an existing folder: DIR/flow_NNNNNN.flo) */
  struct stat st;
  o->folder = s->ninputs != 2 || (s->output && stat(s->output, &st) == 0 && S_ISDIR(st.st_mode));
  if (o->mask && !o->ground_truth) {
    lt_error("--mask needs --ground-truth (it selects the pixels evaluated)");
    return LT_ERR_USAGE;
  }
  if (!s->output && !o->ground_truth && !o->summary && !o->plot) {
    lt_error(o->folder ? "no output given: -o DIR for a video (one .flo per frame pair), or --summary / --ground-truth"
                       : "no output given: -o OUT.flo for an image pair, or --summary / --ground-truth");
    return LT_ERR_USAGE;
  }
  if (o->folder && is_stdout(s->output)) {
    lt_error("-o -: a video gives one .flo per frame pair; -o must name a folder");
    return LT_ERR_USAGE;
  }
  if (o->color && (!s->output || is_stdout(s->output))) {
    lt_error("--color writes a PNG next to each .flo: give -o OUT.flo (image pair) or -o DIR (video)");
    return LT_ERR_USAGE;
  }
  int on_stdout = is_stdout(s->output) + is_stdout(o->summary) + (o->ground_truth != NULL);
  if (on_stdout > 1) {
    lt_error("only one of -o -, --summary - and --ground-truth (which prints on stdout) may use stdout");
    return LT_ERR_USAGE;
  }
  if (is_stdout(o->plot)) {
    lt_error("--plot writes a PNG file; '-' is not accepted");
    return LT_ERR_USAGE;
  }
  return 0;
}

static int run(const lt_settings *s, const void *params)
{
  const lt_flow_opts *o = params;
  return o->three_d ? lt_flow_run_3d(s, o) : lt_flow_run(s, params);
}

const lt_mode lt_mode_flow = {
  .name = "flow",
  .purpose = "dense optical flow between consecutive frames (CLG variational flow, Middlebury .flo)",
  .usage = "A B -o OUT.flo | VIDEO -o DIR | --3d VOLUMES... -o OUT",
  .example = "leuktrack flow frame1.png frame2.png -o flow.flo --color",
  .output_help = "Output: OUT.flo (image pair) or DIR/flow_NNNNNN.flo per pair NNNNNN -> NNNNNN+1 (video)",
  .opts = opts,
  .nopts = (int)(sizeof opts / sizeof opts[0]),
  .params_size = sizeof(lt_flow_opts),
  .defaults = defaults,
  .set = set,
  .check = check,
  .run = run,
};
