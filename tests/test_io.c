/* test_io.c - video decode, image read/write and drawing against independent
 * references: the raw bytes of the Rodinia AVI (pal8, stored bottom-up), the
 * PNG frames the mesentery AVI was made from, PNGs written with libpng
 * directly, hand-written PGM/PPM files, an FFV1/Matroska video encoded here
 * with libavcodec, and hand-checkable drawings. Data: $LT_DATA, else
 * ../shared/data relative to the repository root; checks that need it are
 * skipped with a reason when it is missing. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "draw.h"
#include "plot.h"
#include "error.h"
#include "image.h"
#include "log.h"
#include "test.h"
#include "video.h"

static char g_tmp[64];

static const char *data_dir(void)
{
  const char *d = getenv("LT_DATA");
  return d && d[0] ? d : "../shared/data";
}

static void join(char *out, size_t n, const char *a, const char *b) { snprintf(out, n, "%s/%s", a, b); }

static int exists(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0;
}

/* Whole file into memory; NULL on failure. */
static uint8_t *slurp(const char *path, size_t *len)
{
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  uint8_t *buf = NULL;
  if (fseek(fp, 0, SEEK_END) == 0) {
    long n = ftell(fp);
    if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
      if (fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
      } else {
        *len = (size_t)n;
      }
    }
  }
  fclose(fp);
  return buf;
}

static int spit(const char *path, const void *buf, size_t len)
{
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  size_t w = fwrite(buf, 1, len, fp);
  return (fclose(fp) == 0 && w == len) ? 0 : -1;
}

/* ---- video ---------------------------------------------------------- */

static void test_rodinia(void)
{
  const char *name = "video rodinia pal8 bottom-up == raw AVI bytes flipped";
  char path[512];
  join(path, sizeof path, data_dir(), "leukocyte/rodinia_testfile_1frame.avi");
  if (!exists(path)) {
    T_SKIP(name, "data not found (set LT_DATA)");
    return;
  }
  size_t len = 0;
  uint8_t *raw = slurp(path, &len);
  const uint8_t *chunk = NULL;
  for (size_t i = 0; raw && i + 8 + 307200 <= len; i++)
    if (memcmp(raw + i, "00dc", 4) == 0 && raw[i + 4] == 0x00 && raw[i + 5] == 0xB0 &&
        raw[i + 6] == 0x04 && raw[i + 7] == 0x00) {
      chunk = raw + i + 8;
      break;
    }
  T_CHECK("rodinia raw frame chunk found", chunk != NULL, "no '00dc' chunk of 307200 bytes");
  lt_video *v = NULL;
  int r = lt_video_open(&v, path, LT_CHANNEL_LUMA, 3);
  T_CHECK("rodinia open", r == 0, "lt_video_open returned %d", r);
  if (r == 0 && chunk) {
    T_CHECK("rodinia size 640x480", lt_video_width(v) == 640 && lt_video_height(v) == 480,
            "got %dx%d", lt_video_width(v), lt_video_height(v));
    const lt_frame *f = NULL;
    r = lt_video_next(v, &f);
    T_CHECK("rodinia first frame", r == 1 && f && f->index == 0, "next returned %d", r);
    if (r == 1) {
      long bad = 0, first = -1;
      for (int y = 0; y < 480; y++)
        for (int x = 0; x < 640; x++)
          if (f->grey[y * 640 + x] != (float)chunk[(479 - y) * 640 + x]) {
            if (first < 0) first = y * 640 + x;
            bad++;
          }
      T_CHECK(name, bad == 0, "%ld of 307200 pixels differ, first at %ld", bad, first);
      T_CHECK("rodinia t_s of frame 0 == 0", f->t_s == 0.0, "t_s %g", f->t_s);
      long bad8 = 0;
      for (int y = 0; f->grey8 && y < 480; y++)
        for (int x = 0; x < 640; x++) bad8 += f->grey8[y * 640 + x] != chunk[(479 - y) * 640 + x];
      T_CHECK("rodinia 8-bit copy of the frame (grey8) equals the raw bytes", f->grey8 && bad8 == 0,
              "grey8 %s, %ld differ", f->grey8 ? "set" : "NULL", bad8);
    }
    r = lt_video_next(v, &f);
    T_CHECK("rodinia has exactly 1 frame", r == 0 && f == NULL, "second next returned %d", r);
    r = lt_video_next(v, &f);
    T_CHECK("rodinia next after end stays 0", r == 0, "returned %d", r);
  }
  lt_video_close(v);
  free(raw);
}

/* The 20 PNG frames' green channel; NULL if any is missing. */
static float **mesentery_refs(const char *dir, int *w, int *h)
{
  float **ref = calloc(20, sizeof *ref);
  for (int i = 0; ref && i < 20; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/leukocyte/mesentery_flowcatchR/MeseData_frame_%03d.png", dir, i + 1);
    if (lt_image_read(p, LT_CHANNEL_G, &ref[i], w, h) != 0) {
      for (int k = 0; k < 20; k++) free(ref[k]);
      free(ref);
      return NULL;
    }
  }
  return ref;
}

static void free_refs(float **ref)
{
  if (!ref) return;
  for (int k = 0; k < 20; k++) free(ref[k]);
  free(ref);
}

/* Decodes path and compares each frame with ref; returns the frame count or
 * -1 - (frame index) on the first mismatch, or the lt_err from next. */
