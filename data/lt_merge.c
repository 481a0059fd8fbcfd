/* lt_merge.c - merge the per-video results of a batch into one place
 * (installed as leuktrack-merge; scripts/leuktrack-batch and the Slurm merge
 * step call it).
 *
 *   lt_merge MANIFEST.tsv RESULTS_DIR
 *
 * MANIFEST: one line per video, tab-separated:
 *   VIDEO CONDITION STATUS EXIT SECONDS TRACKS_CSV SUMMARY_CSV ERROR
 * (empty fields allowed; STATUS done|skipped|failed|...; a CSV path may be
 * missing or empty when the video failed). Writes into RESULTS_DIR:
 *   all_tracks.csv    video,condition + the columns of the per-video tracks
 *                     CSV: every row of every video (done or skipped)
 *   all_summary.csv   video,condition + the columns of the per-video summary
 *   videos.csv        video,condition,status,exit_code,frames,tracks,
 *                     mean_speed_px_frame,wall_s,error: frames = the frames
 *                     spanned by the tracks (first..last frame with a track)
 *   velocity_all.png  histogram of the per-track mean speeds (px/frame, or
 *                     um/s when the summaries have mean_speed_um_s) of all
 *                     videos; velocity_CONDITION.png per condition when there
 *                     are two or more conditions. Every plot shares one axis;
 *                     each has .svg, .pdf (Cairo builds) and .csv (bin counts) siblings.
 * All per-video CSVs must have the header of the first (else exit 1, naming
 * the file). Exit status: 0 ok, 1 a CSV could not be read or merged, 2 usage,
 * 4 cannot write. Plots are drawn by lt_plot_histogram (src/io/plot.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "draw.h"
#include "plot.h"

#define MAXF 8

typedef struct video {
  char *f[MAXF]; /* the manifest fields */
  long frames, tracks;
  long fmin, fmax;     /* first and last frame with a track; fmax < 0: none */
  double mean_speed;
  int nspeed;
} video;

static char *dupstr(const char *s) { char *p = strdup(s ? s : ""); if (!p) { perror("lt_merge"); exit(1); } return p; }

/* Splits line (modified) at sep into at most n fields. */
static int split(char *line, char sep, char **f, int n)
{
  int k = 0;
  f[k++] = line;
  for (char *p = line; *p && k < n; p++)
    if (*p == sep) {
      *p = 0;
      f[k++] = p + 1;
    }
  return k;
}

static void chomp(char *s)
{
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
}

/* Column index of name in a CSV header, -1 if absent. */
static int column(const char *header, const char *name)
{
  char buf[4096], *f[64];
  snprintf(buf, sizeof buf, "%s", header);
  int n = split(buf, ',', f, 64);
  for (int i = 0; i < n; i++)
    if (!strcmp(f[i], name)) return i;
  return -1;
}

static void csv_field(FILE *o, const char *v)
{
  if (!strpbrk(v, ",\"\n")) {
    fputs(v, o);
    return;
  }
  fputc('"', o);
  for (; *v; v++) {
    if (*v == '"') fputc('"', o);
    fputc(*v, o);
  }
  fputc('"', o);
}

/* Appends every data row of path to out, prefixed by video,condition; the
 * header must equal *header (set from the first file). Calls row() per row
 * with the split fields. Returns 0, or 1 after a message. */
