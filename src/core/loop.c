/* loop.c - the shared frame loop (loop.h). */
#include "loop.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "source.h"

volatile sig_atomic_t lt_stop_requested = 0;

#define MAX_OUTPUTS 8
#define MAX_STAGES 16

struct lt_loop {
  const lt_settings *s;
  const lt_steps *st;
  void *m;
  lt_source *src;
  double t[MAX_STAGES + 1]; /* 0 = decode wait, then the mode's */
  lt_outfile out[MAX_OUTPUTS];
  int keep[MAX_OUTPUTS];
  int nout;
  lt_frame prev;            /* pairs: a copy of the previous frame (index and t_s only after the first pair with lt_loop_prev_index_only) */
  lt_frame cur;             /* bytes-only pairs: floats of a byte frame paired with one that has none (mixed video) */
  int have_prev;
  int prev_index_only;      /* lt_loop_prev_index_only: pixels for the first pair only */
  long decoded;             /* frames the source gave (in range or not) */
  lt_video_damage_info damage;
  long damage_missing;
};

void lt_loop_time(lt_loop *L, int k, double seconds)
{
  if (k >= 0 && k < MAX_STAGES) L->t[k + 1] += seconds;
}

const lt_settings *lt_loop_settings(const lt_loop *L) { return L->s; }

void lt_loop_bytes_only(lt_loop *L) { lt_source_bytes_only(L->src); }

int lt_loop_map(const lt_loop *L, const void **base, size_t *size) { return lt_source_map(L->src, base, size); }

void lt_loop_prev_index_only(lt_loop *L) { L->prev_index_only = 1; }

int lt_loop_peek(lt_loop *L, const lt_frame **f)
{
  if (lt_source_peek(L->src, f) != 1) return 0;
  if (L->s->frame_end >= 0 && (*f)->index >= L->s->frame_end) return 0;
  return 1;
}

lt_outfile *lt_loop_output(lt_loop *L, const char *path, int *err)
{
  if (L->nout == MAX_OUTPUTS) {
    lt_error("internal: too many outputs");
    *err = LT_ERR_INTERNAL;
    return NULL;
  }
  lt_outfile *o = &L->out[L->nout];
  *err = lt_out_open(o, path);
  if (*err) return NULL;
  L->keep[L->nout++] = 0;
  return o;
}

void lt_loop_keep_partial(lt_loop *L, lt_outfile *o, int keep)
{
  for (int i = 0; i < L->nout; i++)
    if (&L->out[i] == o) L->keep[i] = keep;
}

static void outputs_abort(lt_loop *L)
{
  for (int i = 0; i < L->nout; i++) lt_out_abort(&L->out[i], L->keep[i]);
  L->nout = 0;
}

static int outputs_commit(lt_loop *L)
{
  int err = 0;
  for (int i = 0; i < L->nout; i++) {
    if (!err) err = lt_out_commit(&L->out[i]);
    else lt_out_abort(&L->out[i], 0);
  }
  L->nout = 0;
  return err;
}

/* Floats of a frame that has only bytes (lt_loop_bytes_only), in dst's own
 * buffer. */
static void floats_from_bytes(lt_frame *dst)
{
  size_t np = (size_t)dst->width * dst->height;
  for (size_t i = 0; i < np; i++) dst->grey_buf[i] = dst->grey8[i];
  dst->grey = dst->grey_buf;
}

/* Bytes only: a pair whose frames both have pixels but not both bytes (an
 * 8-bit frame next to one that is not, e.g. a black frame of a colour
 * video) gets floats for both, so that a mode may read either form of the
 * pair. *f is replaced by L->cur when it needs floats. */
static int pair_floats(lt_loop *L, const lt_frame **f)
{
  lt_frame *p = &L->prev;
  if ((!p->grey && !p->grey8) || (!(*f)->grey && !(*f)->grey8) || (!p->grey8) == (!(*f)->grey8)) return 0;
  if (!p->grey) floats_from_bytes(p);
  if (!(*f)->grey) {
    int err = lt_frame_copy(&L->cur, *f, "a frame");
    if (err) return err;
    floats_from_bytes(&L->cur);
    *f = &L->cur;
  }
  return 0;
}

static int copy_prev(lt_loop *L, const lt_frame *f)
{
  if (L->prev_index_only && L->have_prev) { /* the first pair had its pixels */
    L->prev.grey = NULL;
    L->prev.grey8 = NULL;
    L->prev.index = f->index;
    L->prev.t_s = f->t_s;
    return 0;
  }
  int err = lt_frame_copy(&L->prev, f, "the previous frame");
  if (!err) L->have_prev = 1;
  return err;
}

/* A damaged video: one warning (or, with --on-damage error, an error) that
 * says what was seen, and a line in --stats. */
