/* report.c - writers of the leukocyte results (SPEC section 3 and 4.1):
 *   csv        frame,t_s,track_id,x_px,y_px,radius_px,gicov[,x_um,y_um]
 *   trackmate  TrackMate XML (spots streamed per frame, tracks at the end)
 *   ctc        Cell Tracking Challenge res_track.txt "L B E P"
 *   --summary  per track: frames, path, mean/median speed (px/frame, um/s)
 *              + the velocity histogram next to it (FILE_velocity.png, .svg,
 *              .pdf and .csv with the bin counts; plot.h)
 *   --overlay  frame_000123.png with contours, track IDs and tails;
 *   --overlay-video  the same pictures as an MPEG-4 video (vidout.h).
 * Numbers are printed with the C locale ('.' decimals; leuktrack never
 * calls setlocale). */
#include "tracks.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef LT_HAVE_TIFF
#include <tiffio.h>
#endif

#include "draw.h"
#include "plot.h"
#include "error.h"
#include "image.h"
#include "log.h"

int lt_track_add(lt_track_info *t, int frame, double x, double y, double radius, int spot_id)
{
  if (t->nframes > 0) {
    double d = hypot(x - t->lastx, y - t->lasty);
    int gap = frame - t->last;
    t->path += d;
    if (t->nspeeds == t->cap_speeds) {
      int cap = t->cap_speeds ? 2 * t->cap_speeds : 16;
      double *s = realloc(t->speeds, sizeof(double) * cap);
      int *ids = realloc(t->spot_ids, sizeof(int) * (cap + 1));
      if (s) t->speeds = s;
      if (ids) t->spot_ids = ids;
      if (!s || !ids) return LT_ERR_NOMEM;
      t->cap_speeds = cap;
    }
    t->speeds[t->nspeeds] = d / (gap > 0 ? gap : 1);
    if (t->speeds[t->nspeeds] > t->maxspeed) t->maxspeed = t->speeds[t->nspeeds];
    t->nspeeds++;
  } else {
    t->first = frame;
    t->firstx = x;
    t->firsty = y;
    t->spot_ids = malloc(sizeof(int) * 17);
    t->speeds = malloc(sizeof(double) * 16);
    if (!t->spot_ids || !t->speeds) return LT_ERR_NOMEM;
    t->cap_speeds = 16;
  }
  t->spot_ids[t->nframes] = spot_id;
  if (t->nframes < LT_TRACK_ENDS) {
    t->head[2 * t->nframes] = x;
    t->head[2 * t->nframes + 1] = y;
  }
  t->tail[2 * (t->nframes % LT_TRACK_ENDS)] = x;
  t->tail[2 * (t->nframes % LT_TRACK_ENDS) + 1] = y;
  t->nframes++;
  t->last = frame;
  t->lastx = x;
  t->lasty = y;
  t->sum_radius += radius;
  return 0;
}

void lt_track_free(lt_track_info *t)
{
  if (!t) return;
  free(t->speeds);
  free(t->spot_ids);
  free(t->segs);
  t->speeds = NULL;
  t->spot_ids = NULL;
  t->segs = NULL;
}

static double mean_radius(const lt_leuk_cell *c)
{
  double s = 0;
  for (int j = 0; j < LT_LEUK_SNAXELS; j++) s += c->r[j];
  return s / LT_LEUK_SNAXELS;
}

/* Values per row: the CSV columns (x_um, y_um only with a scale), then the
 * TrackMate spot id. */
enum { V_FRAME, V_T, V_ID, V_X, V_Y, V_R, V_GICOV, V_XUM, V_YUM, V_SPOT, V_LABEL, V_SNAX,
       NV = V_SNAX + LT_LEUK_SNAXELS };
static const lt_col csv_cols[] = {{"frame", -1}, {"t_s", 6},       {"track_id", -1},
                                  {"x_px", 3},   {"y_px", 3},      {"radius_px", 3},
                                  {"gicov", 4},  {"x_um", 4},      {"y_um", 4}};

static void write_trackmate(void *user, FILE *f, int frame, const double *v, int n, int nv)
{
  const lt_report *r = user;
  const double s = r->lo->um_per_px, k = s > 0 ? s : 1.0;
  if (n == 0) return;
  fprintf(f, "      <SpotsInFrame frame=\"%d\">\n", frame);
  for (int i = 0; i < n; i++, v += nv) {
    fprintf(f,
            "        <Spot ID=\"%d\" name=\"ID%d\" QUALITY=\"%.4f\" POSITION_X=\"%.4f\" POSITION_Y=\"%.4f\" "
            "POSITION_Z=\"0.0\" POSITION_T=\"%.6f\" FRAME=\"%d\" RADIUS=\"%.4f\" VISIBILITY=\"1\" "
            "ROI_N_POINTS=\"%d\">",
            (int)v[V_SPOT], (int)v[V_SPOT], fabs(v[V_GICOV]), v[V_X] * k, v[V_Y] * k,
            r->fps > 0 ? v[V_T] : (double)frame, frame, v[V_R] * k, LT_LEUK_SNAXELS);
    /* the contour: the snaxels relative to the centre, in the model's units */
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      double t = lt_snaxel_angle(j), rj = v[V_SNAX + j] * k;
      fprintf(f, "%s%.4f %.4f", j ? " " : "", rj * cos(t), rj * sin(t));
    }
    fputs("</Spot>\n", f);
  }
  fputs("      </SpotsInFrame>\n", f);
}

