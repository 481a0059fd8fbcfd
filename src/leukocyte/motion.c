/* motion.c - the motion cue of new detections (--motion, issue 15): in
 * intravital video the background (vessel walls, texture, debris) stays
 * where it is while leukocytes roll, so a faint cell that GICOV cannot tell
 * from the texture of the frame stands out in the frame less a background
 * made of earlier frames. The background is the per-pixel (lower) median of
 * the last LT_MOTION_KEYS copies, one kept every `every` frames: a cell that
 * was on a pixel in fewer than half of them is not in it, and a cell being
 * tracked is in none (the pipeline hands its disc to the copy, which holds
 * no value there: a cell that sat still leaves no ghost). Causal: before 3
 * copies are kept there is no background (the pipeline then detects on the
 * frame alone). The difference is made on the host, once, and handed to
 * the backend as a frame (set_frame), so both backends detect on the same
 * bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "motion.h"

int lt_leuk_motion_init(lt_leuk_motion *M, int fw, int fh, int every)
{
  memset(M, 0, sizeof *M);
  M->fw = fw;
  M->fh = fh;
  M->every = every;
  M->all8 = 1;
  if (every <= 0) return 0;
  const size_t n = (size_t)fw * fh;
  int bad = 0;
  for (int k = 0; k < LT_MOTION_KEYS; k++) bad |= !(M->key[k] = malloc(sizeof(float) * n));
  M->diff = malloc(sizeof(float) * n);
  M->diff8 = malloc(n);
  if (bad || !M->diff || !M->diff8) {
    lt_error("out of memory (frame copies of the motion cue)");
    lt_leuk_motion_free(M);
    return LT_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) M->diff[i] = 128.0f;
  for (int k = 0; k < LT_MOTION_KEYS; k++) /* no copy kept yet: no value held */
    for (size_t i = 0; i < n; i++) M->key[k][i] = LT_MOTION_NONE;
  memset(M->diff8, 128, n);
  return 0;
}

void lt_leuk_motion_free(lt_leuk_motion *M)
{
  for (int k = 0; k < LT_MOTION_KEYS; k++) {
    free(M->key[k]);
    M->key[k] = NULL;
  }
  free(M->diff);
  free(M->diff8);
  M->diff = NULL;
  M->diff8 = NULL;
}

void lt_leuk_motion_frame(lt_leuk_motion *M, const float *cur, const unsigned char *cur8)
{
  M->cur = cur;
  M->cur8 = cur8;
}

int lt_leuk_motion_ready(const lt_leuk_motion *M) { return M->every > 0 && M->nkeys >= 3; }

/* Compare-exchange: a <= b after it (the ternaries compile to min/max
 * instructions, so the row loops below vectorise). */
#define CX(a, b)                     \
  do {                               \
    float lo_ = a < b ? a : b;       \
    float hi_ = a < b ? b : a;       \
    a = lo_;                         \
    b = hi_;                         \
  } while (0)

/* The lower median of the values of pixel i of the copies that hold one
 * there (not LT_MOTION_NONE: a tracked cell's disc, or a copy not kept
 * yet), fb when none does: a sorting network (the same order as sorting
 * them; NONE sorts last), then the ((v - 1) / 2)-th of the v values held:
 * the 3rd when all 5 are, the 2nd when 3 or 4 are, else the 1st. */
static inline float lower_median(const lt_leuk_motion *M, size_t i, float fb)
{
  const float N = LT_MOTION_NONE;
  float a = M->key[0][i], b = M->key[1][i], c = M->key[2][i], d = M->key[3][i], e = M->key[4][i];
  CX(a, b);
  CX(d, e);
  CX(c, e);
  CX(c, d);
  CX(b, e);
  CX(a, d);
  CX(a, c);
  CX(b, d);
  CX(b, c);
  return e < N ? c : c < N ? b : a < N ? a : fb;
}

void lt_leuk_motion_diff(lt_leuk_motion *M, const lt_rect *r, const unsigned char **bytes)
{
  const int b8 = M->cur8 && M->all8;
  for (int y = r->y; y < r->y + r->h; y++) {
    const size_t i0 = (size_t)y * M->fw;
    for (int x = r->x; x < r->x + r->w; x++) {
      const size_t i = i0 + x;
      const float p = M->cur8 ? (float)M->cur8[i] : M->cur[i];
      float d = 128.0f + (p - lower_median(M, i, p));
      d = d < 0.0f ? 0.0f : d;
      d = d > 255.0f ? 255.0f : d;
      M->diff[i] = d;
    }
    if (b8)
      for (int x = r->x; x < r->x + r->w; x++) M->diff8[i0 + x] = (unsigned char)M->diff[i0 + x];
  }
  *bytes = b8 ? M->diff8 : NULL;
}

void lt_leuk_motion_keep(lt_leuk_motion *M, const double *disc, int ndisc)
{
  if (M->every <= 0 || M->seen++ % M->every != 0) return;
  const size_t n = (size_t)M->fw * M->fh;
  float *k = M->key[M->next];
  if (M->cur8)
    for (size_t i = 0; i < n; i++) k[i] = M->cur8[i];
  else
    memcpy(k, M->cur, sizeof(float) * n);
  for (int c = 0; c < ndisc; c++) { /* the tracked cells' discs hold no value */
    const double cx = disc[3 * c], cy = disc[3 * c + 1], r = disc[3 * c + 2];
    int x0 = (int)floor(cx - r), x1 = (int)ceil(cx + r), y0 = (int)floor(cy - r), y1 = (int)ceil(cy + r);
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > M->fw - 1 ? M->fw - 1 : x1;
    y1 = y1 > M->fh - 1 ? M->fh - 1 : y1;
    for (int y = y0; y <= y1; y++)
      for (int x = x0; x <= x1; x++)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) k[(size_t)y * M->fw + x] = LT_MOTION_NONE;
  }
  M->is8[M->next] = M->cur8 != NULL;
  M->next = (M->next + 1) % LT_MOTION_KEYS;
  if (M->nkeys < LT_MOTION_KEYS) M->nkeys++;
  M->all8 = 1;
  for (int j = 0; j < M->nkeys; j++) M->all8 &= M->is8[j];
}
