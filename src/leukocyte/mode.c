/* mode.c - the leukocyte mode's row of the mode table: its options, their
 * defaults and checks (the run itself is pipeline.c). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "leuk_mode.h"
#include "log.h"
#include "opt.h"
#include "vidout.h"

enum {
  O_FORMAT = LT_OPT_MODE_BASE, O_ROI, O_ENTRY_ROI, O_DETECT_EVERY, O_RADIUS, O_GICOV_THRESHOLD, O_SEARCH,
  O_UM_PER_PX, O_SUMMARY, O_ENTRY_BAND, O_LINK_GAP, O_GICOV_ADAPT, O_ADHERENT_SPEED, O_ADHERENT_TIME,
  O_STATIC_SPAN, O_OVERLAY_VIDEO, O_OVERLAY_TAIL, O_OVERLAY_GREY_BITS, O_CELL_RADIUS_UM, O_SEARCH_UM,
  O_MAX_SPEED_UM_S, O_HOLD, O_RECHECK, O_MOTION, O_DETECT_EARLY, O_APPEARANCE,
};

static const lt_optdef opts[] = {
  {"format", O_FORMAT, required_argument, "csv|trackmate|ctc", "output format (default csv)"},
  {"roi", O_ROI, required_argument, "X,Y,W,H", "region analysed (default: the whole frame)"},
  {"entry-roi", O_ENTRY_ROI, required_argument, "X,Y,W,H", "region where re-detection starts new tracks (default: the ROI)"},
  {"detect-every", O_DETECT_EVERY, required_argument, "N", "re-detect cells every N frames (default 10)"},
  {"detect-early", O_DETECT_EARLY, required_argument, "N", "detect new cells also on each of the N frames after the first, each track written only if it scores above its start while held: a cell too faint in the first frame is followed from when it shows (default 2, 0 = off)"},
  {"radius", O_RADIUS, required_argument, "MIN:MAX", "cell radii searched, px (default 8:20, step 1)"},
  {"cell-radius-um", O_CELL_RADIUS_UM, required_argument, "MIN:MAX", "cell radii searched, um: --radius MIN/S:MAX/S rounded, S = the pixel size (needs --um-per-px or a TIFF's)"},
  {"gicov-threshold", O_GICOV_THRESHOLD, required_argument, "T", "minimum |GICOV| of a detection (default 1.8)"},
  {"gicov-adapt", O_GICOV_ADAPT, required_argument, "F", "new cells need |GICOV| above min(threshold, max(1, F x the median |GICOV| of a full detection's maxima)) (default 2, 0 = the threshold)"},
  {"entry-band", O_ENTRY_BAND, required_argument, "0|1", "1: detect every frame in the band(s) of the entry ROI that cells enter through (default 1)"},
  {"link-gap", O_LINK_GAP, required_argument, "N", "frames a lost track waits to be found again under its id (default 5, 0 = off)"},
  {"static-span", O_STATIC_SPAN, required_argument, "N", "a new cell after the first frame must have changed since about N frames before: a static background structure starts no track (default 10, 0 = off)"},
  {"hold", O_HOLD, required_argument, "N", "a new track's rows are held back N frames: one then within half the smallest radius of its start that never scored |GICOV| 1.6 x the threshold is static background, never written (default 20, 0 = off)"},
  {"recheck", O_RECHECK, required_argument, "F", "a track that the tracking moved more than F x the smallest radius off its prediction is checked there: a circle within 6 px of the prediction that scores more is the cell (default 0: off; 0.5 when tracks jump off faint cells)"},
  {"motion", O_MOTION, required_argument, "N", "new cells are also detected on the frame less the median of 5 earlier frames, one kept every N frames: faint moving cells on a textured static background (default 0: off)"},
  {"search", O_SEARCH, required_argument, "N", "re-localisation radius per frame, px (default 8)"},
  {"appearance", O_APPEARANCE, required_argument, "G", "the re-localisation scores a position by its GICOV (of the cell's sign) + G x the correlation of the disc there with the cell's look (taken where it scores >= the threshold: at detection, then each such frame) (default 0.7, 0 = off)"},
  {"search-um", O_SEARCH_UM, required_argument, "D", "re-localisation radius per frame, um: --search D/S rounded up (needs the pixel size S)"},
  {"max-speed-um-s", O_MAX_SPEED_UM_S, required_argument, "V", "fastest cell, um/s: --search V/(F S) rounded up (needs the pixel size S and the frame rate F)"},
  {"um-per-px", O_UM_PER_PX, required_argument, "S", "pixel size in micrometres (csv: adds um columns; trackmate: the file is in microns)"},
  {"summary", O_SUMMARY, required_argument, "FILE", "per-track summary CSV (+ FILE's velocity histogram PNG and _population.csv)"},
  {"adherent-speed", O_ADHERENT_SPEED, required_argument, "V", "--summary: a track slower than V is adherent, um/s (px/frame without --um-per-px and a frame rate; default 2)"},
  {"overlay-video", O_OVERLAY_VIDEO, required_argument, "FILE.mp4|.mkv", "the overlays as a video (MPEG-4, the input's frame rate, 25 fps when unknown)"},
  {"overlay-tail", O_OVERLAY_TAIL, required_argument, "N", "--overlay/--overlay-video: draw each track's path over its last N frames (default 10, 0 = off)"},
  {"overlay-grey-bits", O_OVERLAY_GREY_BITS, required_argument, "N", "--overlay PNGs: keep N bits of the frame's grey, 5..8 (default 8 = exact; 6 makes them about 40 % smaller)"},
  {"adherent-time", O_ADHERENT_TIME, required_argument, "S", "--summary: ...when tracked for at least S seconds (frames without a frame rate; default 30)"},
};

static void defaults(void *params)
{
  lt_leuk_opts *o = params;
  memset(o, 0, sizeof *o);
  lt_leuk_params_default(&o->leuk);
  o->adherent_speed = 2.0;
  o->adherent_time = 30.0;
  o->overlay_tail = 10;
  o->overlay_grey_bits = 8;
}

/* Radii lo..hi px: every integer radius; every second one when that is more
 * than the stencil table holds. val and px_note (what the px values are, or
 * "") name the option's value in a message. */