static int decode_compare(const char *path, float **ref, int ring, lt_channel ch, int *last_r,
                          double *t5)
{
  lt_video *v = NULL;
  if (lt_video_open(&v, path, ch, ring) != 0) return -1000;
  const lt_frame *f;
  int n = 0, r;
  while ((r = lt_video_next(v, &f)) == 1) {
    if (f->index != n || n >= 20 || f->width != 271 || f->height != 131 ||
        memcmp(f->grey, ref[n], 271 * 131 * sizeof(float)) != 0) {
      lt_video_close(v);
      return -1 - n;
    }
    if (n == 5 && t5) *t5 = f->t_s;
    n++;
  }
  *last_r = r;
  lt_video_close(v);
  return n;
}

static void test_mesentery(void)
{
  char path[512];
  join(path, sizeof path, data_dir(), "leukocyte/mesentery_green_gray8_rawvideo.avi");
  int w = 0, h = 0;
  float **ref = exists(path) ? mesentery_refs(data_dir(), &w, &h) : NULL;
  if (!ref) {
    T_SKIP("video mesentery", "data not found (set LT_DATA)");
    return;
  }
  T_CHECK("mesentery PNG 271x131", w == 271 && h == 131, "got %dx%d", w, h);

  lt_video *v = NULL;
  int r = lt_video_open(&v, path, LT_CHANNEL_G, 4);
  T_CHECK("mesentery open", r == 0, "returned %d", r);
  if (r == 0) {
    T_CHECK("mesentery size", lt_video_width(v) == 271 && lt_video_height(v) == 131, "%dx%d",
            lt_video_width(v), lt_video_height(v));
    T_NEAR("mesentery fps == 10", lt_video_fps(v), 10.0, 1e-9, 0);
  }
  lt_video_close(v);

  for (int ring = 2; ring <= 5; ring += 3) {
    int last = 99;
    double t5 = -1;
    int n = decode_compare(path, ref, ring, LT_CHANNEL_G, &last, &t5);
    char name[128];
    snprintf(name, sizeof name, "mesentery ring %d: 20 frames == PNG green, then end", ring);
    T_CHECK(name, n == 20 && last == 0, "decoded %d (negative = mismatch at frame -n-1), last %d",
            n, last);
    if (ring == 2) T_NEAR("mesentery t_s of frame 5 == 0.5", t5, 0.5, 1e-12, 0);
  }
  /* A grey video gives the grey value whatever channel is asked. */
  int last = 99;
  int n = decode_compare(path, ref, 3, LT_CHANNEL_LUMA, &last, NULL);
  T_CHECK("mesentery luma == green for grey video", n == 20 && last == 0, "got %d", n);

  /* Close mid-stream while the decode thread is blocked on a full ring. */
  r = lt_video_open(&v, path, LT_CHANNEL_LUMA, 2);
  const lt_frame *f = NULL;
  if (r == 0) {
    r = lt_video_next(v, &f);
    usleep(20000);
  }
  lt_video_close(v);
  T_CHECK("mesentery close mid-stream", r == 1, "returned %d", r);

  /* Truncated in the middle of frame 10: ends cleanly after the complete ones. */
  size_t len = 0;
  uint8_t *raw = slurp(path, &len);
  const uint8_t *first = NULL;
  for (size_t i = 0; raw && i + 8 < len; i++)
    if (memcmp(raw + i, "00db", 4) == 0 || memcmp(raw + i, "00dc", 4) == 0) {
      uint32_t sz = raw[i + 4] | raw[i + 5] << 8 | raw[i + 6] << 16 | (uint32_t)raw[i + 7] << 24;
      if (sz == 271u * 131u) {
        first = raw + i;
        break;
      }
    }
  if (first) {
    /* Chunks are 8 + 35501 bytes, padded to even. */
    size_t chunk = 8 + 271 * 131 + ((271 * 131) & 1);
    size_t cut = (size_t)(first - raw) + 10 * chunk + 8 + 1000;
    char tpath[512];
    join(tpath, sizeof tpath, g_tmp, "truncated.avi");
    spit(tpath, raw, cut < len ? cut : len);
    last = 99;
    n = decode_compare(tpath, ref, 3, LT_CHANNEL_G, &last, NULL);
    T_CHECK("truncated AVI: 10 good frames, then a clean end", n == 10 && last == 0,
            "decoded %d, last %d", n, last);
  } else {
    T_SKIP("truncated AVI", "no frame chunk found in the AVI");
  }
  free(raw);
  free_refs(ref);
}

static void test_video_errors(void)
{
  char p[512];
  lt_video *v = (lt_video *)&v;
  int r = lt_video_open(&v, "/nonexistent/x.avi", LT_CHANNEL_LUMA, 3);
  T_CHECK("video missing file -> LT_ERR_INPUT", r == LT_ERR_INPUT && v == NULL, "got %d", r);

  join(p, sizeof p, g_tmp, "text.avi");
  const char *txt = "this is not a video, just some text\nsecond line\n";
  spit(p, txt, strlen(txt));
  r = lt_video_open(&v, p, LT_CHANNEL_LUMA, 3);
  T_CHECK("video text file .avi -> LT_ERR_INPUT", r == LT_ERR_INPUT && v == NULL, "got %d", r);

  join(p, sizeof p, g_tmp, "empty.avi");
  spit(p, "", 0);
  r = lt_video_open(&v, p, LT_CHANNEL_LUMA, 3);
  T_CHECK("video empty file -> LT_ERR_INPUT", r == LT_ERR_INPUT, "got %d", r);

  /* A PNG image is a video of one frame through image2; a PGM too. A WAV has no video. */
  static const uint8_t wav[44 + 8] = {'R', 'I', 'F', 'F', 44, 0, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm',
                                      't', ' ', 16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1F, 0, 0, 0x80,
                                      0x3E, 0, 0, 2, 0, 16, 0, 'd', 'a', 't', 'a', 8, 0, 0, 0};
  join(p, sizeof p, g_tmp, "sound.wav");
  spit(p, wav, sizeof wav);
  r = lt_video_open(&v, p, LT_CHANNEL_LUMA, 3);
  T_CHECK("video audio-only file -> LT_ERR_INPUT", r == LT_ERR_INPUT, "got %d", r);
  lt_video_close(NULL);
  T_PASS("lt_video_close(NULL)");
}

