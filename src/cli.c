/* cli.c - the common option table, the mode word, parsing and --help.
 *
 * `leuktrack [MODE] [OPTIONS] INPUT...`: MODE is the first non-option word
 * when it names a mode of the table (src/modes.c), else the mode is
 * lt_modes[0] (leukocyte) and the word is an input. Finding that word needs
 * to know which options take a separate value, so a pre-scan walks argv
 * with the union of all tables. Then getopt_long runs over the common table
 * plus the mode's table; common options fill lt_settings here, the mode's
 * options go to its setter. An option of another mode is a usage error that
 * names the mode owning it. Values are parsed strictly (opt.h). */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "opt.h"
#include "plot.h"

enum {
  O_OUTPUT = 'o', O_QUIET = 'q', O_VERBOSE = 'v', O_HELP = 'h', O_VERSION = 'V', O_THREADS = 'j',
  O_OVERLAY = 256, O_FRAMES, O_BACKEND, O_DEVICE, O_PROGRESS, O_NO_PROGRESS, O_STATS, O_CHANNEL, O_FPS,
  O_ON_DAMAGE, O_JOBS,
};

static const lt_optdef common[] = {
  {"output", O_OUTPUT, required_argument, "FILE", "write results to FILE ('-' = stdout, the default)"},
  {"overlay", O_OVERLAY, required_argument, "DIR", "write an annotated PNG per frame into DIR"},
  {"frames", O_FRAMES, required_argument, "A:B", "process frames A..B-1 (0-based; A: or :B allowed)"},
  {"backend", O_BACKEND, required_argument, "auto|cpu|cuda", "compute backend (default auto: CUDA if usable)"},
  {"device", O_DEVICE, required_argument, "N", "CUDA device index (default 0)"},
  {"threads", O_THREADS, required_argument, "N", "CPU threads (default: all cores)"},
  {"channel", O_CHANNEL, required_argument, "luma|r|g|b", "colour channel to analyse (default luma)"},
  {"fps", O_FPS, required_argument, "F", "frame rate (default: from the video)"},
  {"on-damage", O_ON_DAMAGE, required_argument, "warn|error", "a damaged video: warn (default) or fail (exit 3)"},
  {"jobs", O_JOBS, required_argument, "K", "several inputs: run K at once, outputs into -o DIR/ (see BATCH in leuktrack(1))"},
  {"progress", O_PROGRESS, no_argument, NULL, "show a progress line on stderr"},
  {"no-progress", O_NO_PROGRESS, no_argument, NULL, "never show progress (default: only on a terminal)"},
  {"stats", O_STATS, optional_argument, "FILE", "print per-stage timings (to stderr or FILE)"},
  {"quiet", O_QUIET, no_argument, NULL, "only errors on stderr"},
  {"verbose", O_VERBOSE, no_argument, NULL, "more messages on stderr (twice: debug)"},
  {"help", O_HELP, no_argument, NULL, "show this help (with MODE: also the mode's options) and exit"},
  {"version", O_VERSION, no_argument, NULL, "show the version and exit"},
};
#define NCOMMON ((int)(sizeof common / sizeof common[0]))