static int set_radii(lt_leuk_params *p, const char *name, const char *val, const char *px_note, int lo, int hi)
{
  char why[160];
  int step = hi - lo + 1 <= LT_LEUK_MAX_RADII ? 1 : 2;
  const char *bad = lo < 2 || hi > 100              ? "radii must be within 2:100"
                    : lo >= hi                       ? "MAX must give a larger px radius than MIN"
                    : (hi - lo) / step + 1 > LT_LEUK_MAX_RADII ? "too many radii"
                                                     : NULL;
  if (bad) {
    snprintf(why, sizeof why, "%s%s", px_note, bad);
    return lt_opt_bad(name, val, why);
  }
  p->rmin = lo;
  p->rstep = step;
  p->rmax = lo + ((hi - lo) / step) * step;
  return 0;
}

/* MIN:MAX, two positive numbers, MIN < MAX. */
static int opt_um_range(const char *name, const char *a, double out[2])
{
  const char *c = strchr(a, ':');
  char left[32];
  size_t ll = c ? (size_t)(c - a) : 0;
  if (!c || ll >= sizeof left) return lt_opt_bad(name, a, "expected MIN:MAX");
  memcpy(left, a, ll);
  left[ll] = 0;
  if (lt_opt_double(name, left, 1e-6, 1e6, &out[0]) || lt_opt_double(name, c + 1, 1e-6, 1e6, &out[1]))
    return LT_ERR_USAGE;
  if (out[1] <= out[0]) return lt_opt_bad(name, a, "MAX must be greater than MIN");
  return 0;
}

/* x px rounded up, but a value that is an integer up to rounding noise (2.5
 * um at 0.5 um/px = 5.000000001) is that integer. */
static double ceil_px(double x) { return ceil(x - 1e-9 * fmax(1, x)); }