/* Writes s as an XML attribute value (escaped). */
static void xml_attr(FILE *f, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    case '\n': fputs("&#10;", f); break;
    case '\t': fputs("&#9;", f); break;
    case '\r': fputs("&#13;", f); break;
    default:
      if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
  }
}

#ifdef LT_HAVE_TIFF
static char *mask_path(const lt_report *r, int frame, int digits)
{
  size_t n = strlen(r->ctc_dir) + 32;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/mask%0*d.tif", r->ctc_dir, digits, frame);
  return p;
}

/* Fills the tracked contour (the 20-point polygon) with its CTC label:
 * pixels whose centre lies inside (even-odd rule). */
static void fill_contour(uint16_t *m, int w, int h, const double *v, uint16_t label)
{
  double px[LT_LEUK_SNAXELS], py[LT_LEUK_SNAXELS];
  double x0 = 1e30, x1 = -1e30, y0 = 1e30, y1 = -1e30;
  for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
    double t = lt_snaxel_angle(j);
    px[j] = v[V_X] + v[V_SNAX + j] * cos(t);
    py[j] = v[V_Y] + v[V_SNAX + j] * sin(t);
    if (px[j] < x0) x0 = px[j];
    if (px[j] > x1) x1 = px[j];
    if (py[j] < y0) y0 = py[j];
    if (py[j] > y1) y1 = py[j];
  }
  int ya = (int)floor(y0) < 0 ? 0 : (int)floor(y0), yb = (int)ceil(y1) >= h ? h - 1 : (int)ceil(y1);
  int xa = (int)floor(x0) < 0 ? 0 : (int)floor(x0), xb = (int)ceil(x1) >= w ? w - 1 : (int)ceil(x1);
  for (int y = ya; y <= yb; y++)
    for (int x = xa; x <= xb; x++) {
      int in = 0;
      for (int i = 0, j = LT_LEUK_SNAXELS - 1; i < LT_LEUK_SNAXELS; j = i++)
        if ((py[i] > y) != (py[j] > y) && x < (px[j] - px[i]) * (y - py[i]) / (py[j] - py[i]) + px[i]) in = !in;
      if (in) m[(size_t)y * w + x] = label;
    }
}

static int write_mask_tiff(const char *path, const uint16_t *m, int w, int h)
{
  TIFF *t = TIFFOpen(path, "w");
  if (!t) return -1;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)h);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_UINT);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, (uint32_t)(h < 64 ? h : 64));
  int bad = 0;
  for (int y = 0; y < h && !bad; y++)
    if (TIFFWriteScanline(t, (void *)(m + (size_t)y * w), (uint32_t)y, 0) < 0) bad = 1;
  TIFFClose(t);
  return bad ? -1 : 0;
}
#endif

/* --format ctc with a folder: the 16-bit label image of every processed
 * frame (0 background, label of the track's segment inside its contour). */
static void write_ctc_masks(void *user, FILE *f, int frame, const double *v, int n, int nv)
{
#ifdef LT_HAVE_TIFF
  lt_report *r = user;
  if (r->mask_err) return;
  if (frame >= 1000 && r->ctc_digits < 4) r->ctc_digits = 4; /* earlier names are renamed at the end */
  memset(r->mask, 0, sizeof(uint16_t) * (size_t)r->width * r->height);
  for (int i = 0; i < n; i++, v += nv) fill_contour(r->mask, r->width, r->height, v, (uint16_t)v[V_LABEL]);
  char *p = mask_path(r, frame, r->ctc_digits);
  if (!p || write_mask_tiff(p, r->mask, r->width, r->height)) {
    lt_error("cannot write the CTC mask '%s': %s", p ? p : "(no memory)", strerror(errno));
    r->mask_err = LT_ERR_OUTPUT;
  }
  free(p);
#else
  (void)user;
#endif
}