static void print_table(FILE *f, const lt_optdef *t, int n)
{
  for (int i = 0; i < n; i++) {
    char left[64];
    const lt_optdef *d = &t[i];
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
}

static void usage(FILE *f, const lt_mode *m)
{
  if (!m) {
    fprintf(f, "Usage: leuktrack [MODE] [OPTIONS] INPUT...\n"
               "Turns biomedical video into measurements. MODE (default %s):\n", lt_modes[0]->name);
    for (int i = 0; i < lt_nmodes; i++) fprintf(f, "  %-12s %s\n", lt_modes[i]->name, lt_modes[i]->purpose);
    fprintf(f, "Example: %s\n\nCommon options (every mode):\n", lt_modes[0]->example);
    print_table(f, common, NCOMMON);
    fprintf(f, "\n'leuktrack MODE --help' adds a mode's own options.\n");
  } else {
    fprintf(f, "Usage: leuktrack %s [OPTIONS] %s\n%s.\nExample: %s\n\nOptions of mode '%s':\n", m->name, m->usage,
            m->purpose, m->example, m->name);
    print_table(f, m->opts, m->nopts);
    fprintf(f, "\nCommon options:\n");
    print_table(f, common, NCOMMON);
    if (m->output_help) fprintf(f, "\n%s\n", m->output_help);
  }
  fprintf(f, "Exit status: 0 ok, 1 internal error, 2 usage, 3 bad input, 4 cannot write output,\n"
             "5 GPU requested but unusable, 130 interrupted. See leuktrack(1).\n");
}

/* ---- pre-scan: which word is MODE --------------------------------------- */

static const lt_optdef *find_long(const lt_optdef *t, int n, const char *name, size_t len, int *exact)
{
  const lt_optdef *hit = NULL;
  for (int i = 0; i < n; i++)
    if (!strncmp(t[i].name, name, len)) {
      if (strlen(t[i].name) == len) {
        *exact = 1;
        return &t[i];
      }
      hit = &t[i];
    }
  return hit;
}

/* Does long option `name` (len chars, maybe an abbreviation) take a
 * separate value in any table? */
static int long_takes_value(const char *name, size_t len)
{
  int exact = 0, req = 0, hits = 0;
  const lt_optdef *d = find_long(common, NCOMMON, name, len, &exact);
  if (d && exact) return d->has_arg == required_argument;
  if (d) hits++, req |= d->has_arg == required_argument;
  for (int m = 0; m < lt_nmodes; m++) {
    exact = 0;
    d = find_long(lt_modes[m]->opts, lt_modes[m]->nopts, name, len, &exact);
    if (d && exact) return d->has_arg == required_argument;
    if (d) hits++, req |= d->has_arg == required_argument;
  }
  return hits >= 1 && req;
}

static int short_takes_value(int ch)
{
  for (int i = 0; i < NCOMMON; i++)
    if (common[i].id == ch) return common[i].has_arg == required_argument;
  return 0;
}

/* Index in argv of the first non-option word before "--", or -1 (after
 * "--" every word is an input). */
static int first_word(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) return -1;
    if (a[0] != '-' || !a[1]) return i;
    if (a[1] == '-') {
      const char *name = a + 2, *eq = strchr(name, '=');
      if (!eq && long_takes_value(name, strlen(name))) i++;
      continue;
    }
    for (const char *p = a + 1; *p; p++)
      if (short_takes_value((unsigned char)*p)) {
        if (!p[1]) i++;
        break;
      }
  }
  return -1;
}

/* A word that can only be meant as a mode: lowercase letters, digits and
 * '-', not an existing file. */
static int looks_like_mode(const char *w)
{
  size_t n = strlen(w);
  if (n == 0 || n > 24 || w[0] < 'a' || w[0] > 'z') return 0;
  for (size_t i = 0; i < n; i++)
    if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= '0' && w[i] <= '9') || w[i] == '-')) return 0;
  struct stat st;
  return stat(w, &st) != 0;
}

const lt_mode *lt_mode_find(const char *name)
{
  for (int i = 0; i < lt_nmodes; i++)
    if (!strcmp(lt_modes[i]->name, name)) return lt_modes[i];
  return NULL;
}

const lt_mode *lt_cli_option_owner(const char *name)
{
  for (int m = 0; m < lt_nmodes; m++)
    for (int i = 0; i < lt_modes[m]->nopts; i++)
      if (!strcmp(lt_modes[m]->opts[i].name, name)) return lt_modes[m];
  return NULL;
}

static void mode_list(char *buf, size_t n)
{
  buf[0] = 0;
  for (int i = 0; i < lt_nmodes; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", i ? ", " : "", lt_modes[i]->name);
  }
}

/* Levenshtein distance of a and b (short strings). */
static int edit_distance(const char *a, const char *b)
{
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 40 || lb > 40) return 99;
  int d[41][41];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
      d[i][j] = c;
    }
  return d[la][lb];
}

/* The option of the table closest to name (at most 2 edits, or 3 for long
 * names), NULL if none. */
static const char *did_you_mean(const lt_optdef *all, int nall, const char *name)
{
  const char *best = NULL;
  int bd = strlen(name) >= 8 ? 4 : 3;
  for (int i = 0; i < nall; i++) {
    int dd = edit_distance(name, all[i].name);
    if (dd < bd) {
      bd = dd;
      best = all[i].name;
    }
  }
  return best;
}

/* '?' from getopt: an unknown option, one of another mode, or a value given
 * to an option that takes none. */
