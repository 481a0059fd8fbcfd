/* mode.c - the leukocyte mode's row of the mode table: its options, their
 * defaults and checks (the run itself is pipeline.c). */
#include <getopt.h>
#include <string.h>

#include "error.h"
#include "leuk_mode.h"
#include "log.h"
#include "opt.h"
#include "vidout.h"

enum {
  O_FORMAT = LT_OPT_MODE_BASE, O_ROI, O_ENTRY_ROI, O_DETECT_EVERY, O_RADIUS, O_GICOV_THRESHOLD, O_SEARCH,
  O_UM_PER_PX, O_SUMMARY, O_ENTRY_BAND, O_LINK_GAP, O_GICOV_ADAPT, O_ADHERENT_SPEED, O_ADHERENT_TIME,
  O_STATIC_SPAN, O_OVERLAY_VIDEO, O_OVERLAY_TAIL, O_OVERLAY_GREY_BITS,
};

static const lt_optdef opts[] = {
  {"format", O_FORMAT, required_argument, "csv|trackmate|ctc", "output format (default csv)"},
  {"roi", O_ROI, required_argument, "X,Y,W,H", "region analysed (default: the whole frame)"},
  {"entry-roi", O_ENTRY_ROI, required_argument, "X,Y,W,H", "region where re-detection starts new tracks (default: the ROI)"},
  {"detect-every", O_DETECT_EVERY, required_argument, "N", "re-detect cells every N frames (default 10)"},
  {"radius", O_RADIUS, required_argument, "MIN:MAX", "cell radii searched, px (default 8:20, step 1)"},
  {"gicov-threshold", O_GICOV_THRESHOLD, required_argument, "T", "minimum |GICOV| of a detection (default 1.8)"},
  {"gicov-adapt", O_GICOV_ADAPT, required_argument, "F", "new cells need |GICOV| above min(threshold, max(1, F x the median |GICOV| of a full detection's maxima)) (default 2, 0 = the threshold)"},
  {"entry-band", O_ENTRY_BAND, required_argument, "0|1", "1: detect every frame in the band(s) of the entry ROI that cells enter through (default 1)"},
  {"link-gap", O_LINK_GAP, required_argument, "N", "frames a lost track waits to be found again under its id (default 5, 0 = off)"},
  {"static-span", O_STATIC_SPAN, required_argument, "N", "a new cell after the first frame must have changed since about N frames before: a static background structure starts no track (default 10, 0 = off)"},
  {"search", O_SEARCH, required_argument, "N", "re-localisation radius per frame, px (default 8)"},
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
  case O_RADIUS: {
    int lo, hi;
    if (lt_opt_range(name, a, &lo, &hi, 0)) return LT_ERR_USAGE;
    if (lo < 2 || hi > 100) return lt_opt_bad(name, a, "radii must be within 2:100");
    /* every integer radius; every second one when that is more than the
     * stencil table holds */
    int step = hi - lo + 1 <= LT_LEUK_MAX_RADII ? 1 : 2;
    if ((hi - lo) / step + 1 > LT_LEUK_MAX_RADII) return lt_opt_bad(name, a, "too many radii");
    o->leuk.rmin = lo;
    o->leuk.rstep = step;
    o->leuk.rmax = lo + ((hi - lo) / step) * step;
    return 0;
  }
  case O_GICOV_THRESHOLD: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.gicov_threshold);
  case O_GICOV_ADAPT: return lt_opt_double(name, a, 0.0, 1000.0, &o->leuk.gicov_adapt);
  case O_ENTRY_BAND: return lt_opt_int(name, a, 0, 1, &o->leuk.entry_band);
  case O_LINK_GAP: return lt_opt_int(name, a, 0, 1000, &o->leuk.link_gap);
  case O_STATIC_SPAN: return lt_opt_int(name, a, 0, 100000, &o->leuk.static_span);
  case O_SEARCH: return lt_opt_int(name, a, 0, 100, &o->leuk.search);
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
