/* lt_eval.c - compare leuktrack's tracks with lt_synth's ground truth.
 *
 * Inputs (RFC 4180 CSV, '.' decimals, columns found by header name, extra
 * columns ignored):
 *   TRACKS.csv  frame,t_s,track_id,x_px,y_px,radius_px,gicov[,...]   (leuktrack -o)
 *   TRUTH.csv   frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px        (lt_synth --truth)
 * Model:
 *   Per frame, track points are matched one-to-one to truth cells, greedily by
 *   increasing centre distance, a pair being allowed when the distance is at
 *   most F * (truth radius), F = --min-radius-frac (default 0.5).
 *   A truth cell is "fully visible" in a frame when its centre is at least
 *   radius + 2 px inside every border of the W x H frame (--size, default
 *   640x480). Cells with >= 3 fully visible frames form the denominator; such a
 *   cell is "tracked entry to exit" when one track id is matched to it on
 *   >= 90 % of its fully visible frames.
 *   RMSE and mean |radius error| are over all matched points; the RMSE less
 *   each truth cell's mean offset (the mean of track - truth over the cell's
 *   matched points, subtracted from its points: a constant offset between the
 *   truth's centre and where the cell's edge really is, as with the cut
 *   patches of lt_synth2's real family, leaves only the jitter); false-positive
 *   points are track points matched to no truth cell; an ID switch is counted
 *   each time a truth cell is matched to a different track id than at its
 *   previous matched frame. A false track is a track id with more than half of
 *   its points matched to no truth cell. Max speed = largest mean truth speed |(vx, vy)|
 *   (px/frame) among the tracked cells.
 * Output: a short table on stdout ending with the line
 *   accuracy: tracked=X/Y (P%) rmse_px=R fp_points=F id_switches=S
 *   or one JSON object with --json. Exit 0 whenever both files were read
 *   (it measures, it does not judge), 2 on bad options, 3 on unreadable input. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "lt_eval"
#define EXIT_USAGE 2
#define EXIT_INPUT 3
#define VIS_MARGIN 2.0    /* px beyond the radius for "fully visible" */
#define MIN_VIS_FRAMES 3
#define TRACKED_FRAC 0.9

struct point {
  int frame;
  long id;            /* track_id or cell_id */
  double x, y, r;
  double vx, vy;      /* truth only */
  int match;          /* index into the other array, -1 if unmatched */
};

struct table {
  struct point *p;
  size_t n, cap;
};

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": error: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: " PROG " TRACKS.csv TRUTH.csv [--min-radius-frac F] [--size WxH] [--json]\n"
          "Match leuktrack tracks to lt_synth ground truth and report accuracy.\n"
          "  --min-radius-frac F  match gate as a fraction of the truth radius (default 0.5)\n"
          "  --size WxH           frame size, for the fully-visible test (default 640x480)\n"
          "  --json               print one JSON object instead of the table\n");
}

/* ------------------------------------------------------------------ */
/* CSV reading */

/* Split one CSV record in place into fields (quotes removed, "" -> ").
 * Returns the number of fields (at most max). */
static int csv_split(char *line, char **fields, int max) {
  int n = 0;
  char *s = line;
  size_t len = strlen(line);
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
  for (;;) {
    char *out = s, *start = s;
    if (*s == '"') {
      s++;
      for (;;) {
        if (*s == '\0') break;
        if (*s == '"') {
          if (s[1] == '"') {
            *out++ = '"';
            s += 2;
            continue;
          }
          s++;
          break;
        }
        *out++ = *s++;
      }
      while (*s && *s != ',') s++;
    } else {
      while (*s && *s != ',') *out++ = *s++;
    }
    char end = *s;
    *out = '\0';
    if (n < max) fields[n++] = start;
    if (end != ',') break;
    s++;
  }
  return n;
}

static int col_index(char **names, int n, const char *want) {
  for (int i = 0; i < n; i++) {
    const char *s = names[i];
    while (*s == ' ') s++;
    size_t l = strlen(s);
    while (l && s[l - 1] == ' ') l--;
    if (l == strlen(want) && !strncmp(s, want, l)) return i;
  }
  return -1;
}

static int to_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || errno) return -1;
  while (*end == ' ') end++;
  return *end ? -1 : 0;
}

