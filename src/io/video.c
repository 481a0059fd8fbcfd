/* video.c - streaming video input: libavformat demux, libavcodec decode, one
 * float channel per frame, and a decode thread feeding a ring of frames.
 *
 * Decode loop (the FFmpeg send/receive model): receive a frame; on EAGAIN
 * read the next packet of our stream and send it; at the end of the input send
 * a NULL packet to flush, then receive until AVERROR_EOF. A packet the decoder
 * rejects is skipped (one warning), so a damaged or truncated file ends at its
 * last good frame instead of failing.
 *
 * Conversion to one channel 0..255, row 0 = top (FFmpeg hands bottom-up
 * rawvideo as a pointer to the last row with a negative linesize, so walking
 * data[0] + y*linesize yields top-down rows):
 *   grey formats (gray, gray16, ya8, ...)  the grey value, whatever the channel;
 *   pal8                                   palette entry: channel r/g/b, or luma
 *                                          (grey palettes give the grey value);
 *   YUV, channel luma                      the Y plane, limited range (16..235)
 *                                          expanded to 0..255 as a conversion to
 *                                          GRAY8 does, but kept in float;
 *   anything else, or YUV with r/g/b       libswscale to RGB24, then the channel
 *                                          or luma = 0.299 R + 0.587 G + 0.114 B
 *                                          (the same weights as image.c).
 * Samples deeper than 8 bits are scaled by 255 / (2^depth - 1).
 *
 * Ring: `ring` slots, each with float and byte buffers allocated at open.
 * The decode thread writes slot (head + count) % ring while count < ring;
 * lt_video_next hands out slot head and keeps it until the following call
 * (count includes the slot held by the caller), so the producer never
 * touches a frame the caller is reading.
 * No copy of 8-bit pixels that are already the frame: when a raw packet's
 * rows (gray8, top-down, stride = width) or a decoded frame's grey or
 * full-range Y plane (linesize = width) are the bytes, the slot keeps a
 * reference to FFmpeg's packet or frame and grey8 points into it (the slot's
 * own byte buffer stays unused; LT_VIDEO_ZEROCOPY=0 copies as before).
 * A YUV4MPEG2 grey (mono) file on the raw path is read through a memory
 * map (LT_VIDEO_MMAP=0: not): its frames are "FRAME\n" + width x height
 * bytes, so the decode thread finds frame k's bytes in the map, makes their
 * pages present and hands over a pointer: no read() copy, no packet.
 * Anything but a complete frame with a plain "FRAME" line (the end of the
 * file as mapped at open, a truncated frame, a frame header with
 * parameters, garbage) or pages that cannot be made present go back to
 * FFmpeg's demuxer at that offset, which deals with them as before;
 * timestamps are the demuxer's, (offset - offset of frame 0) / frame size
 * as the y4m demuxer computes them. (A file truncated by someone else while
 * it is read can end the process with SIGBUS, as with any memory map.)
 * Experiment, LT_VIDEO_TOUCH=1: the decode thread also reads one byte per
 * cache line, so that the consumer finds the bytes in the cache; on the
 * H100 host it made the reader 30 us per 512x512 frame slower and the
 * tumour frame step no faster (docs/PERFORMANCE.md).
 * Hand-over: the consumer that finds no frame spins on the count for a
 * while (lt_spin_until: LT_SPIN_US, default 200 us with 4 or more cores) before it
 * sleeps on `filled`, and the producer signals only a sleeping consumer; a
 * producer that finds the ring full sleeps until half of it is free, so
 * neither side pays a wake-up per frame while frames are ready. */
#include "video.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "error.h"
#include "log.h"

/* Consecutive decoder errors without a frame before we give up. */
#define MAX_ERROR_RUN 1000

enum conv_kind { CONV_GREY, CONV_PAL, CONV_YPLANE, CONV_RGB };

struct lt_video {
  char *path;
  lt_channel channel;
  int ring;

  /* FFmpeg state (owned by the decode thread once it runs). */
  AVFormatContext *fmt;
  AVCodecContext *dec;
  AVPacket *pkt;
  AVFrame *frm;
  struct SwsContext *sws;
  int sws_cs, sws_range; /* colour details last given to sws (-1: none) */
  int stream;
  AVRational time_base;
  double start_s; /* stream start time, subtracted from timestamps */
  double fps;
  long frames_hint; /* nb_frames or duration x fps from the header (ETA only) */
  int flushing;     /* the NULL packet has been sent */
  int pkt_pending;  /* pkt holds a packet the decoder answered EAGAIN to */
  int n_skipped;    /* packets/frames the decoder rejected */
  int n_concealed;  /* frames the decoder returned with errors concealed */
  long declared;    /* frames the container declares (nb_frames), 0 = unknown */
  int fps_default;  /* the frame rate is the demuxer's default (image files) */
  int next_index;

  /* Raw 8-bit fast path (rawvideo gray8/pal8): packets are the pixels, no
   * decoder. Chosen after frame 0 only if its packet, read as rows of
   * raw_stride bytes (bottom-up when raw_flip), equals what the decoder
   * made of it. */
  int raw_probe;      /* keep frame 0's packet for the check */
  uint8_t *raw_first; /* that packet's bytes */
  int raw_first_size;
  int64_t raw_first_pos; /* its offset in the file (< 0: unknown) */
  int raw;            /* 1: the fast path is on */
  int raw_stride, raw_flip, raw_pal;
  uint8_t lut8[256];  /* pal8: palette -> bytes (when every entry is an integer) */
  float lutf[256];    /* pal8: palette -> float */
  int lut_int;        /* lut8 is exact */
  volatile int need_float; /* 0: 8-bit frames come as bytes only (grey NULL) */

