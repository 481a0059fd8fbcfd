/* report.c - writers of the leukocyte results (SPEC section 3 and 4.1):
 *   csv        frame,t_s,track_id,x_px,y_px,radius_px,gicov[,x_um,y_um]
 *   trackmate  TrackMate XML (spots streamed per frame, tracks at the end)
 *   ctc        Cell Tracking Challenge res_track.txt "L B E P"
 *   --summary  per track: frames, path, mean/median speed (px/frame, um/s)
 *              + a velocity histogram PNG next to it
 *   --overlay  frame_000123.png with contours and track IDs.
 * Numbers are printed with the C locale ('.' decimals; leuktrack never
 * calls setlocale). */
#include "tracks.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "draw.h"
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
    t->speeds[t->nspeeds++] = d / (gap > 0 ? gap : 1);
  } else {
    t->first = frame;
    t->spot_ids = malloc(sizeof(int) * 17);
    t->speeds = malloc(sizeof(double) * 16);
    if (!t->spot_ids || !t->speeds) return LT_ERR_NOMEM;
    t->cap_speeds = 16;
  }
  t->spot_ids[t->nframes] = spot_id;
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
  t->speeds = NULL;
  t->spot_ids = NULL;
}

static double mean_radius(const lt_leuk_cell *c)
{
  double s = 0;
  for (int j = 0; j < LT_LEUK_SNAXELS; j++) s += c->r[j];
  return s / LT_LEUK_SNAXELS;
}

/* Values per row: the CSV columns (x_um, y_um only with a scale), then the
 * TrackMate spot id. */
enum { V_FRAME, V_T, V_ID, V_X, V_Y, V_R, V_GICOV, V_XUM, V_YUM, V_SPOT, NV };
static const lt_col csv_cols[] = {{"frame", -1}, {"t_s", 6},       {"track_id", -1},
                                  {"x_px", 3},   {"y_px", 3},      {"radius_px", 3},
                                  {"gicov", 4},  {"x_um", 4},      {"y_um", 4}};