static int damage_check(lt_loop *L, const char *name, int frames, int at_end)
{
  lt_video_damage_info d;
  lt_source_damage(L->src, &d);
  /* exact count from the header, else (with a margin) from its duration */
  int missing = at_end && ((d.declared > 0 && L->decoded < d.declared) ||
                           (d.declared == 0 && d.expected > 0 && L->decoded < 0.9 * d.expected - 1));
  if (missing && d.declared == 0) d.declared = d.expected;
  L->damage = d;
  L->damage_missing = missing ? d.declared - L->decoded : 0;
  if (!d.rejected && !d.concealed && !missing) return 0;
  /* only what was seen: "2 unreadable packets, 3 frames with errors concealed by the
   * decoder, fewer frames than the container announces (13 of 20)" */
  char what[256] = "";
  size_t l = 0;
  if (d.rejected)
    l += snprintf(what + l, sizeof what - l, "%d unreadable packet%s or page%s", d.rejected, d.rejected == 1 ? "" : "s",
                  d.rejected == 1 ? "" : "s");
  if (d.concealed && l < sizeof what)
    l += snprintf(what + l, sizeof what - l, "%s%d frame%s with errors concealed by the decoder", l ? ", " : "",
                  d.concealed, d.concealed == 1 ? "" : "s");
  if (missing && l < sizeof what)
    snprintf(what + l, sizeof what - l, "%sfewer frames than the container announces (%ld of %ld)", l ? ", " : "",
             L->decoded, d.declared);
  if (L->s->damage_error) {
    lt_error("'%s' is damaged: %s (--on-damage error)", name, what);
    return LT_ERR_INPUT;
  }
  lt_warn("'%s' is damaged: %s; results near the damage may be wrong (--on-damage error makes this an error)",
          name, what);
  return 0;
}

static void fmt_eta(char *b, size_t n, double s)
{
  if (s < 0) snprintf(b, n, "?");
  else if (s < 3600) snprintf(b, n, "%d:%02d", (int)s / 60, (int)s % 60);
  else snprintf(b, n, "%d:%02d:%02d", (int)s / 3600, ((int)s / 60) % 60, (int)s % 60);
}

static int print_stats(lt_loop *L, lt_outfile *so, int frames, int steps, double wall, double t_first,
                       double t_last)
{
  FILE *f = so->fp ? so->fp : stderr;
  const char *be = L->st->backend_name ? L->st->backend_name(L->m) : "cpu";
  fprintf(f, "leuktrack stats: backend %s, %d frames, %.3f s, %.1f frames/s\n", be, frames, wall,
          wall > 0 ? frames / wall : 0.0);
  double steady = t_last - t_first;
  if (steps > 1 && steady > 0)
    fprintf(f, "after the first %s (start-up excluded): %.1f %s/s\n", L->st->pairs ? "pair" : "frame",
            (steps - 1) / steady, L->st->pairs ? "pairs" : "frames");
  fprintf(f, "%-14s %10s %12s\n", "stage", "total_s", L->st->pairs ? "ms/pair" : "ms/frame");
  for (int s = 0; s <= L->st->nstages && s <= MAX_STAGES; s++)
    fprintf(f, "%-14s %10.4f %12.4f\n", s == 0 ? "decode (wait)" : L->st->stage_names[s - 1], L->t[s],
            steps ? 1e3 * L->t[s] / steps : 0.0);
  if (L->damage.rejected || L->damage.concealed || L->damage_missing)
    fprintf(f, "decode damage: %d packets rejected, %d frames concealed, %ld declared frames missing\n",
            L->damage.rejected, L->damage.concealed, L->damage_missing);
  if (L->st->stats) L->st->stats(L->m, f, steps);
  return so->fp ? lt_out_commit(so) : 0;
}