static int append(FILE *out, const char *path, video *v, char **header,
                  void (*row)(video *v, const char *hdr, char **f, int n))
{
  FILE *in = fopen(path, "r");
  if (!in) {
    fprintf(stderr, "lt_merge: cannot read '%s': %s\n", path, strerror(errno));
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  int first = 1, err = 0;
  while (getline(&line, &cap, in) > 0) {
    chomp(line);
    if (first) {
      first = 0;
      if (!*header) {
        *header = dupstr(line);
        fprintf(out, "video,condition,%s\n", line);
      } else if (strcmp(*header, line)) {
        fprintf(stderr, "lt_merge: '%s' has the header '%s', not '%s' like the first file\n", path, line, *header);
        err = 1;
        break;
      }
      continue;
    }
    if (!*line) continue;
    csv_field(out, v->f[0]);
    fputc(',', out);
    csv_field(out, v->f[1]);
    fprintf(out, ",%s\n", line);
    if (row) {
      char *f[64];
      int n = split(line, ',', f, 64);
      row(v, *header, f, n);
    }
  }
  if (!err && first) {
    fprintf(stderr, "lt_merge: '%s' is empty (no header)\n", path);
    err = 1;
  }
  free(line);
  fclose(in);
  return err;
}

static void track_row(video *v, const char *hdr, char **f, int n)
{
  static int col = -2;
  if (col == -2) col = column(hdr, "frame");
  if (col < 0 || col >= n) return;
  long fr = atol(f[col]);
  if (v->fmax < 0 || fr < v->fmin) v->fmin = fr;
  if (fr > v->fmax) v->fmax = fr;
}

static int speed_col = -2, speed_um = 0;
static double *all_speeds;
static int nall, capall;

static void summary_row(video *v, const char *hdr, char **f, int n)
{
  if (speed_col == -2) {
    speed_col = column(hdr, "mean_speed_um_s");
    speed_um = speed_col >= 0;
    if (speed_col < 0) speed_col = column(hdr, "mean_speed_px_frame");
  }
  v->tracks++;
  int pc = column(hdr, "mean_speed_px_frame");
  if (pc >= 0 && pc < n && f[pc][0]) {
    v->mean_speed += atof(f[pc]);
    v->nspeed++;
  }
  if (speed_col >= 0 && speed_col < n && f[speed_col][0]) {
    if (nall == capall) {
      capall = capall ? 2 * capall : 256;
      all_speeds = realloc(all_speeds, sizeof(double) * (size_t)capall * 2);
      if (!all_speeds) {
        perror("lt_merge");
        exit(1);
      }
    }
    all_speeds[2 * nall] = atof(f[speed_col]);
    all_speeds[2 * nall + 1] = -1; /* the video's index, set by the caller */
    nall++;
  }
}

static int commit(FILE *f, const char *tmp, const char *path)
{
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    fprintf(stderr, "lt_merge: cannot write '%s': %s\n", path, strerror(errno));
    remove(tmp);
    return 4;
  }
  return 0;
}

static FILE *open_tmp(const char *dir, const char *name, char *tmp, char *path, size_t n)
{
  snprintf(path, n, "%s/%s", dir, name);
  snprintf(tmp, n, "%s/.%s.tmp", dir, name);
  FILE *f = fopen(tmp, "w");
  if (!f) fprintf(stderr, "lt_merge: cannot write '%s': %s\n", tmp, strerror(errno));
  return f;
}

