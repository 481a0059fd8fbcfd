/* test_modes.c - the house the modes live in: the mode table's invariants
 * (every mode's options unique, not shadowing a common option, ids in the
 * mode range, an owner for each), the parser's choice of the mode word
 * (after options that take a value, after "--"), option ownership, the CSV
 * row writer (column list, decimals, C locale, frames in order through the
 * writer thread) and the line plot PNG (read back: size, axes drawn, the
 * curve's colour where the data says). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "draw.h"
#include "plot.h"
#include "error.h"
#include "image.h"
#include "log.h"
#include "outfile.h"
#include "rows.h"
#include "test.h"

static int parse(lt_cli *c, const char *line)
{
  static char buf[1024];
  char *argv[64];
  int argc = 0;
  snprintf(buf, sizeof buf, "%s", line);
  argv[argc++] = (char *)"leuktrack";
  for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  optind = 0;
  return lt_cli_parse(argc, argv, c);
}

static void table_invariants(void)
{
  FILE *f = tmpfile();
  lt_cli_list_options(f, NULL);
  rewind(f);
  char common[64][32];
  int nc = 0;
  while (nc < 64 && fscanf(f, "--%31s\n", common[nc]) == 1) nc++;
  fclose(f);
  T_CHECK("common table listed", nc >= 10, "%d common options", nc);
  T_CHECK("at least one mode, leukocyte first", lt_nmodes >= 1 && !strcmp(lt_modes[0]->name, "leukocyte"),
          "%d modes", lt_nmodes);
  for (int m = 0; m < lt_nmodes; m++) {
    const lt_mode *md = lt_modes[m];
    char name[96];
    int ok = md->name && md->purpose && md->usage && md->example && md->run && md->set && md->params_size > 0;
    snprintf(name, sizeof name, "mode %s: name, purpose, usage, example, setter, run", md->name);
    T_CHECK(name, ok, "a field is missing");
    int bad = 0;
    for (int i = 0; i < md->nopts; i++) {
      const lt_optdef *d = &md->opts[i];
      if (d->id < LT_OPT_MODE_BASE || !d->help || (d->has_arg != no_argument && !d->arg)) bad++;
      for (int j = 0; j < i; j++)
        if (!strcmp(md->opts[j].name, d->name) || md->opts[j].id == d->id) bad++;
      for (int j = 0; j < nc; j++)
        if (!strcmp(common[j], d->name)) bad++;
      const lt_mode *own = lt_cli_option_owner(d->name);
      if (!own) bad++;
    }
    snprintf(name, sizeof name, "mode %s: %d options unique, ids >= %d, none shadows a common one", md->name,
             md->nopts, LT_OPT_MODE_BASE);
    T_CHECK(name, bad == 0, "%d problems", bad);
    T_CHECK("lt_mode_find", lt_mode_find(md->name) == md, "not found");
  }
}

static void mode_word(void)
{
  lt_cli c;
  int r = parse(&c, "in.avi -o x.csv");
  T_CHECK("no MODE: the default mode", r == 0 && c.mode == lt_modes[0] && !c.mode_given && c.s.ninputs == 1 &&
          !strcmp(c.s.inputs[0], "in.avi") && !strcmp(c.s.output, "x.csv"), "r=%d", r);
  lt_cli_free(&c);
  r = parse(&c, "-o leukocyte leukocyte in.avi");
  T_CHECK("MODE after -o VALUE (the value is not the mode)", r == 0 && c.mode_given &&
          !strcmp(c.s.output, "leukocyte") && c.s.ninputs == 1 && !strcmp(c.s.inputs[0], "in.avi"), "r=%d", r);
  lt_cli_free(&c);
  r = parse(&c, "--frames 2:9 -qj2 leukocyte --roi 1,2,300,400 in.avi");
  T_CHECK("MODE after options; mode option after MODE", r == 0 && c.mode_given && c.s.frame_begin == 2 &&
          c.s.frame_end == 9 && c.s.threads == 2 && c.s.verbosity == LT_LOG_QUIET, "r=%d", r);
  lt_cli_free(&c);
  r = parse(&c, "-j 3 -- leukocyte");
  T_CHECK("after --: a word is an input even if it names a mode", r == 0 && c.s.ninputs == 1 &&
          !strcmp(c.s.inputs[0], "leukocyte") && c.s.threads == 3, "r=%d n=%d", r, c.s.ninputs);
  lt_cli_free(&c);
  r = parse(&c, "nosuchmode in.avi");
  T_CHECK("unknown mode word -> usage error", r == LT_ERR_USAGE, "r=%d", r);
  lt_cli_free(&c);
  r = parse(&c, "leukocyte --no-such-option in.avi");
  T_CHECK("unknown option -> usage error", r == LT_ERR_USAGE, "r=%d", r);
  lt_cli_free(&c);
}

static void rows_writer(void)
{
  char path[] = "/tmp/lt_rows_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  lt_outfile out;
  static const lt_col cols[] = {{"frame", -1}, {"t_s", 6}, {"v", 2}};
  int err = lt_out_open(&out, path);
  lt_rows w;
  if (!err) err = lt_rows_start(&w, &out, cols, 3, 4, NULL, NULL);
  for (int fr = 0; !err && fr < 40; fr++) {
    int nrows = fr % 3;
    double *v = lt_rows_frame(&w, fr, nrows, &err);
    for (int i = 0; v && i < nrows; i++) {
      v[4 * i + 0] = fr;
      v[4 * i + 1] = fr / 25.0;
      v[4 * i + 2] = -1.005 * (i + 1) + 1e-3;
      v[4 * i + 3] = 99; /* travels with the row, not printed */
    }
    if (!err) err = lt_rows_put(&w);
  }
  if (!err) err = lt_rows_finish(&w);
  if (!err) err = lt_out_commit(&out);
  T_CHECK("rows writer ran", err == 0, "err=%d", err);
  FILE *f = fopen(path, "r");
  char line[128];
  int n = 0, count[40] = {0}, last = -1, ok = f && fgets(line, sizeof line, f) && !strcmp(line, "frame,t_s,v\n");
  while (f && fgets(line, sizeof line, f)) {
    int fr;
    double t, v;
    if (sscanf(line, "%d,%lf,%lf", &fr, &t, &v) != 3 || fr < last || fr < 0 || fr >= 40) {
      ok = 0;
      break;
    }
    count[fr]++;
    last = fr;
    n++;
  }
  if (f) fclose(f);
  for (int fr = 0; fr < 40; fr++) ok &= count[fr] == fr % 3;
  T_CHECK("rows writer: header, every row, in frame order", ok && n == 39, "ok=%d rows=%d (want 39)", ok, n);
  f = fopen(path, "r");
  ok = f && fgets(line, sizeof line, f) && fgets(line, sizeof line, f) && !strcmp(line, "1,0.040000,-1.00\n");
  if (f) fclose(f);
  T_CHECK("rows writer: integer column, decimals per column, '.' separator", ok, "first row '%s'", line);
  unlink(path);
}

