/* cli.c - option table, parsing, validation and --help text.
 * Every option is declared once in `opts` below; getopt_long's table and
 * the help text are generated from it. Values are parsed strictly (the whole
 * string must be a number in range) and errors name the option. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

enum {
  O_OUTPUT = 'o', O_QUIET = 'q', O_VERBOSE = 'v', O_HELP = 'h', O_VERSION = 'V', O_THREADS = 'j',
  O_OVERLAY = 256, O_FRAMES, O_BACKEND, O_DEVICE, O_PROGRESS, O_NO_PROGRESS, O_STATS, O_FORMAT,
  O_CHANNEL, O_ROI, O_ENTRY_ROI, O_DETECT_EVERY, O_RADIUS, O_GICOV_THRESHOLD, O_UM_PER_PX, O_FPS,
  O_SUMMARY, O_SEARCH,
};

typedef struct optdef {
  const char *name;
  int id;
  int has_arg; /* no_argument, required_argument, optional_argument */
  const char *arg;
  const char *help;
  int mode_specific;
} optdef;

static const optdef opts[] = {
  {"output", O_OUTPUT, required_argument, "FILE", "write results to FILE ('-' = stdout, the default)", 0},
  {"overlay", O_OVERLAY, required_argument, "DIR", "write an annotated PNG per frame into DIR", 0},
  {"frames", O_FRAMES, required_argument, "A:B", "process frames A..B-1 (0-based; A: or :B allowed)", 0},
  {"backend", O_BACKEND, required_argument, "auto|cpu|cuda", "compute backend (default auto: CUDA if usable)", 0},
  {"device", O_DEVICE, required_argument, "N", "CUDA device index (default 0)", 0},
  {"threads", O_THREADS, required_argument, "N", "CPU threads (default: all cores)", 0},
  {"channel", O_CHANNEL, required_argument, "luma|r|g|b", "colour channel to analyse (default luma)", 0},
  {"progress", O_PROGRESS, no_argument, NULL, "show a progress line on stderr", 0},
  {"no-progress", O_NO_PROGRESS, no_argument, NULL, "never show progress (default: only on a terminal)", 0},
  {"stats", O_STATS, optional_argument, "FILE", "print per-stage timings (to stderr or FILE)", 0},
  {"format", O_FORMAT, required_argument, "csv|trackmate|ctc", "output format (default csv)", 1},
  {"roi", O_ROI, required_argument, "X,Y,W,H", "region analysed (default: the whole frame)", 1},
  {"entry-roi", O_ENTRY_ROI, required_argument, "X,Y,W,H", "region where re-detection starts new tracks (default: the ROI)", 1},
  {"detect-every", O_DETECT_EVERY, required_argument, "N", "re-detect cells every N frames (default 10)", 1},
  {"radius", O_RADIUS, required_argument, "MIN:MAX", "cell radii searched, px (default 8:20, step 2)", 1},
  {"gicov-threshold", O_GICOV_THRESHOLD, required_argument, "T", "minimum |GICOV| of a detection (default 1.8)", 1},
  {"search", O_SEARCH, required_argument, "N", "re-localisation radius per frame, px (default 8)", 1},
  {"um-per-px", O_UM_PER_PX, required_argument, "S", "pixel size in micrometres (adds um columns)", 1},
  {"fps", O_FPS, required_argument, "F", "frame rate (default: from the video)", 1},
  {"summary", O_SUMMARY, required_argument, "FILE", "per-track summary CSV (+ FILE's velocity histogram PNG)", 1},
  {"quiet", O_QUIET, no_argument, NULL, "only errors on stderr", 0},
  {"verbose", O_VERBOSE, no_argument, NULL, "more messages on stderr (twice: debug)", 0},
  {"help", O_HELP, no_argument, NULL, "show this help and exit", 0},
  {"version", O_VERSION, no_argument, NULL, "show the version and exit", 0},
};
#define NOPTS ((int)(sizeof opts / sizeof opts[0]))

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: leuktrack [MODE] [OPTIONS] INPUT\n"
          "Track rolling leukocytes in intravital microscopy video (mode 'leukocyte', the default).\n"
          "Example: leuktrack input.avi -o tracks.csv --summary summary.csv\n\nOptions:\n");
  for (int i = 0; i < NOPTS; i++) {
    char left[64];
    const optdef *d = &opts[i];
    char shortf[8] = "    ";
    if (d->id < 256) snprintf(shortf, sizeof shortf, "-%c, ", d->id);
    if (d->has_arg == required_argument)
      snprintf(left, sizeof left, "%s--%s %s", shortf, d->name, d->arg);
    else if (d->has_arg == optional_argument)
      snprintf(left, sizeof left, "%s--%s[=%s]", shortf, d->name, d->arg);
    else
      snprintf(left, sizeof left, "%s--%s", shortf, d->name);
    fprintf(f, "  %-32s %s\n", left, d->help);
  }
  fprintf(f,
          "\nOutput (csv): frame,t_s,track_id,x_px,y_px,radius_px,gicov[,x_um,y_um]\n"
          "Exit status: 0 ok, 1 internal error, 2 usage, 3 bad input, 4 cannot write output,\n"
          "5 GPU requested but unusable, 130 interrupted. See leuktrack(1).\n");
}