/* Encodes n frames of w x h grey with FFV1 into Matroska at 25 fps. */
static int write_ffv1(const char *path, int w, int h, int n, uint8_t **frames)
{
  const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_FFV1);
  if (!codec) return 1;
  AVFormatContext *oc = NULL;
  AVCodecContext *enc = NULL;
  AVFrame *fr = av_frame_alloc();
  AVPacket *pkt = av_packet_alloc();
  int ret = -1;
  if (!fr || !pkt || avformat_alloc_output_context2(&oc, NULL, "matroska", path) < 0) goto out;
  AVStream *st = avformat_new_stream(oc, NULL);
  enc = avcodec_alloc_context3(codec);
  if (!st || !enc) goto out;
  enc->width = w;
  enc->height = h;
  enc->pix_fmt = AV_PIX_FMT_GRAY8;
  enc->time_base = (AVRational){1, 25};
  st->time_base = enc->time_base;
  st->avg_frame_rate = (AVRational){25, 1};
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (avcodec_open2(enc, codec, NULL) < 0) goto out;
  if (avcodec_parameters_from_context(st->codecpar, enc) < 0) goto out;
  if (avio_open(&oc->pb, path, AVIO_FLAG_WRITE) < 0) goto out;
  if (avformat_write_header(oc, NULL) < 0) goto out;
  fr->width = w;
  fr->height = h;
  fr->format = AV_PIX_FMT_GRAY8;
  if (av_frame_get_buffer(fr, 0) < 0) goto out;
  for (int i = 0; i <= n; i++) {
    int s;
    if (i < n) {
      if (av_frame_make_writable(fr) < 0) goto out;
      for (int y = 0; y < h; y++) memcpy(fr->data[0] + y * fr->linesize[0], frames[i] + y * w, w);
      fr->pts = i;
      s = avcodec_send_frame(enc, fr);
    } else {
      s = avcodec_send_frame(enc, NULL);
    }
    if (s < 0) goto out;
    while ((s = avcodec_receive_packet(enc, pkt)) == 0) {
      av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
      pkt->stream_index = st->index;
      if (av_interleaved_write_frame(oc, pkt) < 0) goto out;
    }
    if (s != AVERROR(EAGAIN) && s != AVERROR_EOF) goto out;
  }
  if (av_write_trailer(oc) < 0) goto out;
  ret = 0;
out:
  if (oc && oc->pb) avio_closep(&oc->pb);
  avformat_free_context(oc);
  avcodec_free_context(&enc);
  av_frame_free(&fr);
  av_packet_free(&pkt);
  return ret;
}

static void test_ffv1_mkv(void)
{
  enum { W = 37, H = 23, N = 6 };
  uint8_t *frames[N];
  for (int i = 0; i < N; i++) {
    frames[i] = malloc(W * H);
    for (int k = 0; frames[i] && k < W * H; k++) frames[i][k] = (uint8_t)((k * 7 + i * 31) & 255);
  }
  char p[512];
  join(p, sizeof p, g_tmp, "ffv1.mkv");
  int r = write_ffv1(p, W, H, N, frames);
  if (r != 0) {
    T_SKIP("video FFV1 mkv", r > 0 ? "no FFV1 encoder" : "encoding the test video failed");
  } else {
    lt_video *v = NULL;
    r = lt_video_open(&v, p, LT_CHANNEL_LUMA, 2);
    T_CHECK("video FFV1 mkv open", r == 0, "returned %d", r);
    if (r == 0) {
      T_NEAR("video FFV1 mkv fps", lt_video_fps(v), 25.0, 1e-9, 0);
      const lt_frame *f;
      int n = 0, bad = 0;
      double t3 = -1;
      while ((r = lt_video_next(v, &f)) == 1) {
        for (int k = 0; k < W * H && n < N; k++)
          if (f->grey[k] != frames[n][k]) bad++;
        if (n == 3) t3 = f->t_s;
        n++;
      }
      T_CHECK("video FFV1 mkv: 6 lossless frames", n == N && bad == 0 && r == 0,
              "%d frames, %d pixels differ, last %d", n, bad, r);
      T_NEAR("video FFV1 mkv t_s of frame 3", t3, 3.0 / 25, 1e-3, 0);
    }
    lt_video_close(v);
  }
  for (int i = 0; i < N; i++) free(frames[i]);
}

/* ---- images --------------------------------------------------------- */