int lt_loop_run(const lt_settings *s, const lt_steps *st, void *m)
{
  lt_loop L;
  memset(&L, 0, sizeof L);
  L.s = s;
  L.st = st;
  L.m = m;
  lt_outfile stats_out = {0};
  int begun = 0, frames = 0, steps = 0, err;
  double wall0 = lt_now(), t_first = 0, t_last = 0;

  err = lt_source_open(&L.src, s->inputs, s->ninputs, s->channel, 4);
  if (err) return err;
  lt_debug("input opened at +%.1f ms", lt_since_start_ms());
  lt_source_info in = {lt_source_name(L.src), lt_source_width(L.src), lt_source_height(L.src),
                       s->fps > 0 ? s->fps : lt_source_fps(L.src), lt_source_um_per_px(L.src),
                       lt_source_meta_origin(L.src)};
  const char *fps_from = lt_source_fps_origin(L.src);
  int fps_default = s->fps <= 0 && lt_source_fps_is_default(L.src);
  if (s->fps > 0) lt_info("frame rate %g fps from --fps", in.fps);
  else if (fps_default) lt_info("frame rate %g fps: a default (the input stores none)", in.fps);
  else if (fps_from) lt_info("frame rate %g fps from %s", in.fps, fps_from);
  else lt_info("frame rate unknown (give --fps)");
  if (fps_default)
    lt_warn("'%s': %s; t_s assumes %g fps (give --fps)", in.name,
            lt_source_is_tiff(L.src) ? "the TIFF stack stores no frame interval" : "image files store no frame rate",
            in.fps);
  if (s->stats && s->stats[0] && (err = lt_out_open(&stats_out, s->stats))) goto out;
  if ((err = st->begin(m, &L, &in))) goto out;
  begun = 1;

  int progress = s->progress >= 0 ? s->progress : isatty(2);
  if (s->verbosity < 0) progress = 0;
  long total = lt_source_frames_hint(L.src);
  if (s->frame_end >= 0 && (total <= 0 || total > s->frame_end)) total = s->frame_end;
  total -= s->frame_begin;
  double last_progress = 0;
  int at_end = 0;
  for (;;) {
    if (lt_stop_requested) {
      lt_error("interrupted after %d frames", frames);
      err = LT_ERR_INTERRUPTED;
      goto out;
    }
    const lt_frame *f;
    double t0 = lt_now();
    int got = lt_source_next(L.src, &f);
    L.t[0] += lt_now() - t0;
    if (got < 0) {
      err = got;
      goto out;
    }
    L.decoded += got == 1;
    if (got == 0) {
      at_end = 1;
      break;
    }
    if (f->index < s->frame_begin) continue;
    if (s->frame_end >= 0 && f->index >= s->frame_end) break;
    if (!st->pairs || L.have_prev) {
      if (st->pairs && (err = pair_floats(&L, &f))) goto out;
      if ((err = st->step(m, &L, f, st->pairs ? &L.prev : NULL))) goto out;
      steps++;
      t_last = lt_now();
      if (steps == 1) {
        t_first = t_last;
        lt_debug("first %s done at +%.1f ms", st->pairs ? "pair" : "frame", lt_since_start_ms());
      }
    }
    if (st->pairs && (err = copy_prev(&L, f))) goto out;
    frames++;
    if (progress && lt_now() - last_progress > 0.25) {
      last_progress = lt_now();
      double rate = frames / (last_progress - wall0);
      char extra[96] = "", eta[32] = "?", pos[64];
      if (st->progress) st->progress(m, extra, sizeof extra);
      if (total > 0 && rate > 0) fmt_eta(eta, sizeof eta, (total - frames) / rate);
      if (total > 0)
        snprintf(pos, sizeof pos, "frame %d of %ld (%d%%)", f->index, total + s->frame_begin,
                 (int)(100.0 * frames / total < 100 ? 100.0 * frames / total : 100));
      else snprintf(pos, sizeof pos, "frame %d", f->index);
      fprintf(stderr, "\rleuktrack: %s, %s%s%.1f frames/s, ETA %s ", pos, extra, extra[0] ? ", " : "", rate, eta);
    }
  }
  lt_debug("last %s done at +%.1f ms", st->pairs ? "pair" : "frame", lt_since_start_ms());
  if (progress)
    fprintf(stderr, "\rleuktrack: done: %d frames in %.1f s (%.1f frames/s)%24s\n", frames, lt_now() - wall0,
            frames / (lt_now() - wall0), "");
  if ((err = damage_check(&L, in.name, frames, at_end))) goto out;
  if (frames == 0) {
    char endbuf[16] = "";
    if (s->frame_end >= 0) snprintf(endbuf, sizeof endbuf, "%d", s->frame_end);
    lt_error("'%s': no frames in the range --frames %d:%s (the video has fewer frames)", in.name, s->frame_begin,
             endbuf);
    err = LT_ERR_INPUT;
    goto out;
  }
  if (st->pairs && steps == 0) {
    lt_error("'%s': only one frame%s; this mode works on frame pairs (two frames or more)", in.name,
             s->frame_begin || s->frame_end >= 0 ? " in the range --frames" : "");
    err = LT_ERR_INPUT;
    goto out;
  }
  begun = 0; /* end cleans up after itself */
  if ((err = st->end(m, &L, steps))) goto out;
  lt_debug("the mode's end done at +%.1f ms", lt_since_start_ms());
  if ((err = outputs_commit(&L))) goto out;
  lt_debug("outputs committed at +%.1f ms", lt_since_start_ms());
  if (s->stats) err = print_stats(&L, &stats_out, frames, steps, lt_now() - wall0, t_first, t_last);

out:
  if (begun && st->abort) st->abort(m, &L);
  outputs_abort(&L);
  lt_out_abort(&stats_out, 0);
  lt_frame_release(&L.prev);
  lt_frame_release(&L.cur);
  lt_source_close(L.src);
  return err;
}