static int bad(const char *opt, const char *val, const char *why)
{
  lt_error("invalid value '%s' for --%s: %s", val, opt, why);
  return LT_ERR_USAGE;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, int *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno) return bad(opt, s, "not an integer");
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof why, "must be between %ld and %ld", lo, hi);
    return bad(opt, s, why);
  }
  *out = (int)v;
  return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || v != v) return bad(opt, s, "not a number");
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof why, "must be between %g and %g", lo, hi);
    return bad(opt, s, why);
  }
  *out = v;
  return 0;
}

static int parse_rect(const char *opt, const char *s, lt_rect *r)
{
  int v[4], n = 0;
  const char *p = s;
  char buf[32];
  const char *c = NULL;
  while (n < 4) {
    c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= sizeof buf) return bad(opt, s, "expected X,Y,W,H (four integers)");
    memcpy(buf, p, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    long x = strtol(buf, &end, 10);
    if (*end || errno || x < 0 || x > 1000000) return bad(opt, s, "expected X,Y,W,H (non-negative integers)");
    v[n++] = (int)x;
    if (!c) break;
    p = c + 1;
  }
  if (n != 4 || c) return bad(opt, s, "expected X,Y,W,H (four integers)");
  if (v[2] < 1 || v[3] < 1) return bad(opt, s, "width and height must be positive");
  r->x = v[0];
  r->y = v[1];
  r->w = v[2];
  r->h = v[3];
  return 0;
}

static int parse_range(const char *opt, const char *s, int *a, int *b, int allow_open)
{
  const char *c = strchr(s, ':');
  if (!c) return bad(opt, s, "expected A:B");
  char left[32], right[32];
  size_t ll = (size_t)(c - s);
  if (ll >= sizeof left || strlen(c + 1) >= sizeof right) return bad(opt, s, "expected A:B");
  memcpy(left, s, ll);
  left[ll] = 0;
  strcpy(right, c + 1);
  *a = 0;
  *b = -1;
  if ((!allow_open && (!left[0] || !right[0]))) return bad(opt, s, "expected A:B");
  if (left[0] && parse_int(opt, left, 0, INT_MAX - 1, a)) return LT_ERR_USAGE;
  if (right[0] && parse_int(opt, right, 0, INT_MAX - 1, b)) return LT_ERR_USAGE;
  if (*b >= 0 && *b <= *a) return bad(opt, s, "B must be greater than A");
  return 0;
}