static void test_png_roundtrip(void)
{
  enum { W = 29, H = 17 };
  uint8_t grey[W * H], rgb[W * H * 3];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      grey[y * W + x] = (uint8_t)(x * 255 / (W - 1));
      uint8_t *p = rgb + 3 * (y * W + x);
      p[0] = (uint8_t)(x * 8);
      p[1] = (uint8_t)(y * 15);
      p[2] = (uint8_t)(255 - x * 3 - y);
    }
  char p[512];
  join(p, sizeof p, g_tmp, "grey.png");
  int r = lt_png_write_grey(p, grey, W, H);
  T_CHECK("png write grey", r == 0, "returned %d", r);
  float *px = NULL;
  int w = 0, h = 0, bad = 0;
  r = lt_image_read(p, LT_CHANNEL_LUMA, &px, &w, &h);
  if (r == 0 && w == W && h == H)
    for (int k = 0; k < W * H; k++) bad += px[k] != grey[k];
  T_CHECK("png grey round trip", r == 0 && w == W && h == H && bad == 0, "r %d %dx%d bad %d", r, w,
          h, bad);
  free(px);
  px = NULL;
  r = lt_image_read(p, LT_CHANNEL_B, &px, &w, &h);
  bad = 0;
  if (r == 0) for (int k = 0; k < W * H; k++) bad += px[k] != grey[k];
  T_CHECK("png grey read as channel b == grey", r == 0 && bad == 0, "r %d bad %d", r, bad);
  free(px);

  join(p, sizeof p, g_tmp, "rgb.png");
  r = lt_png_write_rgb(p, rgb, W, H);
  T_CHECK("png write rgb", r == 0, "returned %d", r);
  const lt_channel chs[4] = {LT_CHANNEL_R, LT_CHANNEL_G, LT_CHANNEL_B, LT_CHANNEL_LUMA};
  for (int c = 0; c < 4; c++) {
    px = NULL;
    r = lt_image_read(p, chs[c], &px, &w, &h);
    double maxd = -1;
    if (r == 0 && w == W && h == H) {
      maxd = 0;
      for (int k = 0; k < W * H; k++) {
        const uint8_t *s = rgb + 3 * k;
        double want = c < 3 ? s[c] : 0.299 * s[0] + 0.587 * s[1] + 0.114 * s[2];
        double d = fabs(px[k] - want);
        if (d > maxd) maxd = d;
      }
    }
    char name[64];
    snprintf(name, sizeof name, "png rgb round trip channel %s", (const char *[]){"r", "g", "b", "luma"}[c]);
    T_CHECK(name, maxd >= 0 && maxd <= 1e-4, "r %d max diff %g", r, maxd);
    free(px);
  }
  /* No temporary left behind. */
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());
  T_CHECK("png write leaves no temporary", !exists(tmp), "%s exists", tmp);

  /* Corrupt: the same PNG truncated to half, and with a damaged IDAT. */
  size_t len = 0;
  uint8_t *raw = slurp(p, &len);
  char q[512];
  join(q, sizeof q, g_tmp, "trunc.png");
  if (raw) spit(q, raw, len / 2);
  px = NULL;
  r = lt_image_read(q, LT_CHANNEL_LUMA, &px, &w, &h);
  T_CHECK("png truncated -> LT_ERR_INPUT", r == LT_ERR_INPUT && px == NULL, "returned %d", r);
  if (raw && len > 80) {
    for (size_t i = 60; i < len - 20; i += 7) raw[i] ^= 0x5A;
    join(q, sizeof q, g_tmp, "garbled.png");
    spit(q, raw, len);
    r = lt_image_read(q, LT_CHANNEL_LUMA, &px, &w, &h);
    T_CHECK("png garbled -> LT_ERR_INPUT", r == LT_ERR_INPUT && px == NULL, "returned %d", r);
  }
  free(raw);
  r = lt_image_read("/nonexistent/a.png", LT_CHANNEL_LUMA, &px, &w, &h);
  T_CHECK("image missing -> LT_ERR_INPUT", r == LT_ERR_INPUT, "returned %d", r);

  r = lt_png_write_grey("/nonexistent-dir-lt/x.png", grey, W, H);
  T_CHECK("png write to missing dir -> LT_ERR_OUTPUT", r == LT_ERR_OUTPUT, "returned %d", r);
}

/* 16-bit grey and RGBA PNG written with libpng directly. */
static int write_png16(const char *path, int w, int h, int color, const uint16_t *v)
{
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  int nch = color == PNG_COLOR_TYPE_GRAY ? 1 : 4;
  uint8_t *row = malloc((size_t)w * nch * 2);
  int ok = 0;
  if (png && info && row && !setjmp(png_jmpbuf(png))) {
    png_init_io(png, fp);
    png_set_IHDR(png, info, w, h, 16, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) {
      for (int k = 0; k < w * nch; k++) {
        uint16_t s = v[(size_t)y * w * nch + k];
        row[2 * k] = (uint8_t)(s >> 8);
        row[2 * k + 1] = (uint8_t)(s & 255);
      }
      png_write_row(png, row);
    }
    png_write_end(png, NULL);
    ok = 1;
  }
  png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
  free(row);
  return (fclose(fp) == 0 && ok) ? 0 : -1;
}

