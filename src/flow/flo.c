/* flo.c - Middlebury .flo read/write and the AEE/AAE flow error measures;
 * see flo.h. Bytes are decoded explicitly as little-endian, so the code
 * does not depend on the host's byte order. The reader checks the whole
 * file size against the header before allocating anything. */
#include "flow/flo.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "outfile.h"

static uint32_t get_le32(const unsigned char *b)
{
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put_le32(unsigned char *b, uint32_t x)
{
  b[0] = (unsigned char)x;
  b[1] = (unsigned char)(x >> 8);
  b[2] = (unsigned char)(x >> 16);
  b[3] = (unsigned char)(x >> 24);
}

static float f32_of(uint32_t x)
{
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static uint32_t bits_of(float f)
{
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

/* Reads the header and checks the file size; 0 or LT_ERR_INPUT. */
static int read_header(FILE *fp, const char *path, int *w, int *h)
{
  unsigned char hd[12];
  struct stat st;
  if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
    lt_error("cannot read '%s': not a regular file", path);
    return LT_ERR_INPUT;
  }
  if (fread(hd, 1, sizeof hd, fp) != sizeof hd) {
    lt_error("'%s' is not a .flo file: shorter than the 12-byte header", path);
    return LT_ERR_INPUT;
  }
  if (memcmp(hd, "PIEH", 4) != 0) {
    lt_error("'%s' is not a .flo file: tag is not PIEH", path);
    return LT_ERR_INPUT;
  }
  int32_t iw = (int32_t)get_le32(hd + 4), ih = (int32_t)get_le32(hd + 8);
  if (iw < 1 || ih < 1 || (long long)iw * ih > LT_FLO_MAX_PIXELS) {
    lt_error("'%s': bad .flo size %ldx%ld (1 to %lld pixels)", path, (long)iw, (long)ih,
             (long long)LT_FLO_MAX_PIXELS);
    return LT_ERR_INPUT;
  }
  long long want = 12 + 8LL * iw * ih;
  if ((long long)st.st_size < want) {
    lt_error("'%s' is truncated: %lld bytes, a %dx%d .flo needs %lld", path, (long long)st.st_size, iw, ih,
             want);
    return LT_ERR_INPUT;
  }
  if ((long long)st.st_size > want) {
    lt_error("'%s': %lld bytes of trailing data after a %dx%d .flo", path, (long long)st.st_size - want, iw, ih);
    return LT_ERR_INPUT;
  }
  *w = iw;
  *h = ih;
  return 0;
}

int lt_flo_read(const char *path, float **u, float **v, int *w, int *h)
{
  *u = *v = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    lt_error("cannot open '%s': %s", path, strerror(errno));
    return LT_ERR_INPUT;
  }
  int iw, ih, r = read_header(fp, path, &iw, &ih);
  if (r) {
    fclose(fp);
    return r;
  }
  size_t n = (size_t)iw * ih;
  float *pu = malloc(n * sizeof *pu), *pv = malloc(n * sizeof *pv);
  if (!pu || !pv) {
    lt_error("'%s': out of memory for a %dx%d flow", path, iw, ih);
    r = LT_ERR_NOMEM;
    goto fail;
  }
  unsigned char buf[8 * 1024];
  for (size_t i = 0; i < n;) {
    size_t k = n - i < sizeof buf / 8 ? n - i : sizeof buf / 8;
    if (fread(buf, 8, k, fp) != k) {
      lt_error("'%s': read error or file changed while reading", path);
      r = LT_ERR_INPUT;
      goto fail;
    }
    for (size_t j = 0; j < k; j++, i++) {
      pu[i] = f32_of(get_le32(buf + 8 * j));
      pv[i] = f32_of(get_le32(buf + 8 * j + 4));
    }
  }
  fclose(fp);
  *u = pu;
  *v = pv;
  *w = iw;
  *h = ih;
  return 0;
fail:
  free(pu);
  free(pv);
  fclose(fp);
  return r;
}

void lt_flo_pack(unsigned char *out, const float *u, const float *v, int w, int h)
{
  memcpy(out, "PIEH", 4);
  put_le32(out + 4, (uint32_t)w);
  put_le32(out + 8, (uint32_t)h);
  unsigned char *b = out + 12;
  const size_t n = (size_t)w * h;
  for (size_t i = 0; i < n; i++, b += 8) {
    put_le32(b, bits_of(u[i]));
    put_le32(b + 4, bits_of(v[i]));
  }
}

static int bad_size(const char *path, int w, int h)
{
  if (w < 1 || h < 1 || (long long)w * h > LT_FLO_MAX_PIXELS) {
    lt_error("cannot write '%s': bad flow size %dx%d", path, w, h);
    return LT_ERR_USAGE;
  }
  return 0;
}

/* One packed file in one fwrite, atomically (outfile.h). */
static int write_packed(const char *path, const unsigned char *b, size_t bytes)
{
  lt_outfile o;
  int r = lt_out_open(&o, path);
  if (r) return r;
  fwrite(b, 1, bytes, o.fp);
  if ((r = lt_out_check(&o)) != 0) {
    lt_out_abort(&o, 0);
    return r;
  }
  return lt_out_commit(&o);
}

int lt_flo_write(const char *path, const float *u, const float *v, int w, int h)
{
  int r = bad_size(path, w, h);
  if (r) return r;
  const size_t bytes = 12 + 8 * (size_t)w * h;
  unsigned char *b = malloc(bytes);
  if (!b) {
    lt_error("cannot write '%s': out of memory (%zu MB)", path, bytes >> 20);
    return LT_ERR_NOMEM;
  }
  lt_flo_pack(b, u, v, w, h);
  r = write_packed(path, b, bytes);
  free(b);
  return r;
}

/* ---- background writer ---- */

typedef struct slot {
  unsigned char *bytes;
  char *path;
  int state; /* 0 free, 1 queued, 2 being written */
  long seq;  /* queue order */
} slot;

struct lt_flo_writer {
  pthread_mutex_t mu;
  pthread_cond_t work, room;
  pthread_t th[LT_FLO_WRITER_MAX_THREADS];
  int nth, nslot, w, h, stop, err;
  size_t bytes, pathmax;
  long seq;
  slot *s;
};

static void *writer_main(void *arg)
{
  lt_flo_writer *wr = arg;
  pthread_mutex_lock(&wr->mu);
  for (;;) {
    slot *next = NULL;
    for (int i = 0; i < wr->nslot; i++)
      if (wr->s[i].state == 1 && (!next || wr->s[i].seq < next->seq)) next = &wr->s[i];
    if (!next) {
      if (wr->stop) break;
      pthread_cond_wait(&wr->work, &wr->mu);
      continue;
    }
    next->state = 2;
    pthread_mutex_unlock(&wr->mu);
    int r = write_packed(next->path, next->bytes, wr->bytes);
    pthread_mutex_lock(&wr->mu);
    if (r && !wr->err) wr->err = r;
    next->state = 0;
    pthread_cond_signal(&wr->room);
  }
  pthread_mutex_unlock(&wr->mu);
  return NULL;
}

static void writer_free(lt_flo_writer *wr)
{
  for (int i = 0; wr->s && i < wr->nslot; i++) free(wr->s[i].bytes), free(wr->s[i].path);
  free(wr->s);
  pthread_mutex_destroy(&wr->mu);
  pthread_cond_destroy(&wr->work);
  pthread_cond_destroy(&wr->room);
  free(wr);
}

int lt_flo_writer_start(lt_flo_writer **out, int w, int h, int threads, size_t pathmax)
{
  *out = NULL;
  int r = bad_size("(writer)", w, h);
  if (r) return r;
  lt_flo_writer *wr = calloc(1, sizeof *wr);
  if (!wr) return LT_ERR_NOMEM;
  pthread_mutex_init(&wr->mu, NULL);
  pthread_cond_init(&wr->work, NULL);
  pthread_cond_init(&wr->room, NULL);
  wr->w = w, wr->h = h;
  wr->bytes = 12 + 8 * (size_t)w * h;
  wr->pathmax = pathmax;
  wr->nth = threads < 1 ? 1 : threads > LT_FLO_WRITER_MAX_THREADS ? LT_FLO_WRITER_MAX_THREADS : threads;
  /* two files in hand per thread, at most LT_FLO_WRITER_MAX_BYTES of them (at least 2) */
  wr->nslot = 2 * wr->nth;
  while (wr->nslot > 2 && (size_t)wr->nslot * wr->bytes > LT_FLO_WRITER_MAX_BYTES) wr->nslot--;
  wr->s = calloc((size_t)wr->nslot, sizeof *wr->s);
  r = wr->s ? 0 : LT_ERR_NOMEM;
  for (int i = 0; !r && i < wr->nslot; i++)
    if (!(wr->s[i].bytes = malloc(wr->bytes)) || !(wr->s[i].path = malloc(pathmax))) r = LT_ERR_NOMEM;
  if (r) {
    lt_error("out of memory for the .flo writer (%d x %zu MB)", wr->nslot, wr->bytes >> 20);
    writer_free(wr);
    return r;
  }
  for (int i = 0; i < wr->nth; i++)
    if (pthread_create(&wr->th[i], NULL, writer_main, wr) != 0) {
      lt_error("cannot start the .flo writer thread");
      wr->nth = i;
      lt_flo_writer_finish(wr);
      return LT_ERR_INTERNAL;
    }
  *out = wr;
  return 0;
}

int lt_flo_writer_put(lt_flo_writer *wr, const char *path, const float *u, const float *v)
{
  if (strlen(path) >= wr->pathmax) {
    lt_error("internal: .flo path '%s' too long for the writer", path);
    return LT_ERR_INTERNAL;
  }
  pthread_mutex_lock(&wr->mu);
  slot *free_slot = NULL;
  while (!wr->err) {
    for (int i = 0; i < wr->nslot && !free_slot; i++)
      if (wr->s[i].state == 0) free_slot = &wr->s[i];
    if (free_slot) break;
    pthread_cond_wait(&wr->room, &wr->mu);
  }
  int r = wr->err;
  pthread_mutex_unlock(&wr->mu);
  if (r) return r;
  /* the slot is ours until it is queued: pack outside the lock */
  lt_flo_pack(free_slot->bytes, u, v, wr->w, wr->h);
  strcpy(free_slot->path, path);
  pthread_mutex_lock(&wr->mu);
  free_slot->state = 1;
  free_slot->seq = wr->seq++;
  pthread_cond_signal(&wr->work);
  pthread_mutex_unlock(&wr->mu);
  return 0;
}

int lt_flo_writer_finish(lt_flo_writer *wr)
{
  if (!wr) return 0;
  pthread_mutex_lock(&wr->mu);
  wr->stop = 1;
  pthread_cond_broadcast(&wr->work);
  pthread_mutex_unlock(&wr->mu);
  for (int i = 0; i < wr->nth; i++) pthread_join(wr->th[i], NULL);
  int r = wr->err;
  writer_free(wr);
  return r;
}

int lt_flow_evaluate(const float *u, const float *v, const float *gu, const float *gv, const float *mask, int w,
                     int h, const char *gt_name, lt_flow_error *out)
{
  memset(out, 0, sizeof *out);
  const size_t n = (size_t)w * h;
  double se = 0, sa = 0;
  long long cnt = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(gu[i]) || isnan(gv[i])) {
      lt_error("ground truth '%s' holds NaN at pixel (%zu, %zu)", gt_name, i % (size_t)w, i / (size_t)w);
      return LT_ERR_INPUT;
    }
    if ((mask && mask[i] == 0.0f) || fabsf(gu[i]) > LT_FLO_UNKNOWN || fabsf(gv[i]) > LT_FLO_UNKNOWN) continue;
    if (!isfinite(u[i]) || !isfinite(v[i])) {
      lt_error("flow estimate is not finite at pixel (%zu, %zu)", i % (size_t)w, i / (size_t)w);
      return LT_ERR_INTERNAL;
    }
    double du = (double)u[i] - gu[i], dv = (double)v[i] - gv[i];
    se += sqrt(du * du + dv * dv);
    double dot = (double)u[i] * gu[i] + (double)v[i] * gv[i] + 1.0;
    double nn = sqrt(((double)u[i] * u[i] + (double)v[i] * v[i] + 1.0) * ((double)gu[i] * gu[i] + (double)gv[i] * gv[i] + 1.0));
    double c = dot / nn;
    if (c > 1.0) c = 1.0;
    if (c < -1.0) c = -1.0;
    sa += acos(c);
    cnt++;
  }
  if (cnt == 0) {
    lt_error("ground truth '%s': no pixel with known flow inside the mask", gt_name);
    return LT_ERR_INPUT;
  }
  out->aee = se / cnt;
  out->aae = sa / cnt * (180.0 / M_PI);
  out->n = cnt;
  return 0;
}