  int width, height;
  uint8_t *rgb;       /* RGB24 scratch for the swscale path */
  int rgb_linesize;
  uint32_t *line;     /* one row of samples for the generic reader */

  /* Ring of frames; ref_pkt/ref_frm[i]: what slot i's grey8 points into
   * when it is no copy (else empty). count, eof and err are written under mu
   * with atomic stores and read by the spinning consumer without it. */
  lt_frame *slots;
  AVPacket **ref_pkt;
  AVFrame **ref_frm;
  int zerocopy;       /* 0: always copy into the slot (LT_VIDEO_ZEROCOPY=0) */
  /* y4m mono through a memory map: the map, the next frame line's offset
   * in it, frame 0's (the demuxer's data offset); mm_on 0 once the demuxer
   * has taken over again (the map stays until close: slots point into it) */
  uint8_t *map;
  size_t map_size, mm_off, mm_base;
  int mm_on;
  int mm_touch;          /* read every cache line of a frame on the decode thread (LT_VIDEO_TOUCH=1) */
  volatile unsigned mm_sink;
  int cons_sleeping, prod_sleeping;
  int head, count, holding;
  int eof, err, stop;
  int thread_started;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t filled, freed;
};

static const char *averr(int e, char *buf, size_t n)
{
  if (av_strerror(e, buf, n) < 0) snprintf(buf, n, "error %d", e);
  return buf;
}

/* ---- conversion ------------------------------------------------------- */

static float luma_rgb(float r, float g, float b) { return 0.299f * r + 0.587f * g + 0.114f * b; }

static enum conv_kind conv_kind_of(const AVPixFmtDescriptor *d, lt_channel ch)
{
  if (d->flags & AV_PIX_FMT_FLAG_PAL) return CONV_PAL;
  if (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_HWACCEL |
                  AV_PIX_FMT_FLAG_FLOAT))
    return CONV_RGB;
  if (d->nb_components <= 2) return CONV_GREY;
  return ch == LT_CHANNEL_LUMA ? CONV_YPLANE : CONV_RGB;
}

/* YUV stored in full range (JPEG) rather than the default 16..235? */
static int full_range(const AVFrame *f)
{
  switch (f->format) {
  case AV_PIX_FMT_YUVJ420P: case AV_PIX_FMT_YUVJ422P: case AV_PIX_FMT_YUVJ444P:
  case AV_PIX_FMT_YUVJ440P: case AV_PIX_FMT_YUVJ411P: return 1;
  default: return f->color_range == AVCOL_RANGE_JPEG;
  }
}

/* Component 0 (grey or Y) of every row into dst, as out = (in - off) * scale
 * clamped to 0..255: grey uses the full range, limited-range Y maps
 * 16..235 (scaled to the bit depth) to 0..255. */
static void conv_comp0(lt_video *v, const AVFrame *f, const AVPixFmtDescriptor *d, int limited,
                       float *dst)
{
  const AVComponentDescriptor *c = &d->comp[0];
  int w = v->width, h = v->height;
  float off = 0.0f, scale = 255.0f / (float)((1u << c->depth) - 1u);
  if (limited) {
    float s = (float)(1u << (c->depth > 8 ? c->depth - 8 : 0));
    off = 16.0f * s;
    scale = 255.0f / (219.0f * s);
  }
  int fast = c->depth == 8 && c->step == 1 && c->shift == 0 && c->offset == 0;
  for (int y = 0; y < h; y++) {
    float *o = dst + (size_t)y * w;
    if (fast && !limited) {
      const uint8_t *s = f->data[c->plane] + (ptrdiff_t)y * f->linesize[c->plane];
      for (int x = 0; x < w; x++) o[x] = s[x];
      continue;
    }
    if (fast) {
      const uint8_t *s = f->data[c->plane] + (ptrdiff_t)y * f->linesize[c->plane];
      for (int x = 0; x < w; x++) v->line[x] = s[x];
    } else {
      av_read_image_line2(v->line, (const uint8_t **)f->data, f->linesize, d, 0, y, 0, w, 0, 4);
    }
    for (int x = 0; x < w; x++) {
      float g = ((float)v->line[x] - off) * scale;
      o[x] = g < 0.0f ? 0.0f : g > 255.0f ? 255.0f : g;
    }
  }
}

/* The palette (256 native-endian 0xAARRGGBB) -> lutf/lut8 for the channel. */
static void pal_lut(lt_video *v, const uint32_t *pal)
{
  v->lut_int = 1;
  for (int i = 0; i < 256; i++) {
    float r = (float)((pal[i] >> 16) & 255), g = (float)((pal[i] >> 8) & 255), b = (float)(pal[i] & 255);
    float x;
    switch (v->channel) {
    case LT_CHANNEL_R: x = r; break;
    case LT_CHANNEL_G: x = g; break;
    case LT_CHANNEL_B: x = b; break;
    default: x = (r == g && g == b) ? r : luma_rgb(r, g, b); break;
    }
    v->lutf[i] = x;
    v->lut8[i] = (uint8_t)x;
    v->lut_int &= x == (float)(int)x;
  }
}

/* Rows of 8-bit samples (src, stride, bottom-up when flip) through the
 * palette (pal) or as they are (grey) into the slot: bytes when exact (the
 * float copy made from them), else floats. Returns 1 when bytes were made. */