int lt_cli_parse(int argc, char **argv, lt_options *o)
{
  memset(o, 0, sizeof *o);
  o->mode = "leukocyte";
  o->frame_end = -1;
  o->progress = -1;
  o->threads = 0;
  lt_leuk_params_default(&o->leuk);

  struct option lo[NOPTS + 1];
  /* "-": non-options come back as 1 (GNU permutation, MODE checked after);
   * ":": a missing value is reported as ':' rather than '?'. */
  char shortopts[64] = "-:";
  for (int i = 0; i < NOPTS; i++) {
    lo[i].name = opts[i].name;
    lo[i].has_arg = opts[i].has_arg;
    lo[i].flag = NULL;
    lo[i].val = opts[i].id;
    if (opts[i].id < 256) {
      size_t l = strlen(shortopts);
      shortopts[l] = (char)opts[i].id;
      shortopts[l + 1] = 0;
      if (opts[i].has_arg == required_argument) strcat(shortopts, ":");
    }
  }
  memset(&lo[NOPTS], 0, sizeof lo[NOPTS]);
  opterr = 0;
  optind = 1;
  int c, nargs = 0, err = 0;
  const char *args[3] = {0};
  while ((c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
    const char *a = optarg;
    const char *name = NULL;
    for (int i = 0; i < NOPTS; i++)
      if (opts[i].id == c) name = opts[i].name;
    switch (c) {
    case 1:
      if (nargs < 3) args[nargs] = a;
      nargs++;
      break;
    case O_OUTPUT:
    case O_OVERLAY:
    case O_SUMMARY:
      if (!a[0]) {
        lt_error("--%s needs a non-empty file name", name);
        return LT_ERR_USAGE;
      }
      if (c == O_OUTPUT) o->output = a;
      else if (c == O_OVERLAY) o->overlay_dir = a;
      else o->summary = a;
      break;
    case O_FRAMES: err = parse_range(name, a, &o->frame_begin, &o->frame_end, 1); break;
    case O_BACKEND:
      if (!strcmp(a, "auto")) o->backend = LT_BACKEND_AUTO;
      else if (!strcmp(a, "cpu")) o->backend = LT_BACKEND_CPU;
      else if (!strcmp(a, "cuda")) o->backend = LT_BACKEND_CUDA;
      else err = bad(name, a, "expected auto, cpu or cuda");
      break;
    case O_DEVICE: err = parse_int(name, a, 0, 1023, &o->device); break;
    case O_THREADS: err = parse_int(name, a, 1, 4096, &o->threads); break;
    case O_CHANNEL:
      if (!strcmp(a, "luma")) o->channel = LT_CHANNEL_LUMA;
      else if (!strcmp(a, "r")) o->channel = LT_CHANNEL_R;
      else if (!strcmp(a, "g")) o->channel = LT_CHANNEL_G;
      else if (!strcmp(a, "b")) o->channel = LT_CHANNEL_B;
      else err = bad(name, a, "expected luma, r, g or b");
      break;
    case O_PROGRESS: o->progress = 1; break;
    case O_NO_PROGRESS: o->progress = 0; break;
    case O_STATS: o->stats = a ? a : ""; break; /* --stats= (empty) means stderr too */
    case O_FORMAT:
      if (!strcmp(a, "csv")) o->format = LT_FORMAT_CSV;
      else if (!strcmp(a, "trackmate")) o->format = LT_FORMAT_TRACKMATE;
      else if (!strcmp(a, "ctc")) o->format = LT_FORMAT_CTC;
      else err = bad(name, a, "expected csv, trackmate or ctc");
      break;
    case O_ROI: err = parse_rect(name, a, &o->leuk.roi); o->has_roi = 1; break;
    case O_ENTRY_ROI: err = parse_rect(name, a, &o->leuk.entry_roi); o->has_entry_roi = 1; break;
    case O_DETECT_EVERY: err = parse_int(name, a, 1, 1000000, &o->leuk.detect_every); break;
    case O_RADIUS: {
      int lo_r, hi_r;
      err = parse_range(name, a, &lo_r, &hi_r, 0);
      if (!err && (lo_r < 2 || hi_r > 100)) err = bad(name, a, "radii must be within 2:100");
      if (!err && (hi_r - lo_r) / 2 + 1 > LT_LEUK_MAX_RADII) err = bad(name, a, "too many radii");
      if (!err) {
        o->leuk.rmin = lo_r;
        o->leuk.rmax = lo_r + ((hi_r - lo_r) / 2) * 2;
      }
      break;
    }
    case O_GICOV_THRESHOLD: err = parse_double(name, a, 0.0, 1000.0, &o->leuk.gicov_threshold); break;
    case O_SEARCH: err = parse_int(name, a, 0, 100, &o->leuk.search); break;
    case O_UM_PER_PX: err = parse_double(name, a, 1e-6, 1e6, &o->um_per_px); break;
    case O_FPS: err = parse_double(name, a, 1e-6, 1e7, &o->fps); break;
    case O_QUIET: o->verbosity = LT_LOG_QUIET; break;
    case O_VERBOSE: o->verbosity = o->verbosity < 0 ? 1 : o->verbosity + 1; break;
    case O_HELP: usage(stdout); return 1;
    case O_VERSION: printf("leuktrack %s\n", LT_VERSION); return 1;
    case '?': {
      /* getopt sets optopt to a known option's id when it was given a value
       * it does not take (--progress=1); 0 or an unknown letter otherwise */
      const char *arg = argv[optind - 1];
      for (int i = 0; optopt && i < NOPTS; i++)
        if (opts[i].id == optopt && strchr(arg, '=')) {
          lt_error("option '--%s' does not take a value (see leuktrack --help)", opts[i].name);
          return LT_ERR_USAGE;
        }
      if (optopt && optopt < 256 && arg[0] == '-' && arg[1] != '-')
        lt_error("unknown option '-%c' (see leuktrack --help)", optopt);
      else
        lt_error("unknown option '%s' (see leuktrack --help)", arg);
      return LT_ERR_USAGE;
    }
    case ':':
      lt_error("option '%s' needs a value", argv[optind - 1]);
      return LT_ERR_USAGE;
    default: lt_error("internal: unhandled option %d", c); return LT_ERR_INTERNAL;
    }
    if (err) return LT_ERR_USAGE;
  }
  int ai = 0;
  static const char *modes[] = {"leukocyte", "tumor", "vcm", "flow"};
  if (nargs >= 1) {
    for (int i = 0; i < 4; i++)
      if (!strcmp(args[0], modes[i])) {
        o->mode = modes[i];
        ai = 1;
      }
  }
  if (strcmp(o->mode, "leukocyte") != 0) {
    lt_error("mode '%s' is not available in this version of leuktrack (only 'leukocyte')", o->mode);
    return LT_ERR_USAGE;
  }
  if (nargs - ai == 0) {
    lt_error("no input video given (usage: leuktrack [MODE] [OPTIONS] INPUT; see --help)");
    return LT_ERR_USAGE;
  }
  if (nargs - ai > 1) {
    lt_error("one input video expected, got %d ('%s', '%s'...)", nargs - ai, args[ai], args[ai + 1]);
    return LT_ERR_USAGE;
  }
  o->input = args[ai];
  if (o->leuk.rmin > o->leuk.rmax) return bad("radius", "", "MIN must not exceed MAX");
  if (o->format != LT_FORMAT_CSV && o->um_per_px > 0)
    lt_warn("--um-per-px only adds columns to the csv format; ignored for --format %s",
            o->format == LT_FORMAT_CTC ? "ctc" : "trackmate");
  return 0;
}

/* For tests/test_cli.sh: the option names, one per line. */
void lt_cli_list_options(FILE *f);
void lt_cli_list_options(FILE *f)
{
  for (int i = 0; i < NOPTS; i++) fprintf(f, "--%s\n", opts[i].name);
}