/* -o names a folder: it ends with '/' or is an existing directory. */
static int is_folder(const char *p)
{
  struct stat st;
  size_t n = p ? strlen(p) : 0;
  if (n == 0 || !strcmp(p, "-")) return 0;
  if (p[n - 1] == '/') return 1;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void write_nothing(void *user, FILE *f, int frame, const double *v, int n, int nv) {}

int lt_report_open(lt_report *r, lt_loop *L, const lt_settings *s, const lt_leuk_opts *lo, const char *input,
                   int width, int height, double fps)
{
  memset(r, 0, sizeof *r);
  r->s = s;
  r->lo = lo;
  r->input = input;
  r->L = L;
  r->width = width;
  r->height = height;
  r->fps = fps;
  r->next_spot = 1;
  r->first_frame = r->last_frame = -1;
  r->hold = lo->leuk.hold;
  if (r->hold > 0 && !(r->held = calloc(r->hold + 1, sizeof *r->held))) {
    lt_error("out of memory");
    return LT_ERR_NOMEM;
  }
  r->ctc_digits = 3;
  r->next_gap_label = 65535;
  int err;
  const char *outpath = s->output;
  if (lo->format == LT_FORMAT_CTC && is_folder(s->output)) {
#ifndef LT_HAVE_TIFF
    lt_error("--format ctc -o %s: this leuktrack was built without libtiff (a portable build on a machine "
             "without static libtiff), so it cannot write the maskTTT.tif label images; give -o a file name "
             "for res_track.txt alone, or build with libtiff-dev installed",
             s->output);
    return LT_ERR_USAGE;
#else
    size_t n = strlen(s->output);
    r->ctc_dir = malloc(n + 1);
    r->ctc_track_path = malloc(n + 16);
    r->mask = calloc((size_t)width * height, sizeof(uint16_t));
    if (!r->ctc_dir || !r->ctc_track_path || !r->mask) return LT_ERR_NOMEM;
    memcpy(r->ctc_dir, s->output, n + 1);
    while (n > 1 && r->ctc_dir[n - 1] == '/') r->ctc_dir[--n] = 0;
    if (mkdir(r->ctc_dir, 0777) != 0 && errno != EEXIST) {
      lt_error("cannot create the CTC folder '%s': %s", r->ctc_dir, strerror(errno));
      return LT_ERR_OUTPUT;
    }
    snprintf(r->ctc_track_path, n + 16, "%s/res_track.txt", r->ctc_dir);
    outpath = r->ctc_track_path;
#endif
  } else if (lo->format == LT_FORMAT_CTC) {
    lt_warn("--format ctc: -o %s is a file, so only res_track.txt is written there; give -o DIR/ for "
            "res_track.txt and the maskTTT.tif label images the CTC tools need",
            s->output && strcmp(s->output, "-") ? s->output : "(stdout)");
  }
  if (!(r->out = lt_loop_output(L, outpath, &err))) return err;
  if (lo->summary && !(r->sum = lt_loop_output(L, lo->summary, &err))) return err;
  if (lo->summary && strcmp(lo->summary, "-")) {
    size_t n = strlen(lo->summary);
    if (!(r->pop_path = malloc(n + 24))) return LT_ERR_NOMEM;
    memcpy(r->pop_path, lo->summary, n + 1);
    if (n > 4 && !strcmp(r->pop_path + n - 4, ".csv")) r->pop_path[n - 4] = 0;
    strcat(r->pop_path, "_population.csv");
    if (!(r->pop = lt_loop_output(L, r->pop_path, &err))) return err;
  }
  if (s->overlay_dir && mkdir(s->overlay_dir, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create overlay folder '%s': %s", s->overlay_dir, strerror(errno));
    return LT_ERR_OUTPUT;
  }
  if (lo->overlay_video) {
    if (fps <= 0) lt_info("--overlay-video: frame rate unknown, the video plays at 25 fps");
    if ((err = lt_vidout_open(&r->video, lo->overlay_video, width, height, fps))) return err;
  }
  FILE *f = r->out->fp;
  if (lo->format == LT_FORMAT_TRACKMATE) {
    const char *unit = lo->um_per_px > 0 ? "micron" : "pixel";
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<TrackMate version=\"7.11.1\">\n"
            "  <Log>written by leuktrack %s</Log>\n"
            "  <Model spatialunits=\"%s\" timeunits=\"%s\">\n"
            "    <FeatureDeclarations>\n      <SpotFeatures>\n"
            "        <Feature feature=\"QUALITY\" name=\"Quality\" shortname=\"Quality\" dimension=\"QUALITY\" isint=\"false\" />\n"
            "        <Feature feature=\"POSITION_X\" name=\"X\" shortname=\"X\" dimension=\"POSITION\" isint=\"false\" />\n"
            "        <Feature feature=\"POSITION_Y\" name=\"Y\" shortname=\"Y\" dimension=\"POSITION\" isint=\"false\" />\n"
            "        <Feature feature=\"POSITION_Z\" name=\"Z\" shortname=\"Z\" dimension=\"POSITION\" isint=\"false\" />\n"
            "        <Feature feature=\"POSITION_T\" name=\"T\" shortname=\"T\" dimension=\"TIME\" isint=\"false\" />\n"
            "        <Feature feature=\"FRAME\" name=\"Frame\" shortname=\"Frame\" dimension=\"NONE\" isint=\"true\" />\n"
            "        <Feature feature=\"RADIUS\" name=\"Radius\" shortname=\"R\" dimension=\"LENGTH\" isint=\"false\" />\n"
            "        <Feature feature=\"VISIBILITY\" name=\"Visibility\" shortname=\"Visibility\" dimension=\"NONE\" isint=\"true\" />\n"
            "      </SpotFeatures>\n      <EdgeFeatures>\n"
            "        <Feature feature=\"SPOT_SOURCE_ID\" name=\"Source spot ID\" shortname=\"Source ID\" dimension=\"NONE\" isint=\"true\" />\n"
            "        <Feature feature=\"SPOT_TARGET_ID\" name=\"Target spot ID\" shortname=\"Target ID\" dimension=\"NONE\" isint=\"true\" />\n"
            "      </EdgeFeatures>\n      <TrackFeatures>\n"
            "        <Feature feature=\"TRACK_ID\" name=\"Track ID\" shortname=\"ID\" dimension=\"NONE\" isint=\"true\" />\n"
            "        <Feature feature=\"NUMBER_SPOTS\" name=\"Number of spots in track\" shortname=\"N spots\" dimension=\"NONE\" isint=\"true\" />\n"
            "      </TrackFeatures>\n    </FeatureDeclarations>\n    <AllSpots>\n",
            LT_VERSION, unit, fps > 0 ? "sec" : "frame");
  }
  int ncols = lo->um_per_px > 0 ? 9 : 7;
  err = lt_rows_start(&r->rows, r->out, csv_cols, ncols, NV,
                      lo->format == LT_FORMAT_CSV         ? NULL
                      : lo->format == LT_FORMAT_TRACKMATE ? write_trackmate
                      : r->ctc_dir                        ? write_ctc_masks
                                                          : write_nothing,
                      r);
  r->rows_on = err == 0;
  return err;
}

/* CTC bookkeeping before t records `frame`: a new segment at the first
 * frame (label id + 1) and after a gap (the next label from 65535 down),
 * else the current segment grows. */
static int track_segment(lt_report *r, lt_track_info *t, int frame)
{
  if (t->nsegs > 0 && frame == t->last + 1) {
    t->segs[3 * (t->nsegs - 1) + 2] = frame;
    return 0;
  }
  if (t->nsegs == t->cap_segs) {
    int cap = t->cap_segs ? 2 * t->cap_segs : 2;
    int *g = realloc(t->segs, sizeof(int) * 3 * cap);
    if (!g) return LT_ERR_NOMEM;
    t->segs = g;
    t->cap_segs = cap;
  }
  int label = t->nsegs == 0 ? t->id + 1 : r->next_gap_label--;
  int *g = t->segs + 3 * t->nsegs++;
  g[0] = label;
  g[1] = g[2] = frame;
  return 0;
}

int lt_report_hide(lt_report *r, int id)
{
  if (id >= r->hidden_cap) {
    int cap = r->hidden_cap ? r->hidden_cap : 64;
    while (cap <= id) cap *= 2;
    unsigned char *h = realloc(r->hidden, cap);
    if (!h) {
      lt_error("out of memory");
      return LT_ERR_NOMEM;
    }
    memset(h + r->hidden_cap, 0, cap - r->hidden_cap);
    r->hidden = h;
    r->hidden_cap = cap;
  }
  r->hidden[id] = 1;
  return 0;
}

void lt_report_unhide(lt_report *r)
{
  if (r->hidden) memset(r->hidden, 0, r->hidden_cap);
}

static int is_hidden(const lt_report *r, double id) { return id < r->hidden_cap && r->hidden[(int)id]; }

/* Hands the oldest held frame to the writer, without the rows of hidden
 * tracks. */
static int release_held(lt_report *r)
{
  lt_rows_slot *h = &r->held[r->held_head];
  int n = 0, err;
  for (int i = 0; i < h->n; i++) n += !is_hidden(r, h->vals[i * NV + V_ID]);
  double *v = lt_rows_frame(&r->rows, h->frame, n, &err);
  if (!v) return err;
  for (int i = 0; i < h->n; i++)
    if (!is_hidden(r, h->vals[i * NV + V_ID])) {
      memcpy(v, h->vals + (size_t)i * NV, sizeof(double) * NV);
      v += NV;
    }
  r->held_head = (r->held_head + 1) % (r->hold + 1);
  r->held_count--;
  return lt_rows_put(&r->rows);
}

static int release_all(lt_report *r)
{
  int err = 0;
  while (r->held_count > 0 && !err) err = release_held(r);
  return err;
}

int lt_report_frame(lt_report *r, int frame, double t_s, const lt_leuk_cell *cells,
                    lt_track_info *info, int n)
{
  int err;
  double *v;
  if (r->hold > 0) { /* into the ring; handed over hold frames later */
    lt_rows_slot *h = &r->held[(r->held_head + r->held_count) % (r->hold + 1)];
    if (n > h->cap) {
      double *nv = realloc(h->vals, sizeof(double) * NV * n);
      if (!nv) {
        lt_error("out of memory (held rows)");
        return LT_ERR_NOMEM;
      }
      h->vals = nv;
      h->cap = n;
    }
    h->frame = frame;
    h->n = n;
    r->held_count++;
    v = h->vals;
  } else if (!(v = lt_rows_frame(&r->rows, frame, n, &err))) {
    return err;
  }
  const double s = r->lo->um_per_px;
  if (r->first_frame < 0) r->first_frame = frame;
  r->last_frame = frame;
  for (int i = 0; i < n; i++, v += NV) {
    const lt_leuk_cell *c = &cells[i];
    v[V_FRAME] = frame;
    v[V_T] = t_s;
    v[V_ID] = info[i].id;
    v[V_SPOT] = r->next_spot++;
    v[V_X] = c->xc;
    v[V_Y] = c->yc;
    v[V_R] = mean_radius(c);
    v[V_GICOV] = c->gicov;
    v[V_XUM] = c->xc * s;
    v[V_YUM] = c->yc * s;
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) v[V_SNAX + j] = c->r[j];
    if ((err = track_segment(r, &info[i], frame))) {
      lt_error("out of memory recording track %d", info[i].id);
      return err;
    }
    v[V_LABEL] = info[i].segs[3 * (info[i].nsegs - 1)];
    err = lt_track_add(&info[i], frame, v[V_X], v[V_Y], v[V_R], (int)v[V_SPOT]);
    if (err) {
      lt_error("out of memory recording track %d", info[i].id);
      return err;
    }
  }
  if (r->hold > 0) return r->held_count > r->hold ? release_held(r) : 0;
  return lt_rows_put(&r->rows);
}