static int to_long(const char *s, long *v) {
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  if (end == s || errno) return -1;
  while (*end == ' ') end++;
  return *end ? -1 : 0;
}

#define MAX_COLS 64

/* Read a CSV of points. id_col is "track_id" or "cell_id"; velocities are read
 * when want_v. Returns 0 or -1 after a message. */
static int read_points(const char *path, const char *id_col, int want_v, struct table *t) {
  FILE *f = fopen(path, "r");
  if (!f) {
    err("cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  char *fields[MAX_COLS];
  int rc = -1;
  long lineno = 1;
  if ((got = getline(&line, &cap, f)) < 0) {
    err("'%s' is empty (expected a CSV header)", path);
    goto done;
  }
  int nh = csv_split(line, fields, MAX_COLS);
  const char *need[] = {"frame", id_col, "x_px", "y_px", "radius_px", "vx_px", "vy_px"};
  int nneed = want_v ? 7 : 5, col[7];
  for (int i = 0; i < nneed; i++) {
    if ((col[i] = col_index(fields, nh, need[i])) < 0) {
      err("'%s': the header has no column '%s'", path, need[i]);
      goto done;
    }
  }
  while ((got = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n') || line[0] == '\0') continue;
    int nf = csv_split(line, fields, MAX_COLS);
    struct point p = {.match = -1};
    double v[7];
    long frame, id;
    for (int i = 0; i < nneed; i++) {
      if (col[i] >= nf) {
        err("'%s' line %ld: only %d fields, expected column '%s'", path, lineno, nf, need[i]);
        goto done;
      }
      const char *s = fields[col[i]];
      int bad = (i <= 1) ? (i == 0 ? to_long(s, &frame) : to_long(s, &id)) : to_double(s, &v[i]);
      if (bad || (i >= 2 && !isfinite(v[i]))) {
        err("'%s' line %ld: column '%s': '%s' is not a %s", path, lineno, need[i], s,
            i <= 1 ? "integer" : "finite number");
        goto done;
      }
    }
    if (frame < 0 || frame > 100000000L) {
      err("'%s' line %ld: frame %ld out of range", path, lineno, frame);
      goto done;
    }
    p.frame = (int)frame;
    p.id = id;
    p.x = v[2];
    p.y = v[3];
    p.r = v[4];
    if (want_v) {
      p.vx = v[5];
      p.vy = v[6];
    }
    if (t->n == t->cap) {
      size_t nc = t->cap ? 2 * t->cap : 1024;
      struct point *np = realloc(t->p, nc * sizeof *np);
      if (!np) {
        err("out of memory reading '%s'", path);
        goto done;
      }
      t->p = np;
      t->cap = nc;
    }
    t->p[t->n++] = p;
  }
  if (ferror(f)) {
    err("reading '%s': %s", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  free(line);
  fclose(f);
  return rc;
}

/* ------------------------------------------------------------------ */
/* matching */

static int cmp_frame(const void *a, const void *b) {
  const struct point *p = a, *q = b;
  if (p->frame != q->frame) return (p->frame > q->frame) - (p->frame < q->frame);
  return (p->id > q->id) - (p->id < q->id);
}

struct cand {
  double d2;
  size_t tr, gt;
};

static int cmp_cand(const void *a, const void *b) {
  const struct cand *p = a, *q = b;
  if (p->d2 != q->d2) return (p->d2 > q->d2) - (p->d2 < q->d2);
  if (p->gt != q->gt) return (p->gt > q->gt) - (p->gt < q->gt);
  return (p->tr > q->tr) - (p->tr < q->tr);
}

/* Greedy one-to-one matching per frame; both tables sorted by frame. */
static int match_all(struct table *tr, struct table *gt, double gate_frac) {
  struct cand *c = NULL;
  size_t ccap = 0;
  size_t i = 0, j = 0;
  while (i < tr->n && j < gt->n) {
    int f = tr->p[i].frame < gt->p[j].frame ? tr->p[i].frame : gt->p[j].frame;
    size_t i1 = i, j1 = j;
    while (i1 < tr->n && tr->p[i1].frame == f) i1++;
    while (j1 < gt->n && gt->p[j1].frame == f) j1++;
    size_t nc = 0;
    for (size_t a = i; a < i1; a++)
      for (size_t b = j; b < j1; b++) {
        double dx = tr->p[a].x - gt->p[b].x, dy = tr->p[a].y - gt->p[b].y;
        double d2 = dx * dx + dy * dy, gate = gate_frac * gt->p[b].r;
        if (d2 > gate * gate) continue;
        if (nc == ccap) {
          size_t ncap = ccap ? 2 * ccap : 256;
          struct cand *np = realloc(c, ncap * sizeof *np);
          if (!np) {
            err("out of memory matching frame %d", f);
            free(c);
            return -1;
          }
          c = np;
          ccap = ncap;
        }
        c[nc++] = (struct cand){d2, a, b};
      }
    if (nc > 1) qsort(c, nc, sizeof *c, cmp_cand); /* c is NULL while nothing was gated */
    for (size_t k = 0; k < nc; k++) {
      if (tr->p[c[k].tr].match >= 0 || gt->p[c[k].gt].match >= 0) continue;
      tr->p[c[k].tr].match = (int)c[k].gt;
      gt->p[c[k].gt].match = (int)c[k].tr;
    }
    i = i1;
    j = j1;
  }
  free(c);
  return 0;
}

/* ------------------------------------------------------------------ */

struct result {
  long truth_cells, eligible, tracked;
  long tr_points, gt_points, matched, fp_points, missed_points, id_switches;
  long tracks, false_tracks;  /* track ids; those with more than half of their points unmatched */
  double rmse, mean_rad_err, max_speed_tracked, max_speed_eligible;
  double rmse_cell;           /* RMSE less each truth cell's mean offset (track - truth) */
};

static int cmp_cell_frame(const void *a, const void *b) {
  const struct point *p = *(const struct point *const *)a, *q = *(const struct point *const *)b;
  if (p->id != q->id) return (p->id > q->id) - (p->id < q->id);
  return (p->frame > q->frame) - (p->frame < q->frame);
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static int evaluate(const struct table *tr, const struct table *gt, int W, int H, struct result *res) {
  memset(res, 0, sizeof *res);
  res->tr_points = (long)tr->n;
  res->gt_points = (long)gt->n;
  double se = 0.0, re = 0.0;
  for (size_t a = 0; a < tr->n; a++) {
    int m = tr->p[a].match;
    if (m < 0) {
      res->fp_points++;
      continue;
    }
    double dx = tr->p[a].x - gt->p[m].x, dy = tr->p[a].y - gt->p[m].y;
    se += dx * dx + dy * dy;
    re += fabs(tr->p[a].r - gt->p[m].r);
    res->matched++;
  }
  res->missed_points = res->gt_points - res->matched;
  res->rmse = res->matched ? sqrt(se / (double)res->matched) : NAN;
  res->mean_rad_err = res->matched ? re / (double)res->matched : NAN;
  res->max_speed_tracked = res->max_speed_eligible = NAN;

  /* per track id: matched points against all its points */
  long *tk = malloc((tr->n ? tr->n : 1) * 2 * sizeof *tk);
  if (!tk) {
    err("out of memory evaluating %zu track points", tr->n);
    return -1;
  }
  for (size_t a = 0; a < tr->n; a++) tk[a] = tr->p[a].id * 2 + (tr->p[a].match >= 0);
  if (tr->n > 1) qsort(tk, tr->n, sizeof *tk, cmp_long);
  for (size_t a = 0; a < tr->n;) {
    size_t b = a;
    long nm = 0;
    while (b < tr->n && tk[b] >> 1 == tk[a] >> 1) nm += tk[b++] & 1;
    res->tracks++;
    if (2 * nm < (long)(b - a)) res->false_tracks++;
    a = b;
  }
  free(tk);

  /* per truth cell: its points in frame order */
  const struct point **byc = malloc((gt->n ? gt->n : 1) * sizeof *byc);
  long *ids = malloc((gt->n ? gt->n : 1) * sizeof *ids);
  if (!byc || !ids) {
    err("out of memory evaluating %zu truth points", gt->n);
    free(byc);
    free(ids);
    return -1;
  }
  for (size_t b = 0; b < gt->n; b++) byc[b] = &gt->p[b];
  if (gt->n > 1) qsort(byc, gt->n, sizeof *byc, cmp_cell_frame);
  size_t s = 0;
  double se_cell = 0.0;
  while (s < gt->n) {
    size_t e = s;
    while (e < gt->n && byc[e]->id == byc[s]->id) e++;
    res->truth_cells++;
    long nvis = 0, nids = 0, prev = 0;
    int have_prev = 0;
    double vsum = 0.0, sdx = 0.0, sdy = 0.0, sd2 = 0.0;
    long nm = 0;
    for (size_t k = s; k < e; k++) {
      const struct point *p = byc[k];
      vsum += sqrt(p->vx * p->vx + p->vy * p->vy);
      long tid = p->match >= 0 ? tr->p[p->match].id : 0;
      if (p->match >= 0) {
        double dx = tr->p[p->match].x - p->x, dy = tr->p[p->match].y - p->y;
        sdx += dx;
        sdy += dy;
        sd2 += dx * dx + dy * dy;
        nm++;
        if (have_prev && tid != prev) res->id_switches++;
        prev = tid;
        have_prev = 1;
      }
      double mg = p->r + VIS_MARGIN;
      if (p->x >= mg && p->x <= W - 1 - mg && p->y >= mg && p->y <= H - 1 - mg) {
        nvis++;
        if (p->match >= 0) ids[nids++] = tid;
      }
    }
    if (nm) se_cell += sd2 - (sdx * sdx + sdy * sdy) / (double)nm; /* about the cell's mean offset */
    if (nvis >= MIN_VIS_FRAMES) {
      double speed = vsum / (double)(e - s);
      res->eligible++;
      if (isnan(res->max_speed_eligible) || speed > res->max_speed_eligible) res->max_speed_eligible = speed;
      /* most frequent track id among the fully visible matched frames */
      if (nids > 1) qsort(ids, (size_t)nids, sizeof *ids, cmp_long);
      long best = 0;
      for (long a = 0; a < nids;) {
        long b = a;
        while (b < nids && ids[b] == ids[a]) b++;
        if (b - a > best) best = b - a;
        a = b;
      }
      if ((double)best >= TRACKED_FRAC * (double)nvis - 1e-9) {
        res->tracked++;
        if (isnan(res->max_speed_tracked) || speed > res->max_speed_tracked) res->max_speed_tracked = speed;
      }
    }
    s = e;
  }
  res->rmse_cell = res->matched ? sqrt(fmax(0.0, se_cell) / (double)res->matched) : NAN;
  free(byc);
  free(ids);
  return 0;
}

static void json_num(const char *key, double v, int last) {
  if (isfinite(v))
    printf("  \"%s\": %.6g%s\n", key, v, last ? "" : ",");
  else
    printf("  \"%s\": null%s\n", key, last ? "" : ",");
}

static void print_result(const struct result *r, double gate_frac, int W, int H, int json) {
  double pct = r->eligible ? 100.0 * (double)r->tracked / (double)r->eligible : 0.0;
  if (json) {
    printf("{\n");
    json_num("gate_radius_frac", gate_frac, 0);
    printf("  \"width\": %d,\n  \"height\": %d,\n", W, H);
    printf("  \"truth_cells\": %ld,\n  \"eligible_cells\": %ld,\n  \"tracked_cells\": %ld,\n", r->truth_cells,
           r->eligible, r->tracked);
    json_num("tracked_percent", pct, 0);
    printf("  \"track_points\": %ld,\n  \"truth_points\": %ld,\n  \"matched_points\": %ld,\n", r->tr_points,
           r->gt_points, r->matched);
    printf("  \"fp_points\": %ld,\n  \"missed_points\": %ld,\n  \"id_switches\": %ld,\n", r->fp_points,
           r->missed_points, r->id_switches);
    printf("  \"tracks\": %ld,\n  \"false_tracks\": %ld,\n", r->tracks, r->false_tracks);
    json_num("rmse_px", r->rmse, 0);
    json_num("rmse_less_cell_offset_px", r->rmse_cell, 0);
    json_num("mean_abs_radius_err_px", r->mean_rad_err, 0);
    json_num("max_speed_tracked_px_per_frame", r->max_speed_tracked, 0);
    json_num("max_speed_eligible_px_per_frame", r->max_speed_eligible, 1);
    printf("}\n");
    return;
  }
  printf("lt_eval: gate %.2f x truth radius, frame %dx%d\n", gate_frac, W, H);
  printf("  truth cells                          %8ld\n", r->truth_cells);
  printf("  cells with >= %d fully visible frames %8ld\n", MIN_VIS_FRAMES, r->eligible);
  printf("  tracked entry to exit (one id >=90%%) %8ld  (%.1f%%)\n", r->tracked, pct);
  printf("  track points / truth points          %8ld / %ld\n", r->tr_points, r->gt_points);
  printf("  matched points                       %8ld\n", r->matched);
  printf("  false-positive points (unmatched)    %8ld\n", r->fp_points);
  printf("  missed truth points                  %8ld\n", r->missed_points);
  printf("  ID switches                          %8ld\n", r->id_switches);
  printf("  tracks / false tracks (>50%% unmatched) %7ld / %ld\n", r->tracks, r->false_tracks);
  printf("  centre RMSE (px)                     %8.3f\n", r->rmse);
  printf("  ... less each cell's mean offset (px) %7.3f\n", r->rmse_cell);
  printf("  mean |radius error| (px)             %8.3f\n", r->mean_rad_err);
  printf("  max speed, tracked cells (px/frame)  %8.2f  (of eligible: %.2f)\n", r->max_speed_tracked,
         r->max_speed_eligible);
  printf("accuracy: tracked=%ld/%ld (%.1f%%) rmse_px=%.3f fp_points=%ld id_switches=%ld\n", r->tracked, r->eligible,
         pct, r->rmse, r->fp_points, r->id_switches);
}

int main(int argc, char **argv) {
  const char *files[2] = {NULL, NULL};
  int nfiles = 0, json = 0, W = 640, H = 480;
  double gate_frac = 0.5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--min-radius-frac") || !strncmp(a, "--min-radius-frac=", 18)) {
      const char *v = a[17] == '=' ? a + 18 : (i + 1 < argc ? argv[++i] : NULL);
      char *end;
      errno = 0;
      double d = v ? strtod(v, &end) : NAN;
      if (!v || errno || end == v || *end || !(d > 0.0 && d <= 10.0)) {
        err("--min-radius-frac: expected a number in (0, 10], got '%s'", v ? v : "(nothing)");
        return EXIT_USAGE;
      }
      gate_frac = d;
    } else if (!strcmp(a, "--size") || !strncmp(a, "--size=", 7)) {
      const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
      int w, h, used = 0;
      if (!v || sscanf(v, "%dx%d%n", &w, &h, &used) != 2 || v[used] || w < 1 || h < 1 || w > 1000000 ||
          h > 1000000) {
        err("--size: expected WxH such as 640x480, got '%s'", v ? v : "(nothing)");
        return EXIT_USAGE;
      }
      W = w;
      H = h;
    } else if (a[0] == '-' && a[1] != '\0') {
      err("unknown option '%s' (see --help)", a);
      return EXIT_USAGE;
    } else if (nfiles < 2) {
      files[nfiles++] = a;
    } else {
      err("unexpected argument '%s' (see --help)", a);
      return EXIT_USAGE;
    }
  }
  if (nfiles != 2) {
    err("expected TRACKS.csv and TRUTH.csv (see --help)");
    return EXIT_USAGE;
  }
  struct table tr = {0}, gt = {0};
  struct result res;
  int status = EXIT_INPUT;
  if (read_points(files[0], "track_id", 0, &tr) || read_points(files[1], "cell_id", 1, &gt)) goto done;
  if (tr.n > 1) qsort(tr.p, tr.n, sizeof *tr.p, cmp_frame);
  if (gt.n > 1) qsort(gt.p, gt.n, sizeof *gt.p, cmp_frame);
  status = 1;
  if (match_all(&tr, &gt, gate_frac) || evaluate(&tr, &gt, W, H, &res)) goto done;
  print_result(&res, gate_frac, W, H, json);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    err("writing the report: %s", strerror(errno));
    goto done;
  }
  status = 0;
done:
  free(tr.p);
  free(gt.p);
  return status;
}