static void write_trackmate(void *user, FILE *f, int frame, const double *v, int n, int nv)
{
  const lt_report *r = user;
  const double s = r->lo->um_per_px, k = s > 0 ? s : 1.0;
  if (n == 0) return;
  fprintf(f, "      <SpotsInFrame frame=\"%d\">\n", frame);
  for (int i = 0; i < n; i++, v += nv)
    fprintf(f,
            "        <Spot ID=\"%d\" name=\"ID%d\" QUALITY=\"%.4f\" POSITION_X=\"%.4f\" POSITION_Y=\"%.4f\" "
            "POSITION_Z=\"0.0\" POSITION_T=\"%.6f\" FRAME=\"%d\" RADIUS=\"%.4f\" VISIBILITY=\"1\" />\n",
            (int)v[V_SPOT], (int)v[V_SPOT], fabs(v[V_GICOV]), v[V_X] * k, v[V_Y] * k,
            r->fps > 0 ? v[V_T] : (double)frame, frame, v[V_R] * k);
  fputs("      </SpotsInFrame>\n", f);
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
  int err;
  if (!(r->out = lt_loop_output(L, s->output, &err))) return err;
  if (lo->summary && !(r->sum = lt_loop_output(L, lo->summary, &err))) return err;
  if (s->overlay_dir && mkdir(s->overlay_dir, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create overlay folder '%s': %s", s->overlay_dir, strerror(errno));
    return LT_ERR_OUTPUT;
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
                      lo->format == LT_FORMAT_CSV ? NULL : lo->format == LT_FORMAT_TRACKMATE ? write_trackmate : write_nothing, r);
  r->rows_on = err == 0;
  return err;
}

int lt_report_frame(lt_report *r, int frame, double t_s, const lt_leuk_cell *cells,
                    lt_track_info *info, int n)
{
  int err;
  double *v = lt_rows_frame(&r->rows, frame, n, &err);
  if (!v) return err;
  const double s = r->lo->um_per_px;
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
    err = lt_track_add(&info[i], frame, v[V_X], v[V_Y], v[V_R], (int)v[V_SPOT]);
    if (err) {
      lt_error("out of memory recording track %d", info[i].id);
      return err;
    }
  }
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

/* <summary minus .csv>_velocity.png */
static char *hist_path(const char *summary)
{
  size_t n = strlen(summary);
  char *p = malloc(n + 16);
  if (!p) return NULL;
  memcpy(p, summary, n + 1);
  if (n > 4 && !strcmp(p + n - 4, ".csv")) p[n - 4] = 0;
  strcat(p, "_velocity.png");
  return p;
}

static int write_summary(lt_report *r, lt_track_info *all, int nall)
{
  const lt_leuk_opts *o = r->lo;
  int phys = o->um_per_px > 0 && r->fps > 0;
  double k = phys ? o->um_per_px * r->fps : 1.0; /* px/frame -> um/s */
  FILE *f = r->sum->fp;
  int err;
  fprintf(f, "track_id,first_frame,last_frame,frames,path_px,mean_speed_px_frame,median_speed_px_frame,mean_radius_px,end%s\n",
          phys ? ",mean_speed_um_s,median_speed_um_s" : "");
  double *means = malloc(sizeof(double) * (nall > 0 ? nall : 1));
  int nm = 0;
  if (!means) return LT_ERR_NOMEM;
  for (int i = 0; i < nall; i++) {
    lt_track_info *t = &all[i];
    fprintf(f, "%d,%d,%d,%d,%.3f,", t->id, t->first, t->last, t->nframes, t->path);
    if (t->nspeeds > 0) {
      double sum = 0;
      for (int j = 0; j < t->nspeeds; j++) sum += t->speeds[j];
      double mean = sum / t->nspeeds, med = median(t->speeds, t->nspeeds);
      fprintf(f, "%.4f,%.4f,%.3f,%s", mean, med, t->sum_radius / t->nframes, end_name(t->end));
      if (phys) fprintf(f, ",%.4f,%.4f", mean * k, med * k);
      if (t->nspeeds >= 2) means[nm++] = mean * k;
    } else {
      fprintf(f, ",,%.3f,%s", t->sum_radius / t->nframes, end_name(t->end));
      if (phys) fputs(",,", f);
    }
    fputc('\n', f);
  }
  err = lt_out_check(r->sum);
  if (!err) {
    double hi = 0;
    for (int i = 0; i < nm; i++)
      if (means[i] > hi) hi = means[i];
    if (hi <= 0) hi = 1;
    hi *= 1.05;
    enum { NB = 20 };
    double counts[NB] = {0};
    for (int i = 0; i < nm; i++) {
      int b = (int)(means[i] / hi * NB);
      counts[b < NB ? b : NB - 1] += 1;
    }
    char *hp = hist_path(o->summary);
    if (!hp) err = LT_ERR_NOMEM;
    else
      err = lt_plot_histogram(hp, counts, NB, 0.0, hi, "Velocity distribution of tracked leukocytes",
                              phys ? "mean speed per track (um/s)" : "mean speed per track (px/frame)", 800, 500);
    free(hp);
  }
  free(means);
  return err;
}

int lt_report_finish(lt_report *r, lt_track_info *all, int nall)
{
  int werr = lt_rows_finish(&r->rows);
  r->rows_on = 0;
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
    fprintf(f,
            "    </FilteredTracks>\n  </Model>\n  <Settings>\n"
            "    <ImageData filename=\"%s\" folder=\"\" width=\"%d\" height=\"%d\" nslices=\"1\" nframes=\"%d\" "
            "pixelwidth=\"%g\" pixelheight=\"%g\" voxeldepth=\"1.0\" timeinterval=\"%g\" />\n  </Settings>\n</TrackMate>\n",
            r->input, r->width, r->height, r->rows.frames, o->um_per_px > 0 ? o->um_per_px : 1.0,
            o->um_per_px > 0 ? o->um_per_px : 1.0, r->fps > 0 ? 1.0 / r->fps : 1.0);
  } else if (o->format == LT_FORMAT_CTC) {
    /* L B E P: label (track id + 1; 0 is background), begin, end, parent. */
    for (int i = 0; i < nall; i++) fprintf(f, "%d %d %d 0\n", all[i].id + 1, all[i].first, all[i].last);
  }
  int err = lt_out_check(r->out);
  if (!err && o->summary) err = write_summary(r, all, nall);
  return err;
}