int main(int argc, char **argv)
{
  if (argc != 3 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: lt_merge MANIFEST.tsv RESULTS_DIR  (see the comment at the top of data/lt_merge.c)\n");
    return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
  }
  const char *dir = argv[2];
  FILE *m = fopen(argv[1], "r");
  if (!m) {
    fprintf(stderr, "lt_merge: cannot read manifest '%s': %s\n", argv[1], strerror(errno));
    return 2;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "lt_merge: cannot create '%s': %s\n", dir, strerror(errno));
    return 4;
  }
  video *v = NULL;
  int nv = 0, cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  while (getline(&line, &lcap, m) > 0) {
    chomp(line);
    if (!*line || line[0] == '#') continue;
    if (nv == cap) {
      cap = cap ? 2 * cap : 64;
      v = realloc(v, sizeof *v * (size_t)cap);
      if (!v) {
        perror("lt_merge");
        return 1;
      }
    }
    char *f[MAXF] = {0};
    int n = split(line, '\t', f, MAXF);
    memset(&v[nv], 0, sizeof v[nv]);
    for (int i = 0; i < MAXF; i++) v[nv].f[i] = dupstr(i < n ? f[i] : "");
    nv++;
  }
  free(line);
  fclose(m);

  char tmp[4096], path[4096], tmp2[4096], path2[4096];
  int err = 0, rc;
  char *th = NULL, *sh = NULL;
  FILE *ft = open_tmp(dir, "all_tracks.csv", tmp, path, sizeof tmp);
  FILE *fs = open_tmp(dir, "all_summary.csv", tmp2, path2, sizeof tmp2);
  if (!ft || !fs) return 4;
  for (int i = 0; i < nv; i++) {
    const char *st = v[i].f[2];
    if (strcmp(st, "done") && strcmp(st, "skipped")) continue;
    v[i].fmax = -1;
    if (v[i].f[5][0]) err |= append(ft, v[i].f[5], &v[i], &th, track_row);
    v[i].frames = v[i].fmax >= 0 ? v[i].fmax - v[i].fmin + 1 : 0;
    int before = nall;
    if (v[i].f[6][0]) err |= append(fs, v[i].f[6], &v[i], &sh, summary_row);
    for (int k = before; k < nall; k++) all_speeds[2 * k + 1] = i;
  }
  if (!th) fprintf(ft, "video,condition\n");
  if (!sh) fprintf(fs, "video,condition\n");
  if ((rc = commit(ft, tmp, path))) return rc;
  if ((rc = commit(fs, tmp2, path2))) return rc;

  FILE *fv = open_tmp(dir, "videos.csv", tmp, path, sizeof tmp);
  if (!fv) return 4;
  fprintf(fv, "video,condition,status,exit_code,frames,tracks,mean_speed_px_frame,wall_s,error\n");
  for (int i = 0; i < nv; i++) {
    int ok = !strcmp(v[i].f[2], "done") || !strcmp(v[i].f[2], "skipped");
    csv_field(fv, v[i].f[0]);
    fputc(',', fv);
    csv_field(fv, v[i].f[1]);
    fprintf(fv, ",%s,%s,", v[i].f[2], v[i].f[3]);
    if (ok) fprintf(fv, "%ld,%ld,", v[i].frames, v[i].tracks);
    else fputs(",,", fv);
    if (ok && v[i].nspeed) fprintf(fv, "%.4f", v[i].mean_speed / v[i].nspeed);
    fprintf(fv, ",%s,", v[i].f[4]);
    csv_field(fv, v[i].f[7]);
    fputc('\n', fv);
  }
  if ((rc = commit(fv, tmp, path))) return rc;

  /* histograms: one shared axis, the bins of all tracks */
  double hi = 0;
  for (int k = 0; k < nall; k++)
    if (all_speeds[2 * k] > hi) hi = all_speeds[2 * k];
  const char *xl = speed_um ? "mean speed per track (\xc2\xb5m/s)" : "mean speed per track (px/frame)";
  double *sel = malloc(sizeof(double) * (nall > 0 ? nall : 1));
  if (!sel) {
    fprintf(stderr, "lt_merge: out of memory\n");
    return 1;
  }
  /* conditions in order of first appearance */
  int ncond = 0;
  const char **cond = calloc((size_t)nv + 1, sizeof *cond);
  for (int i = 0; i < nv; i++) {
    int seen = 0;
    for (int c = 0; c < ncond; c++) seen |= !strcmp(cond[c], v[i].f[1]);
    if (!seen) cond[ncond++] = v[i].f[1];
  }
  for (int c = -1; c < (ncond >= 2 ? ncond : 0); c++) {
    int nt = 0;
    for (int k = 0; k < nall; k++) {
      if (c >= 0 && strcmp(v[(int)all_speeds[2 * k + 1]].f[1], cond[c])) continue;
      sel[nt++] = all_speeds[2 * k];
    }
    char title[512], name[600];
    if (c < 0) {
      snprintf(title, sizeof title, "Velocity distribution, all videos (%d tracks)", nt);
      snprintf(path, sizeof path, "%s/velocity_all", dir);
    } else {
      snprintf(title, sizeof title, "Velocity distribution, %s (%d tracks)", cond[c], nt);
      snprintf(name, sizeof name, "%s", cond[c][0] ? cond[c] : "none");
      for (char *p = name; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
      snprintf(path, sizeof path, "%s/velocity_%s", dir, name);
    }
    if (lt_plot_histogram(path, sel, nt, hi, title, xl, speed_um ? "\xc2\xb5m/s" : "px/frame", 800, 500) != 0) {
      fprintf(stderr, "lt_merge: cannot write '%s'\n", path);
      return 4;
    }
  }
  free(sel);
  free(cond);
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < MAXF; k++) free(v[i].f[k]);
  free(v);
  free(all_speeds);
  free(th);
  free(sh);
  return err ? 1 : 0;
}