static void test_png16(void)
{
  enum { W = 5, H = 3 };
  uint16_t g[W * H], rgba[W * H * 4];
  for (int k = 0; k < W * H; k++) {
    g[k] = (uint16_t)(k * 4681); /* 0 .. 65534 */
    rgba[4 * k] = (uint16_t)(k * 257 * 10);
    rgba[4 * k + 1] = 65535;
    rgba[4 * k + 2] = (uint16_t)(k * 1000);
    rgba[4 * k + 3] = (uint16_t)(k * 3);
  }
  g[W * H - 1] = 65535;
  char p[512];
  join(p, sizeof p, g_tmp, "g16.png");
  float *px = NULL;
  int w, h;
  int r = write_png16(p, W, H, PNG_COLOR_TYPE_GRAY, g) == 0 ? lt_image_read(p, LT_CHANNEL_LUMA, &px, &w, &h) : -99;
  double maxd = -1;
  if (r == 0) {
    maxd = 0;
    for (int k = 0; k < W * H; k++) maxd = fmax(maxd, fabs(px[k] - g[k] * 255.0 / 65535.0));
  }
  T_CHECK("png 16-bit grey scaled to 0..255", r == 0 && w == W && h == H && maxd < 1e-4 &&
          px[W * H - 1] == 255.0f, "r %d max diff %g", r, maxd);
  free(px);

  join(p, sizeof p, g_tmp, "rgba16.png");
  px = NULL;
  r = write_png16(p, W, H, PNG_COLOR_TYPE_RGB_ALPHA, rgba) == 0 ? lt_image_read(p, LT_CHANNEL_R, &px, &w, &h) : -99;
  maxd = -1;
  if (r == 0) {
    maxd = 0;
    for (int k = 0; k < W * H; k++) maxd = fmax(maxd, fabs(px[k] - k * 10.0));
  }
  T_CHECK("png 16-bit RGBA channel r (alpha ignored)", r == 0 && maxd < 1e-3, "r %d max diff %g", r, maxd);
  free(px);
}

static void test_pnm(void)
{
  char p[512];
  float *px = NULL;
  int w, h;
  /* P5, comment in the header, maxval 255. */
  uint8_t buf[256];
  int n = snprintf((char *)buf, sizeof buf, "P5\n# a comment\n4 3\n255\n");
  for (int k = 0; k < 12; k++) buf[n + k] = (uint8_t)(k * 20);
  join(p, sizeof p, g_tmp, "a.pgm");
  spit(p, buf, n + 12);
  int r = lt_image_read(p, LT_CHANNEL_LUMA, &px, &w, &h);
  int bad = 0;
  if (r == 0) for (int k = 0; k < 12; k++) bad += px[k] != k * 20;
  T_CHECK("pgm P5 8-bit read", r == 0 && w == 4 && h == 3 && bad == 0, "r %d %dx%d bad %d", r, w, h, bad);
  free(px);
  px = NULL;

  /* P5 maxval 1000, 16-bit big-endian. */
  n = snprintf((char *)buf, sizeof buf, "P5 2 2 1000\n");
  const int v16[4] = {0, 500, 1000, 250};
  for (int k = 0; k < 4; k++) {
    buf[n + 2 * k] = (uint8_t)(v16[k] >> 8);
    buf[n + 2 * k + 1] = (uint8_t)(v16[k] & 255);
  }
  join(p, sizeof p, g_tmp, "b.pgm");
  spit(p, buf, n + 8);
  r = lt_image_read(p, LT_CHANNEL_LUMA, &px, &w, &h);
  double maxd = -1;
  if (r == 0) {
    maxd = 0;
    for (int k = 0; k < 4; k++) maxd = fmax(maxd, fabs(px[k] - v16[k] * 0.255));
  }
  T_CHECK("pgm P5 maxval 1000 scaled", r == 0 && w == 2 && h == 2 && maxd < 1e-4, "r %d diff %g", r, maxd);
  free(px);
  px = NULL;

  /* P6, channel g. */
  n = snprintf((char *)buf, sizeof buf, "P6\n3 1\n255\n");
  const uint8_t rgb[9] = {10, 20, 30, 40, 50, 60, 70, 80, 90};
  memcpy(buf + n, rgb, 9);
  join(p, sizeof p, g_tmp, "c.ppm");
  spit(p, buf, n + 9);
  r = lt_image_read(p, LT_CHANNEL_G, &px, &w, &h);
  T_CHECK("ppm P6 channel g", r == 0 && w == 3 && h == 1 && px[0] == 20 && px[1] == 50 && px[2] == 80,
          "r %d", r);
  free(px);
  px = NULL;

  /* Truncated pixel data, absurd size, bad maxval. */
  join(p, sizeof p, g_tmp, "d.ppm");
  spit(p, buf, n + 5);
  r = lt_image_read(p, LT_CHANNEL_G, &px, &w, &h);
  T_CHECK("ppm truncated -> LT_ERR_INPUT", r == LT_ERR_INPUT && px == NULL, "r %d", r);
  const char *huge = "P5\n100000 100000\n255\n";
  join(p, sizeof p, g_tmp, "e.pgm");
  spit(p, huge, strlen(huge));
  r = lt_image_read(p, LT_CHANNEL_G, &px, &w, &h);
  T_CHECK("pgm absurd size -> LT_ERR_INPUT", r == LT_ERR_INPUT && px == NULL, "r %d", r);
  const char *badmax = "P5\n2 2\n70000\n";
  join(p, sizeof p, g_tmp, "f.pgm");
  spit(p, badmax, strlen(badmax));
  r = lt_image_read(p, LT_CHANNEL_G, &px, &w, &h);
  T_CHECK("pgm maxval 70000 -> LT_ERR_INPUT", r == LT_ERR_INPUT, "r %d", r);
  join(p, sizeof p, g_tmp, "g.txt");
  spit(p, "hello", 5);
  r = lt_image_read(p, LT_CHANNEL_G, &px, &w, &h);
  T_CHECK("image of unknown format -> LT_ERR_INPUT", r == LT_ERR_INPUT, "r %d", r);
}

/* ---- drawing -------------------------------------------------------- */

static int is_set(const lt_canvas *c, int x, int y) { return c->rgb[3 * (y * c->width + x)] != 0; }