int lt_leuk_um_to_px(lt_leuk_opts *o, double fps)
{
  const char *name = o->radius_um[0] > 0 ? "cell-radius-um"
                     : o->search_um > 0  ? "search-um"
                     : o->max_speed_um_s > 0 ? "max-speed-um-s"
                                             : NULL;
  double s = o->um_per_px;
  char val[64], note[96];
  if (!name) return 0;
  if (s <= 0) {
    lt_error("--%s needs the pixel size: give --um-per-px (the input stores none)", name);
    return LT_ERR_USAGE;
  }
  if (o->radius_um[0] > 0) {
    int lo = (int)fmin(1e6, floor(o->radius_um[0] / s + 0.5)), hi = (int)fmin(1e6, floor(o->radius_um[1] / s + 0.5));
    snprintf(val, sizeof val, "%g:%g", o->radius_um[0], o->radius_um[1]);
    snprintf(note, sizeof note, "%d:%d px at %g um/px; ", lo, hi, s);
    if (set_radii(&o->leuk, "cell-radius-um", val, note, lo, hi)) return LT_ERR_USAGE;
    lt_info("--cell-radius-um %s: radii %d:%d px (step %d) at %g um/px", val, o->leuk.rmin, o->leuk.rmax,
            o->leuk.rstep, s);
  }
  if (o->search_um > 0 || o->max_speed_um_s > 0) {
    if (o->max_speed_um_s > 0 && fps <= 0) {
      lt_error("--max-speed-um-s needs the frame rate: give --fps (the input stores none)");
      return LT_ERR_USAGE;
    }
    double um = o->search_um > 0 ? o->search_um : o->max_speed_um_s / fps, px = ceil_px(um / s);
    name = o->search_um > 0 ? "search-um" : "max-speed-um-s";
    snprintf(val, sizeof val, "%g", o->search_um > 0 ? o->search_um : o->max_speed_um_s);
    if (px > 100) {
      snprintf(note, sizeof note, "%.0f px per frame at %g um/px%s; --search allows at most 100", px, s,
               o->search_um > 0 ? "" : " and the frame rate");
      return lt_opt_bad(name, val, note);
    }
    o->leuk.search = (int)px;
    lt_info("--%s %s: --search %d px (%g um per frame at %g um/px)", name, val, o->leuk.search, um, s);
  }
  return 0;
}

static int set(void *params, int id, const char *name, const char *a)
{
  lt_leuk_opts *o = params;
  lt_rect *r;
  switch (id) {
  case O_FORMAT: return lt_opt_choice(name, a, "csv|trackmate|ctc", &o->format);
  case O_ROI:
  case O_ENTRY_ROI:
    r = id == O_ROI ? &o->leuk.roi : &o->leuk.entry_roi;
    if (lt_opt_rect(name, a, &r->x, &r->y, &r->w, &r->h)) return LT_ERR_USAGE;
    if (id == O_ROI) o->has_roi = 1;
    else o->has_entry_roi = 1;
    return 0;
  case O_DETECT_EVERY: return lt_opt_int(name, a, 1, 1000000, &o->leuk.detect_every);
  case O_DETECT_EARLY: return lt_opt_int(name, a, 0, 1000000, &o->leuk.detect_early);
  case O_RADIUS: {
    int lo, hi;
    if (lt_opt_range(name, a, &lo, &hi, 0)) return LT_ERR_USAGE;
    o->has_radius = 1;
    return set_radii(&o->leuk, name, a, "", lo, hi);
  }
  case O_CELL_RADIUS_UM: return opt_um_range(name, a, o->radius_um);
  case O_SEARCH_UM: return lt_opt_double(name, a, 1e-6, 1e6, &o->search_um);
  case O_MAX_SPEED_UM_S: return lt_opt_double(name, a, 1e-6, 1e9, &o->max_speed_um_s);
  case O_GICOV_THRESHOLD: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.gicov_threshold);
  case O_GICOV_ADAPT: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.gicov_adapt);
  case O_ENTRY_BAND: return lt_opt_int(name, a, 0, 1, &o->leuk.entry_band);
  case O_LINK_GAP: return lt_opt_int(name, a, 0, 1000, &o->leuk.link_gap);
  case O_STATIC_SPAN: return lt_opt_int(name, a, 0, 100000, &o->leuk.static_span);
  case O_HOLD: return lt_opt_int(name, a, 0, 10000, &o->leuk.hold);
  case O_RECHECK: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.recheck);
  case O_MOTION: return lt_opt_int(name, a, 0, 10000, &o->leuk.motion);
  case O_APPEARANCE: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.appearance);
  case O_SEARCH:
    o->has_search = 1;
    return lt_opt_int(name, a, 0, 100, &o->leuk.search);
  case O_UM_PER_PX: return lt_opt_double(name, a, 1e-6, 1e6, &o->um_per_px);
  case O_ADHERENT_SPEED: return lt_opt_double(name, a, 0.0, 1e6, &o->adherent_speed);
  case O_ADHERENT_TIME: return lt_opt_double(name, a, 0.0, 1e9, &o->adherent_time);
  case O_SUMMARY:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    o->summary = a;
    return 0;
  case O_OVERLAY_VIDEO:
    if (lt_opt_nonempty(name, a) || lt_vidout_check_name("--overlay-video", a)) return LT_ERR_USAGE;
    o->overlay_video = a;
    return 0;
  case O_OVERLAY_TAIL: return lt_opt_int(name, a, 0, 10000, &o->overlay_tail);
  case O_OVERLAY_GREY_BITS: return lt_opt_int(name, a, 5, 8, &o->overlay_grey_bits);
  }
  lt_error("internal: unhandled leukocyte option %d", id);
  return LT_ERR_INTERNAL;
}