static int rows8(lt_video *v, const uint8_t *src, ptrdiff_t stride, int flip, int pal, lt_frame *slot)
{
  const int w = v->width, h = v->height;
  if (!pal || v->lut_int) {
    for (int y = 0; y < h; y++) {
      const uint8_t *s = src + (flip ? (ptrdiff_t)(h - 1 - y) : y) * stride;
      uint8_t *o = slot->grey8_buf + (size_t)y * w;
      if (pal)
        for (int x = 0; x < w; x++) o[x] = v->lut8[s[x]];
      else
        memcpy(o, s, (size_t)w);
    }
    slot->grey = NULL;
    if (v->need_float) { /* else the consumer asked for bytes only */
      const uint8_t *b = slot->grey8_buf;
      float *g = slot->grey = slot->grey_buf;
      for (size_t i = 0, n = (size_t)w * h; i < n; i++) g[i] = b[i];
    }
    return 1;
  }
  slot->grey = slot->grey_buf;
  for (int y = 0; y < h; y++) {
    const uint8_t *s = src + (flip ? (ptrdiff_t)(h - 1 - y) : y) * stride;
    float *o = slot->grey_buf + (size_t)y * w;
    for (int x = 0; x < w; x++) o[x] = v->lutf[s[x]];
  }
  return 0;
}

/* 8-bit samples at src (width x height, stride = width, top-down) that are
 * the frame's bytes and stay valid while the slot holds their reference:
 * grey8 points at them, floats only when asked. */
static void bytes_in_place(lt_video *v, const uint8_t *src, lt_frame *slot)
{
  slot->grey8 = src;
  slot->grey = NULL;
  if (v->need_float) {
    float *g = slot->grey = slot->grey_buf;
    for (size_t i = 0, n = (size_t)v->width * v->height; i < n; i++) g[i] = src[i];
  }
}

static int conv_rgb(lt_video *v, const AVFrame *f, float *dst)
{
  struct SwsContext *prev = v->sws;
  v->sws = sws_getCachedContext(v->sws, v->width, v->height, (enum AVPixelFormat)f->format,
                                v->width, v->height, AV_PIX_FMT_RGB24,
                                SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                                NULL);
  if (v->sws != prev) v->sws_cs = v->sws_range = -1; /* a fresh context */
  if (!v->sws) {
    lt_error("'%s': cannot convert pixel format %s to RGB", v->path,
             av_get_pix_fmt_name((enum AVPixelFormat)f->format));
    return LT_ERR_INPUT;
  }
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)f->format);
  if (d && !(d->flags & AV_PIX_FMT_FLAG_RGB) && d->nb_components >= 3) {
    /* YUV: tell swscale the frame's matrix and range (it assumes BT.601). */
    int cs = f->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : (int)f->colorspace;
    int range = full_range(f);
    if (cs != v->sws_cs || range != v->sws_range) {
      if (sws_setColorspaceDetails(v->sws, sws_getCoefficients(cs), range,
                                   sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16,
                                   1 << 16) < 0)
        lt_debug("'%s': swscale ignores the colour details", v->path);
      v->sws_cs = cs;
      v->sws_range = range;
    }
  }
  uint8_t *dd[4] = {v->rgb, NULL, NULL, NULL};
  int dl[4] = {v->rgb_linesize, 0, 0, 0};
  if (sws_scale(v->sws, (const uint8_t *const *)f->data, f->linesize, 0, v->height, dd, dl) !=
      v->height) {
    lt_error("'%s': pixel format conversion failed at frame %d", v->path, v->next_index);
    return LT_ERR_INTERNAL;
  }
  for (int y = 0; y < v->height; y++) {
    const uint8_t *s = v->rgb + (size_t)y * v->rgb_linesize;
    float *o = dst + (size_t)y * v->width;
    switch (v->channel) {
    case LT_CHANNEL_R: for (int x = 0; x < v->width; x++) o[x] = s[3 * x]; break;
    case LT_CHANNEL_G: for (int x = 0; x < v->width; x++) o[x] = s[3 * x + 1]; break;
    case LT_CHANNEL_B: for (int x = 0; x < v->width; x++) o[x] = s[3 * x + 2]; break;
    default:
      for (int x = 0; x < v->width; x++) o[x] = luma_rgb(s[3 * x], s[3 * x + 1], s[3 * x + 2]);
      break;
    }
  }
  return 0;
}

/* The frame as bytes if every pixel is an integer 0..255 (1), else 0. */
static int to_bytes(const float *g, uint8_t *b, size_t n)
{
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    float x = g[i];
    int k = (int)x;
    bad |= (x != (float)k) | (k < 0) | (k > 255);
    b[i] = (uint8_t)k;
  }
  return !bad;
}

static void stamp(lt_video *v, lt_frame *slot, int64_t ts);