static int unknown_option(const lt_mode *m, const lt_optdef *all, int nall, const char *arg)
{
  for (int i = 0; optopt && i < nall; i++)
    if (all[i].id == optopt && strchr(arg, '=')) {
      lt_error("option '--%s' does not take a value (see leuktrack %s --help)", all[i].name, m->name);
      return LT_ERR_USAGE;
    }
  if (optopt && optopt < 256 && arg[0] == '-' && arg[1] != '-') {
    lt_error("unknown option '-%c' (see leuktrack %s --help)", optopt, m->name);
    return LT_ERR_USAGE;
  }
  if (arg[0] == '-' && arg[1] == '-') {
    char name[64];
    size_t len = strcspn(arg + 2, "=");
    if (len < sizeof name) {
      memcpy(name, arg + 2, len);
      name[len] = 0;
      const lt_mode *owner = lt_cli_option_owner(name);
      if (owner && owner != m) {
        lt_error("option '--%s' belongs to mode '%s', not '%s' (see leuktrack %s --help)", name, owner->name,
                 m->name, owner->name);
        return LT_ERR_USAGE;
      }
      const char *near = did_you_mean(all, nall, name);
      if (near) {
        lt_error("unknown option '%s'; did you mean '--%s'? (see leuktrack %s --help)", arg, near, m->name);
        return LT_ERR_USAGE;
      }
    }
  }
  lt_error("unknown option '%s' (see leuktrack %s --help)", arg, m->name);
  return LT_ERR_USAGE;
}

static int set_common(lt_settings *s, int c, const char *name, const char *a)
{
  int k;
  switch (c) {
  case O_OUTPUT:
  case O_OVERLAY:
    if (lt_opt_nonempty(name, a)) return LT_ERR_USAGE;
    if (c == O_OUTPUT) s->output = a;
    else s->overlay_dir = a;
    return 0;
  case O_FRAMES: return lt_opt_range(name, a, &s->frame_begin, &s->frame_end, 1);
  case O_BACKEND:
    if (lt_opt_choice(name, a, "auto|cpu|cuda", &k)) return LT_ERR_USAGE;
    s->backend = k == 0 ? LT_BACKEND_AUTO : k == 1 ? LT_BACKEND_CPU : LT_BACKEND_CUDA;
    return 0;
  case O_DEVICE: return lt_opt_int(name, a, 0, 1023, &s->device);
  case O_THREADS: return lt_opt_int(name, a, 1, 4096, &s->threads);
  case O_CHANNEL:
    if (lt_opt_choice(name, a, "luma|r|g|b", &k)) return LT_ERR_USAGE;
    s->channel = k == 0 ? LT_CHANNEL_LUMA : k == 1 ? LT_CHANNEL_R : k == 2 ? LT_CHANNEL_G : LT_CHANNEL_B;
    return 0;
  case O_FPS: return lt_opt_double(name, a, 1e-6, 1e7, &s->fps);
  case O_ON_DAMAGE: return lt_opt_choice(name, a, "warn|error", &s->damage_error);
  case O_JOBS: return lt_opt_int(name, a, 1, 1024, &s->jobs);
  case O_PROGRESS: s->progress = 1; return 0;
  case O_NO_PROGRESS: s->progress = 0; return 0;
  case O_STATS: s->stats = a ? a : ""; return 0; /* --stats= (empty) means stderr too */
  case O_QUIET: s->verbosity = LT_LOG_QUIET; return 0;
  case O_VERBOSE: s->verbosity = s->verbosity < 0 ? 1 : s->verbosity + 1; return 0;
  }
  lt_error("internal: unhandled option %d", c);
  return LT_ERR_INTERNAL;
}

void lt_cli_free(lt_cli *c)
{
  free(c->params);
  free(c->inputs);
  free(c->given);
  for (int i = 0; i < c->nowned; i++) free(c->owned[i]);
  free(c->owned);
  c->params = NULL;
  c->inputs = NULL;
  c->given = NULL;
  c->owned = NULL;
  c->ngiven = c->nowned = 0;
}

/* -o names a folder: ends with '/' or is an existing directory. */
static int is_folder(const char *p)
{
  struct stat st;
  size_t n = p ? strlen(p) : 0;
  return n > 0 && (p[n - 1] == '/' || (stat(p, &st) == 0 && S_ISDIR(st.st_mode)));
}

/* Batch mode (core/batch.h): --jobs, or several inputs with -o DIR/ for a
 * mode that takes exactly one input ("INPUT"). A mode whose usage allows
 * several inputs as one run (vcm's image pairs) batches only with --jobs.
 * Returns 1 batch, 0 not, or LT_ERR_USAGE after a message. */