static void test_draw(void)
{
  lt_canvas c;
  const lt_rgb white = {255, 255, 255};
  int r = lt_canvas_init(&c, 21, 21, NULL);
  T_CHECK("canvas init", r == 0, "returned %d", r);
  if (r != 0) return;
  lt_draw_line(&c, 0, 0, 9, 0, white);
  int ok = 1;
  for (int y = 0; y < 21; y++)
    for (int x = 0; x < 21; x++) ok &= is_set(&c, x, y) == (y == 0 && x <= 9);
  T_CHECK("line (0,0)-(9,0) sets exactly those 10 pixels", ok, "wrong pixel set");

  memset(c.rgb, 0, 21 * 21 * 3);
  lt_draw_circle(&c, 10, 10, 5, white);
  int nset = 0, outside = 0;
  for (int y = 0; y < 21; y++)
    for (int x = 0; x < 21; x++)
      if (is_set(&c, x, y)) {
        nset++;
        double d = hypot(x - 10, y - 10);
        if (d < 4.0 || d > 6.0) outside++;
      }
  T_CHECK("circle r=5 at (10,10): pixels at distance 5+-1 only", outside == 0 && nset >= 28,
          "%d of %d set pixels off the ring", outside, nset);
  T_CHECK("circle r=5 passes through the 4 axis points",
          is_set(&c, 15, 10) && is_set(&c, 5, 10) && is_set(&c, 10, 15) && is_set(&c, 10, 5), "missing");

  /* Clipping: far outside lines and text do not crash or write out of bounds. */
  lt_draw_line(&c, -1e9, -5, 1e9, 30, white);
  lt_draw_line(&c, NAN, 0, 3, 3, white);
  lt_draw_rect_fill(&c, -5, -5, 100, 3, white);
  lt_draw_text(&c, 15, 15, 3, "Hello, 1.5 \xc2\xb5m/s", white);
  lt_canvas_free(&c);
  lt_canvas_free(NULL);

  float g[6] = {-3, 0, 100.4f, 254.6f, 300, NAN};
  r = lt_canvas_init(&c, 3, 2, g);
  T_CHECK("canvas from grey clamps and rounds",
          r == 0 && c.rgb[0] == 0 && c.rgb[3] == 0 && c.rgb[6] == 100 && c.rgb[9] == 255 &&
              c.rgb[12] == 255 && c.rgb[15] == 0 && c.rgb[10] == 255,
          "r %d", r);
  lt_canvas_free(&c);

  /* Text: '1' at scale 1 has its stem in column 2 for rows 0..6. */
  lt_canvas_init(&c, 12, 9, NULL);
  lt_draw_text(&c, 0, 0, 1, "1", white);
  T_CHECK("text glyph '1'", is_set(&c, 2, 0) && is_set(&c, 2, 6) && is_set(&c, 1, 1) &&
          !is_set(&c, 0, 0) && is_set(&c, 1, 6) && is_set(&c, 3, 6), "glyph bits wrong");
  lt_canvas_free(&c);
}

/* Every value lies in the bin lt_hist_make counted it in, edges are round. */
static int hist_consistent(const double *v, int n, const lt_hist *h, char *why, size_t nw)
{
  double total = 0, m = h->width / pow(10.0, floor(log10(h->width) + 1e-9));
  for (int i = 0; i < h->nbins; i++) total += h->counts[i];
  int finite = 0;
  for (int k = 0; k < n; k++) finite += isfinite(v[k]) != 0;
  if (total != finite || h->n != finite) return snprintf(why, nw, "counts sum %g, n %d, finite %d", total, h->n, finite), 0;
  if (fabs(m - 1) > 1e-9 && fabs(m - 2) > 1e-9 && fabs(m - 5) > 1e-9) return snprintf(why, nw, "width %g", h->width), 0;
  for (int i = 0; i <= h->nbins; i++) {
    double e = lt_hist_edge(h, i), q = e / h->width;
    if (fabs(q - round(q)) > 1e-6) return snprintf(why, nw, "edge %d = %.17g not a multiple of %g", i, e, h->width), 0;
  }
  double *c = calloc(h->nbins, sizeof(double));
  for (int k = 0; k < n; k++) {
    if (!isfinite(v[k])) continue;
    int b = -1;
    for (int i = 0; i < h->nbins; i++)
      if (v[k] >= lt_hist_edge(h, i) && v[k] < lt_hist_edge(h, i + 1)) b = i;
    if (b < 0) {
      free(c);
      return snprintf(why, nw, "value %.17g outside [%g, %g)", v[k], lt_hist_edge(h, 0), lt_hist_edge(h, h->nbins)), 0;
    }
    c[b] += 1;
  }
  for (int i = 0; i < h->nbins; i++)
    if (c[i] != h->counts[i]) {
      snprintf(why, nw, "bin %d: %g counted, %g expected", i, h->counts[i], c[i]);
      free(c);
      return 0;
    }
  free(c);
  return 1;
}