/* v->frm -> slot (pixels, index, time). */
static int convert_frame(lt_video *v, lt_frame *slot)
{
  const AVFrame *f = v->frm;
  if (f->width != v->width || f->height != v->height) {
    lt_error("'%s': frame %d is %dx%d but the first frame was %dx%d", v->path, v->next_index,
             f->width, f->height, v->width, v->height);
    return LT_ERR_INPUT;
  }
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)f->format);
  if (!d) {
    lt_error("'%s': frame %d has an unknown pixel format", v->path, v->next_index);
    return LT_ERR_INPUT;
  }
  int r = 0, bytes = -1; /* -1: not known to be bytes, check */
  slot->grey = slot->grey_buf; /* rows8 may leave it NULL (bytes only) */
  const AVComponentDescriptor *c0 = &d->comp[0];
  int plain8 = c0->depth == 8 && c0->step == 1 && c0->shift == 0 && c0->offset == 0;
  enum conv_kind kind = conv_kind_of(d, v->channel);
  AVFrame *keep = v->ref_frm ? v->ref_frm[slot - v->slots] : NULL;
  if (v->zerocopy && keep && plain8 && f->buf[0] && f->linesize[c0->plane] == v->width &&
      (kind == CONV_GREY || (kind == CONV_YPLANE && full_range(f)))) {
    /* the plane is the frame's bytes: keep the decoder's frame, no copy */
    av_frame_move_ref(keep, v->frm);
    bytes_in_place(v, keep->data[c0->plane], slot);
    stamp(v, slot, keep->best_effort_timestamp);
    return 0;
  }
  switch (kind) {
  case CONV_GREY:
    if (plain8) bytes = rows8(v, f->data[c0->plane], f->linesize[c0->plane], 0, 0, slot);
    else conv_comp0(v, f, d, 0, slot->grey);
    break;
  case CONV_YPLANE:
    if (plain8 && full_range(f)) bytes = rows8(v, f->data[c0->plane], f->linesize[c0->plane], 0, 0, slot);
    else conv_comp0(v, f, d, !full_range(f), slot->grey);
    break;
  case CONV_PAL:
    pal_lut(v, (const uint32_t *)f->data[1]);
    bytes = rows8(v, f->data[0], f->linesize[0], 0, 1, slot);
    break;
  case CONV_RGB: r = conv_rgb(v, f, slot->grey); break;
  }
  if (r < 0) return r;
  if (bytes < 0) bytes = to_bytes(slot->grey, slot->grey8_buf, (size_t)v->width * v->height);
  slot->grey8 = bytes ? slot->grey8_buf : NULL;
  stamp(v, slot, f->best_effort_timestamp);
  return 0;
}

/* Index and time of the slot; ts in the stream's time base or NOPTS. */
static void stamp(lt_video *v, lt_frame *slot, int64_t ts)
{
  slot->index = v->next_index;
  slot->width = v->width;
  slot->height = v->height;
  if (ts != AV_NOPTS_VALUE && v->time_base.num > 0 && v->time_base.den > 0)
    slot->t_s = (double)ts * av_q2d(v->time_base) - v->start_s;
  else if (v->fps > 0)
    slot->t_s = v->next_index / v->fps;
  else
    slot->t_s = v->next_index;
  v->next_index++;
}

/* ---- decode loop ------------------------------------------------------ */

static void skipped(lt_video *v, int e)
{
  char eb[128];
  if (v->n_skipped++ == 0)
    lt_warn("'%s': skipping undecodable data after frame %d (%s)", v->path, v->next_index,
            averr(e, eb, sizeof eb));
}

/* Next decoded frame into v->frm: 1, 0 at the end of the stream, or < 0. */
static int decode_next(lt_video *v)
{
  char eb[128];
  int error_run = 0;
  for (;;) {
    int r = avcodec_receive_frame(v->dec, v->frm);
    if (r == 0) {
      if (v->frm->decode_error_flags || (v->frm->flags & AV_FRAME_FLAG_CORRUPT)) v->n_concealed++;
      return 1;
    }
    if (r == AVERROR_EOF) return 0;
    if (r != AVERROR(EAGAIN)) {
      skipped(v, r);
      if (++error_run > MAX_ERROR_RUN) {
        lt_error("'%s': the decoder keeps failing after frame %d (%s)", v->path, v->next_index,
                 averr(r, eb, sizeof eb));
        return LT_ERR_INPUT;
      }
      continue;
    }
    if (v->flushing) return 0; /* EAGAIN after flush: nothing more will come */

    if (!v->pkt_pending) {
      r = av_read_frame(v->fmt, v->pkt);
      if (r < 0) {
        if (r != AVERROR_EOF)
          lt_warn("'%s': read error after frame %d (%s); stopping there", v->path,
                  v->next_index, averr(r, eb, sizeof eb));
        v->flushing = 1;
        r = avcodec_send_packet(v->dec, NULL);
        if (r < 0 && r != AVERROR_EOF) {
          lt_error("'%s': cannot flush the decoder (%s)", v->path, averr(r, eb, sizeof eb));
          return LT_ERR_INTERNAL;
        }
        continue;
      }
      if (v->pkt->stream_index != v->stream) {
        av_packet_unref(v->pkt);
        continue;
      }
      if (v->pkt->flags & AV_PKT_FLAG_CORRUPT) { /* e.g. a frame cut short by truncation */
        av_packet_unref(v->pkt);
        skipped(v, AVERROR_INVALIDDATA);
        if (++error_run > MAX_ERROR_RUN) {
          lt_error("'%s': only corrupt packets after frame %d", v->path, v->next_index);
          return LT_ERR_INPUT;
        }
        continue;
      }
    }
    if (v->raw_probe && !v->raw_first && v->pkt->size > 0 && (v->raw_first = malloc((size_t)v->pkt->size))) {
      memcpy(v->raw_first, v->pkt->data, (size_t)v->pkt->size);
      v->raw_first_size = v->pkt->size;
      v->raw_first_pos = v->pkt->pos;
    }
    r = avcodec_send_packet(v->dec, v->pkt);
    if (r == AVERROR(EAGAIN)) {
      v->pkt_pending = 1; /* receive first, then resend */
      continue;
    }
    v->pkt_pending = 0;
    av_packet_unref(v->pkt);
    if (r < 0) {
      skipped(v, r);
      if (++error_run > MAX_ERROR_RUN) {
        lt_error("'%s': no packet decodes after frame %d (%s)", v->path, v->next_index,
                 averr(r, eb, sizeof eb));
        return LT_ERR_INPUT;
      }
    }
  }
}

