/* image.c - still images in and out.
 *
 * Read: PNG through libpng (1/2/4/8/16-bit grey, grey+alpha, RGB, RGBA,
 * palette; libpng transforms expand palettes and low bit depths and drop
 * alpha) and binary PNM (P5 grey, P6 RGB, maxval 1..65535, two bytes per
 * sample big-endian above 255). The result is one float channel 0..255, row 0
 * = top: for colour images luma = 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601
 * weights on the stored values, no gamma handling) or the chosen channel; for
 * grey images every channel is the grey value. 16-bit samples and PNM maxval
 * are scaled to 0..255. Sizes are checked against the video limits before any
 * pixel buffer is allocated.
 *
 * Write: 8-bit grey or RGB PNG to "<path>.tmp.<pid>", renamed over <path>
 * only when every libpng call, fflush and fclose succeeded; otherwise the
 * temporary is removed. */
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "error.h"
#include "log.h"

static int check_dims(const char *path, long long w, long long h)
{
  if (w < 1 || h < 1 || w > LT_VIDEO_MAX_SIDE || h > LT_VIDEO_MAX_SIDE ||
      w * h > LT_VIDEO_MAX_PIXELS) {
    lt_error("'%s' has unsupported image size %lldx%lld (limits: 1..%d per side, %lld pixels)",
             path, w, h, LT_VIDEO_MAX_SIDE, (long long)LT_VIDEO_MAX_PIXELS);
    return LT_ERR_INPUT;
  }
  return 0;
}

static float luma(float r, float g, float b) { return 0.299f * r + 0.587f * g + 0.114f * b; }

/* Samples (1 or 3 per pixel, already scaled to 0..255) -> one channel. */
static float pick(const float *s, int nch, lt_channel ch)
{
  if (nch == 1) return s[0];
  switch (ch) {
  case LT_CHANNEL_R: return s[0];
  case LT_CHANNEL_G: return s[1];
  case LT_CHANNEL_B: return s[2];
  default: return luma(s[0], s[1], s[2]);
  }
}

/* One row of 8- or 16-bit big-endian samples -> floats 0..255. */
static void row_to_float(const uint8_t *src, int w, int nch, int two_bytes, unsigned maxval,
                         lt_channel ch, float *dst)
{
  for (int x = 0; x < w; x++) {
    float s[3];
    for (int k = 0; k < nch; k++) {
      size_t i = (size_t)x * nch + k;
      unsigned v = two_bytes ? ((unsigned)src[2 * i] << 8) | src[2 * i + 1] : src[i];
      if (v > maxval) v = maxval;
      s[k] = maxval == 255 ? (float)v : (float)((double)v * 255.0 / maxval); /* exact at maxval */
    }
    dst[x] = pick(s, nch, ch);
  }
}

/* ---- PNG read ------------------------------------------------------- */

struct png_err {
  jmp_buf jb;
  char msg[200];
};

static void png_error_fn(png_structp png, png_const_charp msg)
{
  struct png_err *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  longjmp(e->jb, 1);
}

static void png_warn_fn(png_structp png, png_const_charp msg)
{
  (void)png;
  lt_debug("libpng: %s", msg);
}

/* Everything the libpng calls may touch lives here, set before each setjmp
 * and not changed between setjmp and a possible longjmp. */
struct png_rd {
  png_structp png;
  png_infop info;
  uint8_t *buf;
  png_bytep *rows;
  float *out;
};