static int cmpd(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *end_name(int e)
{
  switch (e) {
  case LT_END_LEFT: return "left";
  case LT_END_LOST: return "lost";
  default: return "end";
  }
}

/* <summary minus .csv>_velocity (the histogram adds .png .svg .pdf .csv) */
static char *hist_path(const char *summary)
{
  size_t n = strlen(summary);
  char *p = malloc(n + 16);
  if (!p) return NULL;
  memcpy(p, summary, n + 1);
  if (n > 4 && !strcmp(p + n - 4, ".csv")) p[n - 4] = 0;
  strcat(p, "_velocity");
  return p;
}

/* Rolling/adherent rule (man page): a track with at least 2 steps whose mean
 * speed is below --adherent-speed is "adherent" when it was followed for at
 * least --adherent-time, else "unclassified" (slow but seen too briefly); a
 * track at or above the speed is "rolling"; fewer than 2 steps:
 * "unclassified". Speeds in um/s with a scale and a frame rate, else
 * px/frame; times in s with a frame rate, else frames. */
enum { CL_ROLLING, CL_ADHERENT, CL_UNCLASSIFIED };
static const char *const class_names[] = {"rolling", "adherent", "unclassified"};

static int classify(const lt_track_info *t, double mean_speed_unit, double span_unit, const lt_leuk_opts *o)
{
  if (t->nspeeds < 2) return CL_UNCLASSIFIED;
  if (mean_speed_unit >= o->adherent_speed) return CL_ROLLING;
  return span_unit >= o->adherent_time ? CL_ADHERENT : CL_UNCLASSIFIED;
}

static int write_summary(lt_report *r, lt_track_info *all, int nall)
{
  const lt_leuk_opts *o = r->lo;
  int phys = o->um_per_px > 0 && r->fps > 0, scale = o->um_per_px > 0, timed = r->fps > 0;
  double k = phys ? o->um_per_px * r->fps : 1.0; /* px/frame -> um/s */
  FILE *f = r->sum->fp;
  int err;
  fprintf(f, "track_id,first_frame,last_frame,frames,path_px,mean_speed_px_frame,median_speed_px_frame,mean_radius_px,end%s",
          phys ? ",mean_speed_um_s,median_speed_um_s" : "");
  /* appended columns (after the ones above, so existing readers keep working) */
  fprintf(f, ",duration_frames,net_displacement_px,max_speed_px_frame,straightness,class%s%s%s\n",
          timed ? ",duration_s" : "", scale ? ",path_um,net_displacement_um,mean_radius_um" : "",
          phys ? ",max_speed_um_s" : "");
  double *means = malloc(sizeof(double) * (nall > 0 ? nall : 1));
  double *rollv = malloc(sizeof(double) * (nall > 0 ? nall : 1));
  int nm = 0, nroll = 0, ncls[3] = {0, 0, 0}, entered = 0;
  if (!means || !rollv) {
    free(means);
    free(rollv);
    return LT_ERR_NOMEM;
  }
  for (int i = 0; i < nall; i++) {
    lt_track_info *t = &all[i];
    double mean = 0, med = 0;
    fprintf(f, "%d,%d,%d,%d,%.3f,", t->id, t->first, t->last, t->nframes, t->path);
    if (t->nspeeds > 0) {
      double sum = 0;
      for (int j = 0; j < t->nspeeds; j++) sum += t->speeds[j];
      mean = sum / t->nspeeds;
      med = median(t->speeds, t->nspeeds);
      fprintf(f, "%.4f,%.4f,%.3f,%s", mean, med, t->sum_radius / t->nframes, end_name(t->end));
      if (phys) fprintf(f, ",%.4f,%.4f", mean * k, med * k);
      if (t->nspeeds >= 2) means[nm++] = mean * k;
    } else {
      fprintf(f, ",,%.3f,%s", t->sum_radius / t->nframes, end_name(t->end));
      if (phys) fputs(",,", f);
    }
    int span = t->last - t->first;
    double net = hypot(t->lastx - t->firstx, t->lasty - t->firsty);
    int cl = classify(t, mean * k, timed ? span / r->fps : (double)span, o);
    ncls[cl]++;
    if (cl == CL_ROLLING) {
      rollv[nroll++] = mean * k;
      if (t->first > r->first_frame) entered++;
    }
    fprintf(f, ",%d,%.3f,", span, net);
    if (t->nspeeds > 0) fprintf(f, "%.4f", t->maxspeed);
    fputc(',', f);
    if (t->path > 0) fprintf(f, "%.4f", net / t->path);
    fprintf(f, ",%s", class_names[cl]);
    if (timed) fprintf(f, ",%.6f", span / r->fps);
    if (scale)
      fprintf(f, ",%.4f,%.4f,%.4f", t->path * o->um_per_px, net * o->um_per_px,
              t->sum_radius / t->nframes * o->um_per_px);
    if (phys) {
      fputc(',', f);
      if (t->nspeeds > 0) fprintf(f, "%.4f", t->maxspeed * k);
    }
    fputc('\n', f);
  }
  /* the population: rolling flux = rolling tracks that began after the first
   * processed frame (entered the field), per minute of the processed span */
  int nfr = r->first_frame < 0 ? 0 : r->last_frame - r->first_frame + 1;
  double minutes = timed ? nfr / r->fps / 60.0 : 0;
  double rmed = nroll ? median(rollv, nroll) : 0;
  if (timed && minutes > 0)
    lt_info("summary: %d rolling, %d adherent, %d unclassified tracks; rolling flux %.2f cells/min (%d entered in "
            "%.1f s)%s",
            ncls[0], ncls[1], ncls[2], entered / minutes, entered, minutes * 60, phys ? "" : " (speeds in px/frame)");
  else
    lt_info("summary: %d rolling, %d adherent, %d unclassified tracks; %d rolling cells entered in %d frames "
            "(no frame rate: no flux per minute)",
            ncls[0], ncls[1], ncls[2], entered, nfr);
  if (r->pop) {
    FILE *p = r->pop->fp;
    fprintf(p, "frames,duration_s,tracks,rolling,adherent,unclassified,rolling_entered,rolling_flux_per_min,"
               "median_rolling_speed,speed_unit,adherent_speed,adherent_time,time_unit\n");
    fprintf(p, "%d,", nfr);
    if (timed) fprintf(p, "%.6f", nfr / r->fps);
    fprintf(p, ",%d,%d,%d,%d,%d,", nall, ncls[0], ncls[1], ncls[2], entered);
    if (timed && minutes > 0) fprintf(p, "%.4f", entered / minutes);
    fputc(',', p);
    if (nroll) fprintf(p, "%.4f", rmed);
    fprintf(p, ",%s,%g,%g,%s\n", phys ? "um/s" : "px/frame", o->adherent_speed, o->adherent_time,
            timed ? "s" : "frames");
  }
  free(rollv);
  err = 0;
  if (r->pop) err = lt_out_check(r->pop);
  if (!err) err = lt_out_check(r->sum);
  if (!err) {
    char *hp = hist_path(o->summary);
    if (!hp) err = LT_ERR_NOMEM;
    else
      err = lt_plot_histogram(hp, means, nm, 0, "Velocity distribution of tracked leukocytes",
                              phys ? "mean speed per track (\xc2\xb5m/s)" : "mean speed per track (px/frame)",
                              phys ? "\xc2\xb5m/s" : "px/frame", 800, 500);
    free(hp);
  }
  free(means);
  return err;
}

/* TrackMate's Settings as its TmXmlWriter writes them (TmXmlReader
 * dereferences ImageData, BasicSettings, InitialSpotFilter,
 * SpotFilterCollection, TrackFilterCollection, DetectorSettings,
 * TrackerSettings and AnalyzerCollection): the image the spots belong to
 * (basename + absolute folder; nframes counts the video's frames up to the
 * last processed one, so FRAME indices stay the video's; tstart/tend the
 * processed range), a MANUAL detector and tracker (leuktrack made the spots
 * and links; TrackMate only shows and edits them), no filters. */
static void write_tm_settings(const lt_report *r, FILE *f)
{
  const lt_leuk_opts *o = r->lo;
  const char *in = r->input ? r->input : "-";
  int is_stdin = !strcmp(in, "-");
  const char *base = strrchr(in, '/');
  base = base ? base + 1 : in;
  char folder[PATH_MAX] = "";
  if (!is_stdin) {
    size_t dn = (size_t)(base - in);
    char *dir = malloc(dn + 2);
    if (dir) {
      if (dn == 0) strcpy(dir, ".");
      else {
        memcpy(dir, in, dn);
        dir[dn] = 0;
      }
      if (!realpath(dir, folder)) folder[0] = 0;
      else if (strcmp(folder, "/")) strcat(folder, "/");
      free(dir);
    }
  }
  double px = o->um_per_px > 0 ? o->um_per_px : 1.0;
  int t0 = r->first_frame < 0 ? 0 : r->first_frame, t1 = r->last_frame < 0 ? 0 : r->last_frame;
  fputs("  <Settings>\n    <ImageData filename=\"", f);
  xml_attr(f, is_stdin ? "stdin" : base);
  fputs("\" folder=\"", f);
  xml_attr(f, folder);
  fprintf(f,
          "\" width=\"%d\" height=\"%d\" nslices=\"1\" nframes=\"%d\" pixelwidth=\"%g\" pixelheight=\"%g\" "
          "voxeldepth=\"%g\" timeinterval=\"%g\" />\n",
          r->width, r->height, t1 + 1, px, px, px, r->fps > 0 ? 1.0 / r->fps : 1.0);
  fprintf(f,
          "    <BasicSettings xstart=\"0\" xend=\"%d\" ystart=\"0\" yend=\"%d\" zstart=\"0\" zend=\"0\" "
          "tstart=\"%d\" tend=\"%d\" />\n",
          r->width - 1, r->height - 1, t0, t1);
  fprintf(f,
          "    <DetectorSettings DETECTOR_NAME=\"MANUAL_DETECTOR\" RADIUS=\"%g\" />\n"
          "    <InitialSpotFilter feature=\"QUALITY\" value=\"0.0\" isabove=\"true\" />\n"
          "    <SpotFilterCollection />\n"
          "    <TrackerSettings TRACKER_NAME=\"MANUAL_TRACKER\" />\n"
          "    <TrackFilterCollection />\n"
          "    <AnalyzerCollection>\n"
          "      <SpotAnalyzers />\n"
          "      <EdgeAnalyzers>\n        <Analyzer key=\"Edge target\" />\n      </EdgeAnalyzers>\n"
          "      <TrackAnalyzers>\n        <Analyzer key=\"Track index\" />\n      </TrackAnalyzers>\n"
          "    </AnalyzerCollection>\n  </Settings>\n</TrackMate>\n",
          0.5 * (o->leuk.rmin + o->leuk.rmax) * px);
}

/* res_track.txt "L B E P", one line per gap-free segment; renames the masks
 * to 4 digits when frames past 999 were written. */
static int write_ctc_tracks(lt_report *r, FILE *f, const lt_track_info *all, int nall)
{
  if (r->mask_err) return r->mask_err;
  int maxid = 0;
  for (int i = 0; i < nall; i++)
    if (all[i].id + 1 > maxid) maxid = all[i].id + 1;
  if (maxid > r->next_gap_label) {
    lt_error("--format ctc: %d tracks and %d gap continuations do not fit in 16-bit labels", maxid,
             65535 - r->next_gap_label);
    return LT_ERR_OUTPUT;
  }
  for (int i = 0; i < nall; i++)
    for (int k = 0; k < all[i].nsegs; k++) {
      const int *g = all[i].segs + 3 * k;
      fprintf(f, "%d %d %d %d\n", g[0], g[1], g[2], k ? g[-3] : 0);
    }
#ifdef LT_HAVE_TIFF
  if (r->ctc_dir && r->ctc_digits == 4)
    for (int fr = r->first_frame; fr >= 0 && fr <= r->last_frame && fr < 1000; fr++) {
      char *a = mask_path(r, fr, 3), *b = mask_path(r, fr, 4);
      int bad = !a || !b || rename(a, b) != 0;
      if (bad) lt_error("cannot rename the CTC mask '%s': %s", a ? a : "?", strerror(errno));
      free(a);
      free(b);
      if (bad) return LT_ERR_OUTPUT;
    }
#endif
  return 0;
}

void lt_report_free(lt_report *r)
{
  lt_vidout_close(r->video, LT_VIDOUT_DISCARD); /* still open: the run failed */
  r->video = NULL;
  free(r->ov_colour);
  free(r->ov_count);
  free(r->ov_tail);
  free(r->ov_xy);
  free(r->ov_col);
  r->ov_colour = r->ov_count = r->ov_col = NULL;
  r->ov_tail = r->ov_xy = NULL;
  free(r->ctc_dir);
  free(r->ctc_track_path);
  free(r->pop_path);
  free(r->mask);
  r->ctc_dir = r->ctc_track_path = r->pop_path = NULL;
  r->mask = NULL;
  for (int i = 0; r->held && i <= r->hold; i++) free(r->held[i].vals);
  free(r->held);
  free(r->hidden);
  r->held = NULL;
  r->hidden = NULL;
  r->held_count = r->hidden_cap = 0;
}

int lt_report_finish(lt_report *r, lt_track_info *all, int nall)
{
  int herr = release_all(r);
  int werr = lt_rows_finish(&r->rows);
  if (!werr) werr = herr;
  r->rows_on = 0;
  int verr = lt_vidout_close(r->video, werr ? LT_VIDOUT_PARTIAL : LT_VIDOUT_COMMIT);
  r->video = NULL;
  if (!werr && verr) return verr;
  if (werr) { /* the complete frames written before the failure stay in .partial */
    lt_loop_keep_partial(r->L, r->out, r->lo->format == LT_FORMAT_CSV);
    return werr;
  }
  FILE *f = r->out->fp;
  const lt_leuk_opts *o = r->lo;
  if (o->format == LT_FORMAT_TRACKMATE) {
    fputs("    </AllSpots>\n    <AllTracks>\n", f);
    for (int i = 0; i < nall; i++) {
      const lt_track_info *t = &all[i];
      if (t->nframes < 2) continue;
      fprintf(f, "      <Track name=\"Track_%d\" TRACK_ID=\"%d\" NUMBER_SPOTS=\"%d\">\n", t->id, t->id, t->nframes);
      for (int j = 1; j < t->nframes; j++)
        fprintf(f, "        <Edge SPOT_SOURCE_ID=\"%d\" SPOT_TARGET_ID=\"%d\" />\n", t->spot_ids[j - 1], t->spot_ids[j]);
      fputs("      </Track>\n", f);
    }
    fputs("    </AllTracks>\n    <FilteredTracks>\n", f);
    for (int i = 0; i < nall; i++)
      if (all[i].nframes >= 2) fprintf(f, "      <TrackID TRACK_ID=\"%d\" />\n", all[i].id);
    fputs("    </FilteredTracks>\n  </Model>\n", f);
    write_tm_settings(r, f);
  } else if (o->format == LT_FORMAT_CTC) {
    int cerr = write_ctc_tracks(r, f, all, nall);
    if (cerr) return cerr;
  }
  int err = lt_out_check(r->out);
  if (!err && o->summary) err = write_summary(r, all, nall);
  return err;
}

void lt_report_abort(lt_report *r)
{
  lt_vidout_close(r->video, LT_VIDOUT_PARTIAL); /* the frames so far, as FILE.partial */
  r->video = NULL;
  if (!r->rows_on) return;
  release_all(r); /* the held rows too (tracks not judged yet included) */
  lt_rows_finish(&r->rows); /* the frames handed over are written first */
  r->rows_on = 0;
  /* only rows are worth keeping: a header alone is removed */
  lt_loop_keep_partial(r->L, r->out, r->lo->format == LT_FORMAT_CSV && r->rows.frames > 0);
}

/* Room for track ids below id_end in the overlay bookkeeping. */
static int ov_grow(lt_report *r, int id_end)
{
  if (id_end <= r->ov_ids) return 0;
  int cap = r->ov_ids ? r->ov_ids : 64, T = r->lo->overlay_tail > 0 ? r->lo->overlay_tail : 1;
  while (cap < id_end) cap *= 2;
  int *c = realloc(r->ov_colour, sizeof(int) * cap);
  if (c) r->ov_colour = c;
  int *k = realloc(r->ov_count, sizeof(int) * cap);
  if (k) r->ov_count = k;
  double *t = realloc(r->ov_tail, sizeof(double) * 3 * T * cap);
  if (t) r->ov_tail = t;
  if (!c || !k || !t) return LT_ERR_NOMEM;
  for (int i = r->ov_ids; i < cap; i++) r->ov_colour[i] = -1, r->ov_count[i] = 0;
  r->ov_ids = cap;
  return 0;
}

int lt_report_overlay(lt_report *r, int frame, const float *grey, const lt_leuk_cell *cells,
                      const lt_track_info *info, int n)
{
  const lt_leuk_opts *lo = r->lo;
  const int w = r->width, h = r->height, T = lo->overlay_tail;
  const lt_rgb halo = {0, 0, 0}, banner_c = {255, 255, 0};
  int maxid = 0;
  for (int i = 0; i < n; i++)
    if (info[i].id + 1 > maxid) maxid = info[i].id + 1;
  if (n > r->ov_cap) {
    double *xy = realloc(r->ov_xy, sizeof(double) * 2 * n);
    if (xy) r->ov_xy = xy;
    int *col = realloc(r->ov_col, sizeof(int) * n);
    if (col) r->ov_col = col;
    if (!xy || !col) return LT_ERR_NOMEM;
    r->ov_cap = n;
  }
  lt_canvas cv;
  if (ov_grow(r, maxid) || lt_canvas_init(&cv, w, h, grey)) return LT_ERR_NOMEM;
  /* colours: a track keeps the colour it got when first shown, chosen away
   * from the colours of the tracks around it */
  for (int i = 0; i < n; i++) {
    r->ov_xy[2 * i] = cells[i].xc;
    r->ov_xy[2 * i + 1] = cells[i].yc;
    r->ov_col[i] = r->ov_colour[info[i].id];
  }
  for (int i = 0; i < n; i++)
    if (r->ov_col[i] < 0)
      r->ov_col[i] = r->ov_colour[info[i].id] = lt_pick_colour(r->ov_xy, r->ov_col, n, cells[i].xc, cells[i].yc);
  const lt_rect *roi = &lo->leuk.roi;
  double rx[4] = {roi->x, roi->x + roi->w - 1, roi->x + roi->w - 1, roi->x};
  double ry[4] = {roi->y, roi->y, roi->y + roi->h - 1, roi->y + roi->h - 1};
  lt_draw_polygon(&cv, rx, ry, 4, (lt_rgb){160, 160, 160});
  /* tails: the centres of the last T frames, oldest first */
  for (int i = 0; i < n && T > 0; i++) {
    int id = info[i].id, k = r->ov_count[id];
    double *ring = r->ov_tail + (size_t)3 * T * id;
    double *p = ring + 3 * (k % T);
    p[0] = cells[i].xc, p[1] = cells[i].yc, p[2] = frame;
    r->ov_count[id] = ++k;
    lt_rgb col = lt_track_colour(r->ov_col[i]);
    const double *prev = NULL;
    for (int j = k > T ? k - T : 0; j < k; j++) {
      const double *q = ring + 3 * (j % T);
      if (q[2] <= frame - T) continue;
      if (prev) lt_draw_line(&cv, prev[0], prev[1], q[0], q[1], col);
      prev = q;
    }
  }
  for (int i = 0; i < n; i++) {
    const lt_leuk_cell *c = &cells[i];
    double x[LT_LEUK_SNAXELS], y[LT_LEUK_SNAXELS];
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      double t = lt_snaxel_angle(j);
      x[j] = c->xc + c->r[j] * cos(t);
      y[j] = c->yc + c->r[j] * sin(t);
    }
    lt_rgb col = lt_track_colour(r->ov_col[i]);
    lt_draw_polygon(&cv, x, y, LT_LEUK_SNAXELS, col);
    lt_draw_line(&cv, c->xc - 1, c->yc, c->xc + 1, c->yc, col);
    lt_draw_line(&cv, c->xc, c->yc - 1, c->xc, c->yc + 1, col);
  }
  /* text last, over every line: the banner, then the IDs off it */
  char label[64];
  snprintf(label, sizeof label, "frame %d  cells %d", frame, n);
  int bs = lt_text_width(label, 2) + 8 <= w ? 2 : 1, bw = 4 + lt_text_width(label, bs) + 4, bh = 4 + 7 * bs + 4;
  lt_draw_text_halo(&cv, 4, 4, bs, label, banner_c, halo);
  int sc = w >= 1200 ? 2 : 1, th = 7 * sc;
  for (int i = 0; i < n; i++) {
    const lt_leuk_cell *c = &cells[i];
    char id[16];
    snprintf(id, sizeof id, "%d", info[i].id);
    int tw = lt_text_width(id, sc);
    int lx = (int)lround(c->xc + c->R * 0.7), ly = (int)lround(c->yc - c->R) - th - 2;
    lt_label_place(&lx, &ly, tw, th, (int)lround(c->yc + c->R) + 3, w, h, bw, bh);
    lt_draw_text_halo(&cv, lx, ly, sc, id, lt_track_colour(r->ov_col[i]), halo);
  }
  int err = 0;
  if (r->s->overlay_dir) {
    size_t plen = strlen(r->s->overlay_dir) + 32;
    char *path = malloc(plen);
    err = LT_ERR_NOMEM;
    if (path) {
      snprintf(path, plen, "%s/frame_%06d.png", r->s->overlay_dir, frame);
      err = lt_canvas_write_png(&cv, path, lo->overlay_grey_bits);
    }
    free(path);
  }
  if (!err && r->video) err = lt_vidout_frame(r->video, cv.rgb);
  lt_canvas_free(&cv);
  return err;
}