int lt_video_map(const lt_video *v, const void **base, size_t *size)
{
  if (!v->map) return 0;
  *base = v->map;
  *size = v->map_size;
  return 1;
}

/* The next frame of a mapped y4m mono file: 1 (slot points into the map),
 * or 0 when the demuxer must take over at mm_off (not a complete frame with
 * a plain "FRAME" line there; the pb is moved there). */
static int mm_next(lt_video *v, lt_frame *slot)
{
  const size_t np = (size_t)v->width * v->height, off = v->mm_off;
  static const char magic[] = "FRAME\n";
  int ok = off <= v->map_size && v->map_size - off >= np + 6 && !memcmp(v->map + off, magic, 6);
  const uint8_t *px = ok ? v->map + off + 6 : v->map;
  /* the pages present now, on this thread, not at the consumer's first read
   * (a kernel without MADV_POPULATE_READ: one read per page) */
  const long pg = sysconf(_SC_PAGESIZE);
  const uintptr_t a0 = (uintptr_t)px & ~(uintptr_t)(pg - 1);
  int touch = 1;
#ifdef MADV_POPULATE_READ
  if (ok && madvise((void *)a0, (uintptr_t)px + np - a0, MADV_POPULATE_READ) != 0) {
    ok = errno == EINVAL; /* not supported; else the pages are not there (the file shrank) */
  } else
    touch = 0;
#endif
  if (!ok) {
    v->mm_on = 0;
    if (avio_seek(v->fmt->pb, (int64_t)off, SEEK_SET) < 0) v->mm_off = v->map_size; /* the demuxer sees the end */
    return 0;
  }
  if (touch) {
    volatile const uint8_t *t = px;
    for (size_t i = 0; i < np; i += (size_t)pg) (void)t[i];
  }
  if (v->mm_touch) { /* one read per cache line: the bytes come to the consumer from the cache, not memory */
    unsigned acc = 0;
    for (size_t i = 0; i < np; i += 64) acc += px[i];
    v->mm_sink = acc;
  }
  v->mm_off = off + 6 + np;
  bytes_in_place(v, px, slot);
  stamp(v, slot, (int64_t)((off - v->mm_base) / (np + 6))); /* the y4m demuxer's pts */
  return 1;
}

/* After frame 0 on the raw path: a y4m mono file (regular, stride = width,
 * frame 0 behind a plain "FRAME" line at its packet's offset) is mapped. */
static void mm_open(lt_video *v)
{
  const char *env = getenv("LT_VIDEO_MMAP");
  const size_t np = (size_t)v->width * v->height;
  if ((env && !strcmp(env, "0")) || !v->zerocopy || v->raw_pal || v->raw_flip || v->raw_stride != v->width ||
      strcmp(v->fmt->iformat->name, "yuv4mpegpipe") || !strcmp(v->path, "-") || v->raw_first_pos < 6 ||
      v->raw_first_size != (int)np)
    return;
  /* the demuxer read up to frame 0's end and no further (no packet of it
   * waits in its buffer: the map takes over from there) */
  if (avio_tell(v->fmt->pb) != v->raw_first_pos + (int64_t)np) return;
  int fd = open(v->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  void *m = MAP_FAILED;
  if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX)
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return;
  const size_t p0 = (size_t)v->raw_first_pos;
  if (p0 + np > (size_t)st.st_size || memcmp((const uint8_t *)m + p0 - 6, "FRAME\n", 6) ||
      memcmp((const uint8_t *)m + p0, v->raw_first, np)) {
    munmap(m, (size_t)st.st_size);
    return;
  }
  madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
  v->map = m;
  v->map_size = (size_t)st.st_size;
  v->mm_base = p0 - 6;
  v->mm_off = p0 + np; /* frame 1's line */
  v->mm_on = 1;
  const char *tv = getenv("LT_VIDEO_TOUCH");
  v->mm_touch = tv && !strcmp(tv, "1");
  lt_debug("'%s': y4m frames read through a memory map", v->path);
}

/* The raw fast path: the next packet of our stream is the frame. */
static int raw_next(lt_video *v, lt_frame *slot)
{
  char eb[128];
  int error_run = 0;
  if (v->mm_on && mm_next(v, slot)) return 1;
  for (;;) {
    int r = av_read_frame(v->fmt, v->pkt);
    if (r < 0) {
      if (r != AVERROR_EOF)
        lt_warn("'%s': read error after frame %d (%s); stopping there", v->path, v->next_index,
                averr(r, eb, sizeof eb));
      return 0;
    }
    if (v->pkt->stream_index != v->stream) {
      av_packet_unref(v->pkt);
      continue;
    }
    if ((v->pkt->flags & AV_PKT_FLAG_CORRUPT) || v->pkt->size < v->raw_stride * v->height) {
      av_packet_unref(v->pkt); /* e.g. a frame cut short by truncation */
      skipped(v, AVERROR_INVALIDDATA);
      if (++error_run > MAX_ERROR_RUN) {
        lt_error("'%s': only corrupt packets after frame %d", v->path, v->next_index);
        return LT_ERR_INPUT;
      }
      continue;
    }
    size_t psize = 0;
    const uint8_t *pal = av_packet_get_side_data(v->pkt, AV_PKT_DATA_PALETTE, &psize);
    if (v->raw_pal && pal && psize >= AVPALETTE_SIZE) {
      uint32_t p32[256];
      memcpy(p32, pal, sizeof p32);
      pal_lut(v, p32);
    }
    const int64_t ts = v->pkt->pts != AV_NOPTS_VALUE ? v->pkt->pts : v->pkt->dts;
    AVPacket *keep = v->ref_pkt ? v->ref_pkt[slot - v->slots] : NULL;
    if (v->zerocopy && keep && v->pkt->buf && v->raw_stride == v->width && !v->raw_flip && !v->raw_pal) {
      av_packet_move_ref(keep, v->pkt); /* the packet is the frame's bytes: kept, no copy */
      bytes_in_place(v, keep->data, slot);
    } else {
      int bytes = rows8(v, v->pkt->data, v->raw_stride, v->raw_flip, v->raw_pal, slot);
      slot->grey8 = bytes ? slot->grey8_buf : NULL;
      av_packet_unref(v->pkt);
    }
    stamp(v, slot, ts);
    return 1;
  }
}