static int read_png(const char *path, FILE *fp, lt_channel ch, float **px, int *width,
                    int *height)
{
  struct png_err e = {.msg = ""};
  struct png_rd d = {0};
  volatile int ret = LT_ERR_INPUT; /* set after setjmp */
  png_uint_32 w = 0, h = 0;
  int depth = 0, nch = 0;
  size_t rowbytes = 0;

  d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e, png_error_fn, png_warn_fn);
  if (!d.png || !(d.info = png_create_info_struct(d.png))) {
    lt_error("'%s': cannot initialise libpng (out of memory)", path);
    png_destroy_read_struct(d.png ? &d.png : NULL, NULL, NULL);
    return LT_ERR_NOMEM;
  }
  if (setjmp(e.jb)) goto png_fail;
  png_init_io(d.png, fp);
  png_set_sig_bytes(d.png, 8);
  png_set_user_limits(d.png, LT_VIDEO_MAX_SIDE, LT_VIDEO_MAX_SIDE);
  png_read_info(d.png, d.info);
  int color, interlace;
  png_get_IHDR(d.png, d.info, &w, &h, &depth, &color, &interlace, NULL, NULL);
  if (check_dims(path, w, h) < 0) goto done;
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(d.png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(d.png);
  png_set_strip_alpha(d.png);
  png_set_interlace_handling(d.png);
  png_read_update_info(d.png, d.info);
  nch = png_get_channels(d.png, d.info);
  depth = png_get_bit_depth(d.png, d.info);
  rowbytes = png_get_rowbytes(d.png, d.info);
  if ((nch != 1 && nch != 3) || (depth != 8 && depth != 16) ||
      rowbytes < (size_t)w * nch * (depth / 8)) {
    lt_error("'%s': unsupported PNG layout (%d channels, %d bits)", path, nch, depth);
    ret = LT_ERR_INPUT;
    goto done;
  }

  d.buf = malloc(rowbytes * h);
  d.rows = malloc(h * sizeof *d.rows);
  d.out = malloc((size_t)w * h * sizeof(float));
  if (!d.buf || !d.rows || !d.out) {
    lt_error("'%s': out of memory for a %ux%u image", path, (unsigned)w, (unsigned)h);
    ret = LT_ERR_NOMEM;
    goto done;
  }
  for (png_uint_32 y = 0; y < h; y++) d.rows[y] = d.buf + (size_t)y * rowbytes;
  if (setjmp(e.jb)) goto png_fail;
  png_read_image(d.png, d.rows);
  png_read_end(d.png, NULL);

  for (png_uint_32 y = 0; y < h; y++)
    row_to_float(d.rows[y], (int)w, nch, depth == 16, depth == 16 ? 65535 : 255, ch,
                 d.out + (size_t)y * w);
  *px = d.out;
  d.out = NULL;
  *width = (int)w;
  *height = (int)h;
  ret = 0;
  goto done;

png_fail:
  lt_error("'%s' is not a valid PNG file: %s", path, e.msg[0] ? e.msg : "read error");
  ret = LT_ERR_INPUT;
done:
  png_destroy_read_struct(&d.png, &d.info, NULL);
  free(d.buf);
  free(d.rows);
  free(d.out);
  return ret;
}

/* ---- PNM read ------------------------------------------------------- */

/* Skips whitespace and # comments, then reads a decimal number (< 1e9). */
static int pnm_number(FILE *fp, long *out)
{
  int c = fgetc(fp);
  for (;;) {
    if (c == '#') {
      while (c != '\n' && c != '\r' && c != EOF) c = fgetc(fp);
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      c = fgetc(fp);
    } else {
      break;
    }
  }
  if (c < '0' || c > '9') return -1;
  long v = 0;
  while (c >= '0' && c <= '9') {
    v = v * 10 + (c - '0');
    if (v > 999999999L) return -1;
    c = fgetc(fp);
  }
  /* Exactly one whitespace character ends the number (and the header). */
  if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') return -1;
  *out = v;
  return 0;
}

static int read_pnm(const char *path, FILE *fp, int nch, lt_channel ch, float **px, int *width,
                    int *height)
{
  long w, h, maxval;
  if (pnm_number(fp, &w) < 0 || pnm_number(fp, &h) < 0 || pnm_number(fp, &maxval) < 0) {
    lt_error("'%s': malformed %s header (expected width, height and maxval)", path,
             nch == 1 ? "PGM" : "PPM");
    return LT_ERR_INPUT;
  }
  if (check_dims(path, w, h) < 0) return LT_ERR_INPUT;
  if (maxval < 1 || maxval > 65535) {
    lt_error("'%s': maxval %ld is outside 1..65535", path, maxval);
    return LT_ERR_INPUT;
  }
  int two = maxval > 255;
  size_t rowbytes = (size_t)w * nch * (two ? 2 : 1);
  uint8_t *row = malloc(rowbytes);
  float *out = malloc((size_t)w * (size_t)h * sizeof(float));
  if (!row || !out) {
    free(row);
    free(out);
    lt_error("'%s': out of memory for a %ldx%ld image", path, w, h);
    return LT_ERR_NOMEM;
  }
  for (long y = 0; y < h; y++) {
    if (fread(row, 1, rowbytes, fp) != rowbytes) {
      lt_error("'%s' is truncated: pixel data ends in row %ld of %ld", path, y, h);
      free(row);
      free(out);
      return LT_ERR_INPUT;
    }
    row_to_float(row, (int)w, nch, two, (unsigned)maxval, ch, out + (size_t)y * w);
  }
  free(row);
  *px = out;
  *width = (int)w;
  *height = (int)h;
  return 0;
}