static int check(void *params, const lt_settings *s)
{
  lt_leuk_opts *o = params;
  if (s->ninputs == 0) {
    lt_error("no input video given (usage: leuktrack [leukocyte] [OPTIONS] INPUT; see --help)");
    return LT_ERR_USAGE;
  }
  if (s->ninputs > 1) {
    const char *b = s->inputs[1], *dot = strrchr(b, '.');
    int looks_out = dot && (!strcmp(dot, ".csv") || !strcmp(dot, ".xml") || !strcmp(dot, ".txt"));
    lt_error("one input video expected, got %d ('%s', '%s'...)%s%s%s", s->ninputs, s->inputs[0], b,
             looks_out ? "; did you mean -o " : "", looks_out ? b : "", looks_out ? "?" : "");
    return LT_ERR_USAGE;
  }
  if (o->leuk.rmin > o->leuk.rmax) return lt_opt_bad("radius", "", "MIN must not exceed MAX");
  /* a distance in px or in um, not both */
  const char *both = o->has_radius && o->radius_um[0] > 0     ? "--radius and --cell-radius-um"
                     : o->has_search && o->search_um > 0        ? "--search and --search-um"
                     : o->has_search && o->max_speed_um_s > 0   ? "--search and --max-speed-um-s"
                     : o->search_um > 0 && o->max_speed_um_s > 0 ? "--search-um and --max-speed-um-s"
                                                                 : NULL;
  if (both) {
    lt_error("%s both set the same distance: give one", both);
    return LT_ERR_USAGE;
  }
  if (o->format == LT_FORMAT_CTC && o->um_per_px > 0)
    lt_warn("--um-per-px: the CTC format is in pixels; the scale is used only by --summary");
  return 0;
}

const lt_mode lt_mode_leukocyte = {
  .name = "leukocyte",
  .purpose = "track rolling leukocytes in intravital microscopy video (GICOV detection, MGVF tracking)",
  .usage = "INPUT",
  .example = "leuktrack input.avi -o tracks.csv --summary summary.csv",
  .output_help = "Output (csv): frame,t_s,track_id,x_px,y_px,radius_px,gicov[,x_um,y_um]",
  .opts = opts,
  .nopts = (int)(sizeof opts / sizeof opts[0]),
  .params_size = sizeof(lt_leuk_opts),
  .defaults = defaults,
  .set = set,
  .check = check,
  .run = lt_leuk_run,
};