/* After frame 0 (decoded in v->frm, converted into slot): switch to the raw
 * path when frame 0's packet, read as plain rows, gives the same bytes. */
static void raw_check(lt_video *v, const lt_frame *slot)
{
  const char *env = getenv("LT_VIDEO_RAW"); /* 0: always decode (tests compare both) */
  if (!v->raw_first || !slot->grey8 || (env && !strcmp(env, "0"))) return;
  int w = v->width, h = v->height;
  int stride = v->raw_first_size / h;
  if (stride < w || stride * h != v->raw_first_size) return;
  for (int flip = 0; flip <= 1; flip++) {
    int same = 1;
    for (int y = 0; same && y < h; y++) {
      const uint8_t *s = v->raw_first + (size_t)(flip ? h - 1 - y : y) * stride;
      const uint8_t *o = slot->grey8 + (size_t)y * w;
      for (int x = 0; x < w; x++)
        if ((v->raw_pal ? v->lut8[s[x]] : s[x]) != o[x]) {
          same = 0;
          break;
        }
    }
    if (same) {
      v->raw = 1;
      v->raw_stride = stride;
      v->raw_flip = flip;
      lt_debug("'%s': raw 8-bit frames (%s, stride %d%s)", v->path, v->raw_pal ? "pal8" : "gray", stride,
               flip ? ", bottom-up" : "");
      return;
    }
  }
}

/* Decode and convert the next frame into slot: 1, 0 at end, or < 0. */
static int decode_into(lt_video *v, lt_frame *slot)
{
  const ptrdiff_t i = slot - v->slots; /* what the slot held before goes back to FFmpeg */
  av_packet_unref(v->ref_pkt[i]);
  av_frame_unref(v->ref_frm[i]);
  if (v->raw) return raw_next(v, slot);
  int r = decode_next(v);
  if (r <= 0) return r;
  r = convert_frame(v, slot);
  av_frame_unref(v->frm);
  return r < 0 ? r : 1;
}

static void *decode_thread(void *arg)
{
  lt_video *v = arg;
  for (;;) {
    pthread_mutex_lock(&v->mu);
    if (v->count == v->ring && !v->stop) { /* full: sleep until half of it is free */
      v->prod_sleeping = 1;
      while (v->count > v->ring / 2 && !v->stop) pthread_cond_wait(&v->freed, &v->mu);
      v->prod_sleeping = 0;
    }
    int stop = v->stop;
    lt_frame *slot = &v->slots[(v->head + v->count) % v->ring];
    pthread_mutex_unlock(&v->mu);
    if (stop) break;

    int r = decode_into(v, slot);

    pthread_mutex_lock(&v->mu);
    if (r == 1)
      __atomic_store_n(&v->count, v->count + 1, __ATOMIC_RELEASE);
    else if (r == 0)
      __atomic_store_n(&v->eof, 1, __ATOMIC_RELEASE);
    else
      __atomic_store_n(&v->err, r, __ATOMIC_RELEASE);
    if (v->cons_sleeping) pthread_cond_signal(&v->filled);
    pthread_mutex_unlock(&v->mu);
    if (r <= 0) break;
  }
  return NULL;
}

/* ---- open / next / close --------------------------------------------- */

static int check_size(const char *path, long long w, long long h)
{
  if (w < 1 || h < 1 || w > LT_VIDEO_MAX_SIDE || h > LT_VIDEO_MAX_SIDE ||
      w * h > LT_VIDEO_MAX_PIXELS) {
    lt_error("'%s' has unsupported frame size %lldx%lld (limits: 1..%d per side, %lld pixels)",
             path, w, h, LT_VIDEO_MAX_SIDE, (long long)LT_VIDEO_MAX_PIXELS);
    return LT_ERR_INPUT;
  }
  return 0;
}