int lt_image_read(const char *path, lt_channel channel, float **px, int *width, int *height)
{
  *px = NULL;
  *width = *height = 0;
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    lt_error("cannot open '%s': %s", path, strerror(errno));
    return LT_ERR_INPUT;
  }
  uint8_t sig[8];
  size_t n = fread(sig, 1, sizeof sig, fp);
  int r;
  if (n == 8 && png_sig_cmp(sig, 0, 8) == 0) {
    r = read_png(path, fp, channel, px, width, height);
  } else if (n >= 3 && sig[0] == 'P' && (sig[1] == '5' || sig[1] == '6')) {
    if (fseek(fp, 2, SEEK_SET) != 0) {
      lt_error("cannot read '%s': %s", path, strerror(errno));
      r = LT_ERR_INPUT;
    } else {
      r = read_pnm(path, fp, sig[1] == '5' ? 1 : 3, channel, px, width, height);
    }
  } else {
    lt_error("'%s' is not a PNG, binary PGM (P5) or binary PPM (P6) image", path);
    r = LT_ERR_INPUT;
  }
  fclose(fp); /* read-only: nothing to lose */
  return r;
}

/* ---- PNG write ------------------------------------------------------ */

/* nch 1 grey, 3 RGB; with pal (npal RGB triples) px holds palette indices. */
static int png_write(const char *path, const uint8_t *px, int width, int height, int nch, const uint8_t *pal,
                     int npal)
{
  if (width < 1 || height < 1 || !px) {
    lt_error("cannot write '%s': empty image (%dx%d)", path, width, height);
    return LT_ERR_INTERNAL;
  }
  size_t len = strlen(path) + 32;
  char *tmp = malloc(len);
  if (!tmp) {
    lt_error("cannot write '%s': out of memory", path);
    return LT_ERR_NOMEM;
  }
  snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
  FILE *fp = fopen(tmp, "wb");
  if (!fp) {
    lt_error("cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    return LT_ERR_OUTPUT;
  }

  struct png_err e = {.msg = ""};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, png_error_fn, png_warn_fn);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  volatile int ok = 0; /* read after a possible longjmp */
  const char *why = "out of memory";
  if (png && info) {
    if (setjmp(e.jb)) {
      why = e.msg[0] ? e.msg : "libpng error";
    } else {
      png_init_io(png, fp);
      /* Overlays are written every frame: favour speed over the last few %. */
      png_set_compression_level(png, 3);
      png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                   pal ? PNG_COLOR_TYPE_PALETTE : nch == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                   PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
      if (pal) {
        png_color c[256];
        for (int i = 0; i < npal; i++) c[i] = (png_color){pal[3 * i], pal[3 * i + 1], pal[3 * i + 2]};
        png_set_PLTE(png, info, c, npal);
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE); /* what libpng advises for palettes */
      } else {
        /* One filter (Sub) instead of libpng's per-row choice among all
         * five: the choice filters every row five times. An 800x500 plot
         * 6.3 -> 2.6 ms (+36 % bytes, flat colours), a 640x480 grey frame
         * 8.1 -> 5.7 ms (+2 %), RGB 19.3 -> 14.1 ms (+3 %) (dev VM,
         * docs/PERFORMANCE.md): the velocity plot is written at each
         * video's end, on the way to the next video of a batch. */
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
      }
      png_write_info(png, info);
      size_t stride = (size_t)width * nch;
      for (int y = 0; y < height; y++) png_write_row(png, (png_const_bytep)(px + (size_t)y * stride));
      png_write_end(png, NULL);
      ok = 1;
    }
  }
  png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);

  int saved = 0;
  if (ok && (fflush(fp) != 0 || ferror(fp))) {
    ok = 0;
    saved = errno;
  }
  if (fclose(fp) != 0 && ok) {
    ok = 0;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = 0;
    saved = errno;
  }
  if (!ok) {
    lt_error("cannot write '%s': %s", path, saved ? strerror(saved) : why);
    remove(tmp);
    free(tmp);
    return LT_ERR_OUTPUT;
  }
  free(tmp);
  return 0;
}

int lt_png_write_grey(const char *path, const uint8_t *px, int width, int height)
{
  return png_write(path, px, width, height, 1, NULL, 0);
}

int lt_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height)
{
  return png_write(path, rgb, width, height, 3, NULL, 0);
}

int lt_png_write_palette(const char *path, const uint8_t *idx, int width, int height, const uint8_t *pal, int npal)
{
  if (npal < 1 || npal > 256 || !pal) {
    lt_error("cannot write '%s': a palette of %d colours", path, npal);
    return LT_ERR_INTERNAL;
  }
  return png_write(path, idx, width, height, 1, pal, npal);
}