static void line_plot(void)
{
  enum { N = 50 };
  double x[N], y[2 * N];
  for (int i = 0; i < N; i++) {
    x[i] = i;
    y[i] = 0.5 * i;       /* series 0: a line from 0 to 24.5 */
    y[N + i] = i == 20 ? NAN : 10.0; /* series 1: constant with a gap */
  }
  const char *names[2] = {"score", "flat"};
  const char *path = "/tmp/lt_plot_test.png";
  int err = lt_plot_lines(path, x, y, N, 2, names, "Score over time", "frame", "score", 640, 400);
  T_CHECK("line plot written", err == 0, "err=%d", err);
  float *px = NULL;
  int w = 0, h = 0;
  err = err ? err : lt_image_read(path, LT_CHANNEL_R, &px, &w, &h);
  T_CHECK("line plot PNG reads back at its size", err == 0 && w == 640 && h == 400, "%dx%d", w, h);
  if (px) {
    /* the axes: a dark vertical line at the left margin over the plot height */
    int black = 0;
    for (int yy = LT_PLOT_TOP; yy < 400 - LT_PLOT_BOTTOM; yy++) black += px[(size_t)yy * w + LT_PLOT_LEFT] < 60;
    T_CHECK("line plot: y axis drawn", black > 250, "%d dark pixels", black);
    /* series 0 (red channel 31, anti-aliased) passes the column of x = 25 */
    int colx = LT_PLOT_LEFT + (int)lround(25.0 / 49 * (640 - LT_PLOT_LEFT - LT_PLOT_RIGHT)), hit = 0;
    for (int yy = LT_PLOT_TOP; yy < 400 - LT_PLOT_BOTTOM; yy++) hit += px[(size_t)yy * w + colx] < 120;
    T_CHECK("line plot: the curve crosses x = 25", hit >= 1, "no pixel of the series colour");
    free(px);
  }
  /* SVG: the title and axis labels as text */
  const char *svg = "/tmp/lt_plot_test.svg";
  err = lt_plot_lines(svg, x, y, N, 2, names, "Score over time", "frame", "score", 640, 400);
  FILE *f = fopen(svg, "r");
  char buf[65536];
  size_t nr = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[nr] = 0;
  if (f) fclose(f);
  T_CHECK("line plot SVG: title, labels and legend as <text>",
          err == 0 && strstr(buf, ">Score over time</text>") && strstr(buf, ">frame</text>") &&
              strstr(buf, ">flat</text>") && strstr(buf, "</svg>"),
          "err %d, %zu bytes", err, nr);
  unlink(svg);
  unlink(path);
  err = lt_plot_lines(path, x, y, 0, 1, NULL, NULL, NULL, NULL, 640, 400);
  T_CHECK("line plot rejects 0 points", err != 0, "err=%d", err);
}

int main(void)
{
  table_invariants();
  mode_word();
  rows_writer();
  line_plot();
  T_DONE();
}