static int batch_wanted(const lt_mode *m, const lt_settings *s)
{
  int one = !strncmp(m->usage, "INPUT", 5);
  int want = s->jobs > 0 || (s->ninputs > 1 && is_folder(s->output) && !strcmp(m->usage, "INPUT"));
  if (!want) return 0;
  if (!one) {
    lt_error("--jobs: mode '%s' takes %s per run; it cannot run a batch of inputs", m->name, m->usage);
    return LT_ERR_USAGE;
  }
  if (s->ninputs == 0) {
    lt_error("--jobs: no inputs given");
    return LT_ERR_USAGE;
  }
  if (!is_folder(s->output)) {
    lt_error("--jobs: -o must name a folder for the outputs (ending in '/', e.g. -o results/), got %s%s%s",
             s->output ? "'" : "", s->output ? s->output : "none", s->output ? "'" : "");
    return LT_ERR_USAGE;
  }
  return 1;
}

static char *own(lt_cli *c, char *p)
{
  if (!p) return NULL;
  c->owned[c->nowned++] = p;
  return p;
}

/* The per-input value of an output path option (see lt_cli_for_input). */
static char *derive_path(const char *v, const char *metavar, const char *name)
{
  size_t n = strlen(v), ln = strlen(name);
  const char *brace = strstr(v, "{}");
  char *r;
  if (brace) {
    int k = 0;
    for (const char *p = brace; (p = strstr(p, "{}")); p += 2) k++;
    r = malloc(n + (size_t)k * ln + 1);
    if (!r) return NULL;
    char *o = r;
    for (const char *p = v; *p;) {
      if (p[0] == '{' && p[1] == '}') {
        memcpy(o, name, ln);
        o += ln;
        p += 2;
      } else *o++ = *p++;
    }
    *o = 0;
    return r;
  }
  r = malloc(n + ln + 3);
  if (!r) return NULL;
  if (!strcmp(metavar, "DIR")) {
    sprintf(r, "%s%s%s", v, n && v[n - 1] == '/' ? "" : "/", name);
    return r;
  }
  const char *slash = strrchr(v, '/');
  size_t d = slash ? (size_t)(slash - v + 1) : 0;
  memcpy(r, v, d);
  sprintf(r + d, "%s.%s", name, v + d);
  return r;
}

static int is_output_metavar(const char *a)
{
  return a && (!strcmp(a, "DIR") || !strcmp(a, "FILE") || !strncmp(a, "FILE.", 5));
}

int lt_cli_for_input(const lt_cli *c, int k, const char *outdir, const char *name, lt_cli *out)
{
  memset(out, 0, sizeof *out);
  const lt_mode *m = c->mode;
  out->mode = m;
  out->mode_given = c->mode_given;
  out->s.frame_end = -1;
  out->s.progress = -1;
  out->params = calloc(1, m->params_size ? m->params_size : 1);
  out->inputs = calloc(2, sizeof *out->inputs);
  out->owned = calloc((size_t)c->ngiven + 1, sizeof *out->owned);
  if (!out->params || !out->inputs || !out->owned) {
    lt_error("out of memory preparing input '%s'", c->inputs[k]);
    return LT_ERR_NOMEM;
  }
  if (m->defaults) m->defaults(out->params);
  const char *ext = "csv";
  int err = 0;
  for (int i = 0; !err && i < c->ngiven; i++) {
    const lt_optdef *d = c->given[i].def;
    const char *a = c->given[i].arg;
    if (d->id == O_OUTPUT || d->id == O_JOBS) continue;
    if (!strcmp(d->name, "format") && a) ext = !strcmp(a, "trackmate") ? "xml" : !strcmp(a, "ctc") ? "txt" : "csv";
    if (a && a[0] && is_output_metavar(d->arg) && !(a = own(out, derive_path(a, d->arg, name)))) {
      lt_error("out of memory preparing input '%s'", c->inputs[k]);
      return LT_ERR_NOMEM;
    }
    err = d->id >= LT_OPT_MODE_BASE ? m->set(out->params, d->id, d->name, a) : set_common(&out->s, d->id, d->name, a);
  }
  if (err) return err;
  size_t n = strlen(outdir) + strlen(name) + strlen(ext) + 3;
  char *o = own(out, malloc(n));
  if (!o) {
    lt_error("out of memory preparing input '%s'", c->inputs[k]);
    return LT_ERR_NOMEM;
  }
  snprintf(o, n, "%s%s%s.%s", outdir, outdir[strlen(outdir) - 1] == '/' ? "" : "/", name, ext);
  out->s.output = o;
  out->s.progress = 0;
  out->inputs[0] = c->inputs[k];
  out->s.inputs = out->inputs;
  out->s.ninputs = 1;
  return m->check ? m->check(out->params, &out->s) : 0;
}