void lt_report_abort(lt_report *r)
{
  if (!r->rows_on) return;
  lt_rows_finish(&r->rows); /* the frames handed over are written first */
  r->rows_on = 0;
  /* only rows are worth keeping: a header alone is removed */
  lt_loop_keep_partial(r->L, r->out, r->lo->format == LT_FORMAT_CSV && r->rows.frames > 0);
}

static lt_rgb track_colour(int id)
{
  static const lt_rgb pal[] = {{230, 25, 75}, {60, 180, 75}, {255, 225, 25}, {0, 130, 200}, {245, 130, 48},
                               {145, 30, 180}, {70, 240, 240}, {240, 50, 230}, {210, 245, 60}, {250, 190, 212}};
  return pal[id % (int)(sizeof pal / sizeof pal[0])];
}

int lt_report_overlay(const lt_settings *s, const lt_leuk_opts *lo, int frame, const float *grey, int w, int h,
                      const lt_leuk_cell *cells, const lt_track_info *info, int n)
{
  lt_canvas cv; /* the folder was created by lt_report_open */
  if (lt_canvas_init(&cv, w, h, grey)) return LT_ERR_NOMEM;
  const lt_rect *roi = &lo->leuk.roi;
  lt_rgb grey_c = {160, 160, 160};
  double rx[4] = {roi->x, roi->x + roi->w - 1, roi->x + roi->w - 1, roi->x};
  double ry[4] = {roi->y, roi->y, roi->y + roi->h - 1, roi->y + roi->h - 1};
  lt_draw_polygon(&cv, rx, ry, 4, grey_c);
  for (int i = 0; i < n; i++) {
    const lt_leuk_cell *c = &cells[i];
    double x[LT_LEUK_SNAXELS], y[LT_LEUK_SNAXELS];
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      double t = lt_snaxel_angle(j);
      x[j] = c->xc + c->r[j] * cos(t);
      y[j] = c->yc + c->r[j] * sin(t);
    }
    lt_rgb col = track_colour(info[i].id);
    lt_draw_polygon(&cv, x, y, LT_LEUK_SNAXELS, col);
    lt_draw_line(&cv, c->xc - 1, c->yc, c->xc + 1, c->yc, col);
    lt_draw_line(&cv, c->xc, c->yc - 1, c->xc, c->yc + 1, col);
    char id[16];
    snprintf(id, sizeof id, "%d", info[i].id);
    lt_draw_text(&cv, (int)(c->xc + c->R * 0.8), (int)(c->yc - c->R - 8), 1, id, col);
  }
  char label[64];
  snprintf(label, sizeof label, "frame %d  cells %d", frame, n);
  lt_draw_text(&cv, 4, 4, 2, label, (lt_rgb){255, 255, 0});
  size_t plen = strlen(s->overlay_dir) + 32;
  char *path = malloc(plen);
  int err = LT_ERR_NOMEM;
  if (path) {
    snprintf(path, plen, "%s/frame_%06d.png", s->overlay_dir, frame);
    err = lt_png_write_rgb(path, cv.rgb, w, h);
  }
  free(path);
  lt_canvas_free(&cv);
  return err;
}