static int open_stream(lt_video *v)
{
  char eb[128];
  const char *path = v->path;
  /* "-": standard input (FFmpeg's pipe protocol; formats that need to seek
   * back, such as MP4 with the index at the end, cannot be read this way) */
  int r = avformat_open_input(&v->fmt, strcmp(path, "-") ? path : "pipe:0", NULL, NULL);
  if (r < 0) {
    if (r == AVERROR_INVALIDDATA)
      lt_error("cannot open '%s': not a video file FFmpeg recognises", path);
    else
      lt_error("cannot open '%s': %s", path, averr(r, eb, sizeof eb));
    return LT_ERR_INPUT;
  }
  r = avformat_find_stream_info(v->fmt, NULL);
  if (r < 0) {
    lt_error("cannot read the streams of '%s': %s", path, averr(r, eb, sizeof eb));
    return LT_ERR_INPUT;
  }
  const AVCodec *codec = NULL;
  r = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (r == AVERROR_DECODER_NOT_FOUND) {
    lt_error("'%s': no decoder for its video codec", path);
    return LT_ERR_INPUT;
  }
  if (r < 0 || (v->fmt->streams[r]->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
    lt_error("'%s' has no video stream", path);
    return LT_ERR_INPUT;
  }
  v->stream = r;
  AVStream *st = v->fmt->streams[r];
  for (unsigned i = 0; i < v->fmt->nb_streams; i++)
    if ((int)i != r) v->fmt->streams[i]->discard = AVDISCARD_ALL;

  AVCodecParameters *par = st->codecpar;
  if ((par->width != 0 || par->height != 0) && check_size(path, par->width, par->height) < 0)
    return LT_ERR_INPUT;

  v->dec = avcodec_alloc_context3(codec);
  if (!v->dec) {
    lt_error("'%s': out of memory for the decoder", path);
    return LT_ERR_NOMEM;
  }
  r = avcodec_parameters_to_context(v->dec, par);
  if (r < 0) {
    lt_error("'%s': bad codec parameters (%s)", path, averr(r, eb, sizeof eb));
    return LT_ERR_INPUT;
  }
  v->dec->pkt_timebase = st->time_base;
  if (par->codec_id == AV_CODEC_ID_RAWVIDEO && (par->format == AV_PIX_FMT_PAL8 || par->format == AV_PIX_FMT_GRAY8)) {
    v->raw_probe = 1;
    v->raw_pal = par->format == AV_PIX_FMT_PAL8;
  }
  v->dec->thread_count = 0; /* FFmpeg picks */
  r = avcodec_open2(v->dec, codec, NULL);
  if (r < 0) {
    lt_error("'%s': cannot open the %s decoder (%s)", path, codec->name,
             averr(r, eb, sizeof eb));
    return LT_ERR_INPUT;
  }
  v->time_base = st->time_base;
  if (st->start_time != AV_NOPTS_VALUE && st->time_base.den > 0)
    v->start_s = (double)st->start_time * av_q2d(st->time_base);
  AVRational fr = st->avg_frame_rate;
  if (fr.num <= 0 || fr.den <= 0) fr = st->r_frame_rate;
  v->fps = (fr.num > 0 && fr.den > 0) ? av_q2d(fr) : 0.0;
  /* image files store no frame rate: image2 and the *_pipe demuxers use a default */
  const char *dn = v->fmt->iformat->name;
  v->fps_default = !strcmp(dn, "image2") || strstr(dn, "_pipe") != NULL;
  if (st->nb_frames > 0)
    v->frames_hint = v->declared = (long)st->nb_frames;
  else if (v->fmt->duration > 0 && v->fps > 0)
    v->frames_hint = (long)((double)v->fmt->duration / AV_TIME_BASE * v->fps + 0.5);

  v->pkt = av_packet_alloc();
  v->frm = av_frame_alloc();
  if (!v->pkt || !v->frm) {
    lt_error("'%s': out of memory", path);
    return LT_ERR_NOMEM;
  }
  return 0;
}

/* Allocate the ring and scratch buffers for the first frame's size. */
static int alloc_buffers(lt_video *v)
{
  size_t n = (size_t)v->width * (size_t)v->height;
  v->slots = calloc((size_t)v->ring, sizeof *v->slots);
  v->ref_pkt = calloc((size_t)v->ring, sizeof *v->ref_pkt);
  v->ref_frm = calloc((size_t)v->ring, sizeof *v->ref_frm);
  v->line = malloc((size_t)v->width * sizeof *v->line);
  v->rgb_linesize = FFALIGN(v->width * 3, 64);
  v->rgb = av_malloc((size_t)v->rgb_linesize * (size_t)v->height);
  if (!v->slots || !v->ref_pkt || !v->ref_frm || !v->line || !v->rgb) goto nomem;
  for (int i = 0; i < v->ring; i++) {
    v->slots[i].grey = v->slots[i].grey_buf = malloc(n * sizeof(float));
    v->slots[i].grey8_buf = malloc(n);
    v->ref_pkt[i] = av_packet_alloc();
    v->ref_frm[i] = av_frame_alloc();
    if (!v->slots[i].grey_buf || !v->slots[i].grey8_buf || !v->ref_pkt[i] || !v->ref_frm[i]) goto nomem;
  }
  return 0;
nomem:
  lt_error("'%s': out of memory for %d frames of %dx%d", v->path, v->ring, v->width, v->height);
  return LT_ERR_NOMEM;
}

int lt_video_open(lt_video **out, const char *path, lt_channel channel, int ring)
{
  *out = NULL;
  av_log_set_level(lt_log_level() >= LT_LOG_DEBUG ? AV_LOG_VERBOSE : AV_LOG_QUIET);

  lt_video *v = calloc(1, sizeof *v);
  if (!v || !(v->path = strdup(path))) {
    free(v);
    lt_error("out of memory opening '%s'", path);
    return LT_ERR_NOMEM;
  }
  v->channel = channel;
  v->need_float = 1;
  v->ring = ring < 2 ? 2 : ring;
  const char *zc = getenv("LT_VIDEO_ZEROCOPY");
  v->zerocopy = !(zc && !strcmp(zc, "0"));
  v->stream = -1;
  v->sws_cs = v->sws_range = -1;
  int r = pthread_mutex_init(&v->mu, NULL);
  if (r == 0 && (r = pthread_cond_init(&v->filled, NULL)) != 0) pthread_mutex_destroy(&v->mu);
  if (r == 0 && (r = pthread_cond_init(&v->freed, NULL)) != 0) {
    pthread_cond_destroy(&v->filled);
    pthread_mutex_destroy(&v->mu);
  }
  if (r != 0) {
    lt_error("'%s': cannot create thread primitives: %s", path, strerror(r));
    free(v->path);
    free(v);
    return LT_ERR_INTERNAL;
  }

  r = open_stream(v);
  if (r < 0) goto fail;
  r = decode_next(v);
  if (r == 0) {
    lt_error("'%s' contains no decodable video frames", path);
    r = LT_ERR_INPUT;
  }
  if (r < 0) goto fail;
  v->width = v->frm->width;
  v->height = v->frm->height;
  if ((r = check_size(path, v->width, v->height)) < 0) goto fail;
  if ((r = alloc_buffers(v)) < 0) goto fail;
  r = convert_frame(v, &v->slots[0]);
  av_frame_unref(v->frm);
  if (r < 0) goto fail;
  raw_check(v, &v->slots[0]);
  if (v->raw) mm_open(v);
  free(v->raw_first);
  v->raw_first = NULL;
  v->raw_probe = 0;
  v->count = 1;
  lt_debug("'%s': %dx%d %s, %.4g fps, ring of %d frames", path, v->width, v->height,
           v->dec->codec->name, v->fps, v->ring);

  r = pthread_create(&v->thread, NULL, decode_thread, v);
  if (r != 0) {
    lt_error("'%s': cannot start the decode thread: %s", path, strerror(r));
    r = LT_ERR_INTERNAL;
    goto fail;
  }
  v->thread_started = 1;
  *out = v;
  return 0;
fail:
  lt_video_close(v);
  return r;
}

int lt_video_width(const lt_video *v) { return v->width; }
int lt_video_height(const lt_video *v) { return v->height; }
double lt_video_fps(const lt_video *v) { return v->fps; }
long lt_video_frames_hint(const lt_video *v) { return v->frames_hint; }
void lt_video_bytes_only(lt_video *v, int on) { v->need_float = !on; }
int lt_video_fps_is_default(const lt_video *v) { return v->fps_default; }

void lt_video_damage(const lt_video *v, lt_video_damage_info *d)
{
  d->rejected = v->n_skipped;
  d->concealed = v->n_concealed;
  d->declared = v->declared;
  d->expected = v->declared ? v->declared : v->frames_hint;
}

/* The decode thread has a frame, the end or an error (lt_spin_until's
 * test, without the lock: only the decode thread changes them meanwhile). */
static int frame_ready(const void *arg)
{
  lt_video *v = (lt_video *)arg;
  return __atomic_load_n(&v->count, __ATOMIC_ACQUIRE) > 0 || __atomic_load_n(&v->eof, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&v->err, __ATOMIC_ACQUIRE);
}

int lt_video_next(lt_video *v, const lt_frame **frame)
{
  *frame = NULL;
  pthread_mutex_lock(&v->mu);
  if (v->holding) {
    v->head = (v->head + 1) % v->ring;
    __atomic_store_n(&v->count, v->count - 1, __ATOMIC_RELEASE);
    v->holding = 0;
    if (v->prod_sleeping && v->count <= v->ring / 2) pthread_cond_signal(&v->freed);
  }
  if (v->count == 0 && !v->eof && !v->err) { /* a short spin, then sleep */
    pthread_mutex_unlock(&v->mu);
    lt_spin_until(frame_ready, v);
    pthread_mutex_lock(&v->mu);
    v->cons_sleeping = 1;
    while (v->count == 0 && !v->eof && !v->err) pthread_cond_wait(&v->filled, &v->mu);
    v->cons_sleeping = 0;
  }
  int r;
  if (v->count > 0) {
    *frame = &v->slots[v->head];
    v->holding = 1;
    r = 1;
  } else {
    r = v->err ? v->err : 0;
  }
  pthread_mutex_unlock(&v->mu);
  return r;
}

int lt_video_peek(lt_video *v, const lt_frame **frame)
{
  *frame = NULL;
  pthread_mutex_lock(&v->mu);
  const int r = v->holding && v->count >= 2;
  if (r) *frame = &v->slots[(v->head + 1) % v->ring];
  pthread_mutex_unlock(&v->mu);
  return r;
}

void lt_video_close(lt_video *v)
{
  if (!v) return;
  if (v->thread_started) {
    pthread_mutex_lock(&v->mu);
    v->stop = 1;
    pthread_cond_broadcast(&v->freed);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->thread, NULL);
  }
  if (v->n_skipped > 1)
    lt_debug("'%s': %d undecodable packets or frames skipped", v->path, v->n_skipped);
  pthread_cond_destroy(&v->freed);
  pthread_cond_destroy(&v->filled);
  pthread_mutex_destroy(&v->mu);
  if (v->slots)
    for (int i = 0; i < v->ring; i++) {
      free(v->slots[i].grey_buf);
      free(v->slots[i].grey8_buf);
      if (v->ref_pkt) av_packet_free(&v->ref_pkt[i]);
      if (v->ref_frm) av_frame_free(&v->ref_frm[i]);
    }
  free(v->slots);
  free(v->ref_pkt);
  free(v->ref_frm);
  if (v->map) munmap(v->map, v->map_size);
  free(v->raw_first);
  free(v->line);
  av_free(v->rgb);
  sws_freeContext(v->sws);
  av_frame_free(&v->frm);
  av_packet_free(&v->pkt);
  avcodec_free_context(&v->dec);
  avformat_close_input(&v->fmt);
  free(v->path);
  free(v);
}