int lt_cli_parse(int argc, char **argv, lt_cli *c)
{
  memset(c, 0, sizeof *c);
  lt_settings *s = &c->s;
  s->frame_end = -1;
  s->progress = -1;

  /* MODE */
  int wi = first_word(argc, argv);
  c->mode = lt_modes[0];
  if (wi > 0) {
    const lt_mode *m = lt_mode_find(argv[wi]);
    if (m) {
      c->mode = m;
      c->mode_given = 1;
    } else if (looks_like_mode(argv[wi])) {
      char list[256];
      mode_list(list, sizeof list);
      lt_error("mode '%s' is not available: '%s' is neither a mode of this leuktrack (%s) nor an existing file",
               argv[wi], argv[wi], list);
      return LT_ERR_USAGE;
    }
  }
  const lt_mode *m = c->mode;
  c->params = calloc(1, m->params_size ? m->params_size : 1);
  c->inputs = calloc((size_t)argc + 1, sizeof *c->inputs);
  /* bundled short options ("-qv") give several options per word: at most
   * one per character */
  size_t nopt = 1;
  for (int i = 0; i < argc; i++) nopt += strlen(argv[i]);
  c->given = calloc(nopt, sizeof *c->given);
  char **av = malloc(sizeof *av * ((size_t)argc + 1));
  lt_optdef *all = malloc(sizeof *all * (size_t)(NCOMMON + m->nopts));
  struct option *lo = malloc(sizeof *lo * (size_t)(NCOMMON + m->nopts + 1));
  if (!c->params || !c->inputs || !c->given || !av || !all || !lo) {
    free(av);
    free(all);
    free(lo);
    lt_error("out of memory parsing the command line");
    return LT_ERR_NOMEM;
  }
  if (m->defaults) m->defaults(c->params);
  s->inputs = c->inputs;

  /* argv without the MODE word */
  int ac = 0;
  for (int i = 0; i < argc; i++)
    if (!(c->mode_given && i == wi)) av[ac++] = argv[i];
  av[ac] = NULL;

  /* common + mode table -> getopt_long */
  int nall = 0;
  for (int i = 0; i < NCOMMON; i++) all[nall++] = common[i];
  for (int i = 0; i < m->nopts; i++) all[nall++] = m->opts[i];
  char shortopts[64] = "-:"; /* "-": words come back as 1; ":": missing value -> ':' */
  for (int i = 0; i < nall; i++) {
    lo[i] = (struct option){all[i].name, all[i].has_arg, NULL, all[i].id};
    if (all[i].id < 256) {
      size_t l = strlen(shortopts);
      shortopts[l] = (char)all[i].id;
      shortopts[l + 1] = 0;
      if (all[i].has_arg == required_argument) strcat(shortopts, ":");
    }
  }
  memset(&lo[nall], 0, sizeof lo[nall]);
  opterr = 0;
  optind = 1;
  int ch, err = 0;
  while (!err && (ch = getopt_long(ac, av, shortopts, lo, NULL)) != -1) {
    const char *name = NULL;
    for (int i = 0; i < nall; i++)
      if (all[i].id == ch) name = all[i].name;
    if (ch == 1) {
      c->inputs[s->ninputs++] = optarg;
    } else if (ch == O_HELP) {
      usage(stdout, c->mode_given ? m : NULL);
      err = 1;
    } else if (ch == O_VERSION) {
      printf("leuktrack %s\nfigures: %s\n", LT_VERSION, lt_plot_renderer());
      err = 1;
    } else if (ch == '?') {
      err = unknown_option(m, all, nall, av[optind - 1]);
    } else if (ch == ':') {
      lt_error("option '%s' needs a value", av[optind - 1]);
      err = LT_ERR_USAGE;
    } else {
      for (int i = 0; i < nall; i++)
        if (all[i].id == ch) c->given[c->ngiven].def = i < NCOMMON ? &common[i] : &m->opts[i - NCOMMON];
      c->given[c->ngiven++].arg = optarg;
      err = ch >= LT_OPT_MODE_BASE ? m->set(c->params, ch, name, optarg) : set_common(s, ch, name, optarg);
    }
  }
  for (int i = optind; !err && i < ac; i++) c->inputs[s->ninputs++] = av[i]; /* after "--" */
  free(av);
  free(all);
  free(lo);
  if (err) return err;
  int b = batch_wanted(m, s);
  if (b < 0) return b;
  c->batch = b;
  if (b) return 0; /* the mode's check runs per input (lt_cli_for_input) */
  return m->check ? m->check(c->params, s) : 0;
}

void lt_cli_list_options(FILE *f, const lt_mode *m)
{
  const lt_optdef *t = m ? m->opts : common;
  int n = m ? m->nopts : NCOMMON;
  for (int i = 0; i < n; i++) fprintf(f, "--%s\n", t[i].name);
}