static void test_histogram(void)
{
  /* bins: values on edges (multiples of 0.1 and 0.25), equal values, negative values, NaN, none */
  double a[31], b[3] = {5, 5, 5}, c[5] = {-3.2, -0.1, 0, 2.5, NAN}, d[41];
  for (int i = 0; i < 31; i++) a[i] = 0.1 * i;
  for (int i = 0; i < 41; i++) d[i] = 0.25 * i;
  struct { const char *name; const double *v; int n; double range; } cases[] = {
      {"hist bins: 0, 0.1, ..., 3.0", a, 31, 0}, {"hist bins: three equal values", b, 3, 0},
      {"hist bins: negative values and NaN", c, 5, 0}, {"hist bins: 0, 0.25, ..., 10", d, 41, 0},
      {"hist bins: range_max 100 over values up to 10", d, 41, 100}, {"hist bins: no values", a, 0, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    lt_hist h;
    char why[160] = "";
    int r = lt_hist_make(&h, cases[k].v, cases[k].n, cases[k].range);
    int ok = r == 0 && hist_consistent(cases[k].v, cases[k].n, &h, why, sizeof why);
    if (ok && cases[k].range > 0 && lt_hist_edge(&h, h.nbins) < cases[k].range) ok = 0, snprintf(why, sizeof why, "axis ends at %g", lt_hist_edge(&h, h.nbins));
    T_CHECK(cases[k].name, ok, "%s", why);
    lt_hist_free(&h);
  }
  lt_hist h;
  lt_hist_make(&h, a, 31, 0);
  T_CHECK("hist bins: mean and median of 0..3.0", fabs(h.mean - 1.5) < 1e-12 && fabs(h.median - 1.5) < 1e-12,
          "mean %g median %g", h.mean, h.median);
  lt_hist_free(&h);

  /* the figure: 90 speeds, tallest bin [25, 30) with 22 */
  double v[90];
  int k = 0;
  const int per[12] = {0, 1, 4, 9, 15, 22, 18, 11, 6, 3, 1, 0};
  for (int i = 0; i < 12; i++)
    for (int j = 0; j < per[i]; j++) v[k++] = 5.0 * i + 5.0 * (j + 0.5) / per[i];
  char base[512], p[600];
  join(base, sizeof base, g_tmp, "hist");
  int r = lt_plot_histogram(base, v, k, 0, "Velocity distribution", "speed (\xc2\xb5m/s)", "\xc2\xb5m/s", 800, 500);
  T_CHECK("histogram written", r == 0, "returned %d", r);
  snprintf(p, sizeof p, "%s.png", base);
  float *px = NULL;
  int w = 0, hh = 0;
  r = lt_image_read(p, LT_CHANNEL_R, &px, &w, &hh);
  T_CHECK("histogram PNG 800x500 with white corner", r == 0 && w == 800 && hh == 500 && px[0] == 255,
          "r %d %dx%d", r, w, hh);
  if (r == 0) {
    /* bins of 2.5 over [0, 57.5]: the tallest bars are steel blue (R=70) just above the x axis */
    lt_hist_make(&h, v, k, 0);
    int best = 0;
    for (int i = 0; i < h.nbins; i++)
      if (h.counts[i] > h.counts[best]) best = i;
    int pw = 800 - LT_PLOT_LEFT - LT_PLOT_RIGHT;
    int x = LT_PLOT_LEFT + (int)((best + 0.5) / h.nbins * pw), y = 500 - LT_PLOT_BOTTOM - 10;
    T_CHECK("histogram tallest bar drawn", fabsf(px[y * 800 + x] - 70) < 1, "R at bar (%d,%d) = %g", x, y,
            px[y * 800 + x]);
    lt_hist_free(&h);
  }
  free(px);
  snprintf(p, sizeof p, "%s.csv", base);
  FILE *f = fopen(p, "r");
  char line[128];
  double sum = 0, lo, hi, cnt;
  int rows = 0, hdr = f && fgets(line, sizeof line, f) && !strcmp(line, "bin_lo,bin_hi,count\n");
  while (f && fscanf(f, "%lf,%lf,%lf\n", &lo, &hi, &cnt) == 3) sum += cnt, rows++;
  if (f) fclose(f);
  T_CHECK("histogram CSV: header, counts sum to n", hdr && rows > 0 && sum == k, "hdr %d rows %d sum %g", hdr, rows, sum);
  snprintf(p, sizeof p, "%s.svg", base);
  f = fopen(p, "r");
  char buf[16384] = "";
  size_t nr = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[nr] = 0;
  if (f) fclose(f);
  T_CHECK("histogram SVG has n and mean as text", strstr(buf, ">n = 90 tracks</text>") && strstr(buf, ">mean = "),
          "%zu bytes", nr);
#ifdef LT_HAVE_CAIRO
  snprintf(p, sizeof p, "%s.pdf", base);
  f = fopen(p, "rb");
  nr = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  T_CHECK("histogram PDF starts with %PDF-", nr > 100 && !memcmp(buf, "%PDF-", 5), "%zu bytes", nr);
#endif
  r = lt_plot_histogram(base, v, k, 0, "t", "x", "u", 100, 50);
  T_CHECK("histogram of 100x50 px rejected", r < 0, "returned %d", r);
  const char *keep = getenv("LT_KEEP_PLOT");
  if (keep && keep[0]) lt_plot_histogram(keep, v, k, 0, "Velocity distribution", "speed (\xc2\xb5m/s)", "\xc2\xb5m/s", 800, 500);
}

/* Overlay helpers: colours that differ among neighbours, labels inside the
 * frame and off the banner, the palette PNG lossless. */
static void test_overlay_helpers(void)
{
  /* a cluster of LT_TRACK_COLOURS tracks within 30 px: all colours differ */
  double xy[2 * LT_TRACK_COLOURS];
  int col[LT_TRACK_COLOURS];
  for (int i = 0; i < LT_TRACK_COLOURS; i++) {
    xy[2 * i] = 100 + 10 * (i % 4);
    xy[2 * i + 1] = 100 + 10 * (i / 4);
    col[i] = -1;
  }
  for (int i = 0; i < LT_TRACK_COLOURS; i++) col[i] = lt_pick_colour(xy, col, LT_TRACK_COLOURS, xy[2 * i], xy[2 * i + 1]);
  int dup = 0;
  for (int i = 0; i < LT_TRACK_COLOURS; i++)
    for (int j = 0; j < i; j++) dup += col[i] == col[j];
  T_CHECK("track colours: a cluster of 10 gets 10 colours", dup == 0, "%d equal pairs", dup);
  /* an 11th track next to track 3 and far from the others takes a colour used far away */
  double xy2[2 * (LT_TRACK_COLOURS + 1)];
  int col2[LT_TRACK_COLOURS + 1];
  memcpy(xy2, xy, sizeof xy);
  memcpy(col2, col, sizeof col);
  xy2[2 * LT_TRACK_COLOURS] = 400, xy2[2 * LT_TRACK_COLOURS + 1] = 400, col2[LT_TRACK_COLOURS] = -1;
  xy2[6] = 405, xy2[7] = 400; /* track 3 moved next to it */
  int k = lt_pick_colour(xy2, col2, LT_TRACK_COLOURS + 1, 400, 400);
  T_CHECK("track colours: a new track avoids its neighbour's colour", k != col[3], "got the neighbour's %d", k);
  const lt_rgb c0 = lt_track_colour(0), c10 = lt_track_colour(LT_TRACK_COLOURS);
  T_CHECK("track colours: palette index wraps", c0.r == c10.r && c0.g == c10.g && c0.b == c10.b, "differ");

  /* labels: 20x7 text of a cell anywhere (also under the banner and at the corners) stays inside and off the banner */
  int bad = 0;
  for (int y = -20; y <= 260; y += 4)
    for (int x = -20; x <= 340; x += 4) {
      int lx = x, ly = y;
      lt_label_place(&lx, &ly, 20, 7, y + 30, 320, 240, 150, 22);
      if (lx < 0 || ly < 0 || lx + 20 > 320 || ly + 7 > 240 || (lx < 150 && ly < 22)) bad++;
    }
  T_CHECK("labels: inside the frame, off the banner, wherever the cell is", bad == 0, "%d placements wrong", bad);
  int lx = 200, ly = 100;
  lt_label_place(&lx, &ly, 20, 7, 130, 320, 240, 150, 22);
  T_CHECK("labels: a label with room stays where asked", lx == 200 && ly == 100, "moved to %d,%d", lx, ly);

  /* palette PNG: 200 grey levels + 3 colours read back exactly; all 256 greys
   * + colours (too many for a palette) within 1 level; 6 bits within 2 */
  lt_canvas cv;
  char p[512];
  join(p, sizeof p, g_tmp, "pal.png");
  for (int t = 0; t < 3; t++) {
    int bits = t == 2 ? 6 : 8, levels = t == 0 ? 200 : 256, tol = t == 0 ? 0 : t == 1 ? 1 : 2;
    float g[64 * 16];
    for (int i = 0; i < 64 * 16; i++) g[i] = (float)((i * 7) % levels);
    lt_canvas_init(&cv, 64, 16, g);
    lt_draw_line(&cv, 0, 3, 63, 3, (lt_rgb){230, 25, 75});
    lt_draw_text_halo(&cv, 5, 6, 1, "12", (lt_rgb){255, 225, 25}, (lt_rgb){0, 0, 0});
    int r = lt_canvas_write_png(&cv, p, bits);
    float *rd = NULL, *gd = NULL;
    int w = 0, h = 0;
    if (!r) r = lt_image_read(p, LT_CHANNEL_R, &rd, &w, &h);
    if (!r) r = lt_image_read(p, LT_CHANNEL_G, &gd, &w, &h);
    double worst = 0;
    for (int i = 0; !r && i < 64 * 16; i++) {
      const uint8_t *q = cv.rgb + 3 * i;
      worst = fmax(worst, fmax(fabs(rd[i] - q[0]), fabs(gd[i] - q[1])));
    }
    FILE *f = fopen(p, "rb");
    unsigned char hd[32] = {0};
    if (f) {
      if (fread(hd, 1, 32, f) != 32) hd[25] = 0;
      fclose(f);
    }
    char name[128];
    snprintf(name, sizeof name, "overlay PNG: palette (colour type 3), %d greys at %d bits within %d level(s)",
             levels, bits, tol);
    T_CHECK(name, r == 0 && hd[25] == 3 && worst <= tol, "r %d type %d worst %g", r, hd[25], worst);
    free(rd);
    free(gd);
    lt_canvas_free(&cv);
  }
  remove(p);
}

static void rm_tree(const char *dir)
{
  const char *names[] = {"truncated.avi", "text.avi", "empty.avi", "sound.wav", "ffv1.mkv", "grey.png",
                         "rgb.png", "trunc.png", "garbled.png", "g16.png", "rgba16.png", "a.pgm",
                         "b.pgm", "c.ppm", "d.ppm", "e.pgm", "f.pgm", "g.txt", "hist.png",
                         "hist.svg", "hist.pdf", "hist.csv"};
  char p[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    join(p, sizeof p, dir, names[i]);
    remove(p);
  }
  rmdir(dir);
}

int main(void)
{
  if (!getenv("LT_TEST_VERBOSE")) lt_log_set_level(LT_LOG_QUIET);
  snprintf(g_tmp, sizeof g_tmp, "/tmp/lt_test_io.XXXXXX");
  if (!mkdtemp(g_tmp)) {
    printf("FAIL test_io: cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  test_rodinia();
  test_mesentery();
  test_video_errors();
  test_ffv1_mkv();
  test_png_roundtrip();
  test_png16();
  test_pnm();
  test_draw();
  test_histogram();
  test_overlay_helpers();
  rm_tree(g_tmp);
  T_DONE();
}
