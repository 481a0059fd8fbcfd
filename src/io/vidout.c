/* vidout.c - the overlay video (vidout.h): RGB -> yuv420p (swscale) ->
 * MPEG-4 Part 2 (libavcodec) -> MP4 / Matroska (libavformat). */
#include "vidout.h"

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

struct lt_vidout {
  AVFormatContext *oc;
  AVCodecContext *cc;
  AVStream *st;
  struct SwsContext *sws;
  AVFrame *fr;
  AVPacket *pkt;
  int w, h, W, H;  /* frame size, encoded (even) size */
  uint8_t *pad;    /* W*H*3 + padding: the frame, its size made even (swscale's
                      SIMD reads up to 16 bytes past the last pixel) */
  int64_t next_pts;
  char *path, *tmp;
  int header;      /* header written: a trailer is due */
};

static const char *container(const char *path)
{
  const char *dot = strrchr(path, '.');
  if (dot && !strcasecmp(dot, ".mp4")) return "mp4";
  if (dot && !strcasecmp(dot, ".mkv")) return "matroska";
  return NULL;
}

int lt_vidout_check_name(const char *opt, const char *path)
{
  if (container(path)) return 0;
  lt_error("%s '%s': unknown video type; give a name ending in .mp4 or .mkv", opt, path);
  return LT_ERR_USAGE;
}

static int averr(const char *what, const char *path, int e)
{
  char buf[AV_ERROR_MAX_STRING_SIZE] = "";
  av_strerror(e, buf, sizeof buf);
  lt_error("overlay video '%s': %s failed: %s", path, what, buf);
  return LT_ERR_INTERNAL;
}

/* Sends frame (NULL: flush) and writes every packet the encoder returns. */
static int encode(lt_vidout *v, AVFrame *frame)
{
  int e = avcodec_send_frame(v->cc, frame);
  if (e < 0) return averr("encoding", v->path, e);
  for (;;) {
    e = avcodec_receive_packet(v->cc, v->pkt);
    if (e == AVERROR(EAGAIN) || e == AVERROR_EOF) return 0;
    if (e < 0) return averr("encoding", v->path, e);
    av_packet_rescale_ts(v->pkt, v->cc->time_base, v->st->time_base);
    v->pkt->stream_index = v->st->index;
    e = av_interleaved_write_frame(v->oc, v->pkt);
    av_packet_unref(v->pkt);
    if (e < 0) {
      char buf[AV_ERROR_MAX_STRING_SIZE] = "";
      av_strerror(e, buf, sizeof buf);
      lt_error("cannot write the overlay video '%s': %s", v->path, buf);
      return LT_ERR_OUTPUT;
    }
  }
}

static void release(lt_vidout *v)
{
  if (!v) return;
  if (v->oc) {
    if (v->oc->pb) avio_closep(&v->oc->pb);
    avformat_free_context(v->oc);
  }
  avcodec_free_context(&v->cc);
  sws_freeContext(v->sws);
  av_frame_free(&v->fr);
  av_packet_free(&v->pkt);
  free(v->pad);
  free(v->path);
  free(v->tmp);
  free(v);
}

int lt_vidout_open(lt_vidout **out, const char *path, int width, int height, double fps)
{
  *out = NULL;
  const char *fmt = container(path);
  if (!fmt) return lt_vidout_check_name("--overlay-video", path);
  const AVOutputFormat *of = av_guess_format(fmt, NULL, NULL);
  const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (!of || !codec) {
    lt_error("--overlay-video '%s': this leuktrack's FFmpeg (%s) has no %s%s%s; the portable build's "
             "minimal static FFmpeg is made without encoders: rebuild it with scripts/build-ffmpeg-static.sh "
             "(which now adds the mpeg4 encoder and the mp4/matroska muxers) and run make portable again, or use "
             "a build against the system's FFmpeg; --overlay DIR writes PNGs",
             path, av_version_info(), !codec ? "MPEG-4 encoder" : "", !codec && !of ? " and no " : "",
             !of ? (strcmp(fmt, "mp4") ? "Matroska muxer" : "MP4 muxer") : "");
    return LT_ERR_USAGE;
  }
  lt_vidout *v = calloc(1, sizeof *v);
  if (!v) goto nomem;
  v->w = width, v->h = height;
  v->W = width + (width & 1), v->H = height + (height & 1);
  size_t n = strlen(path) + 32;
  v->path = strdup(path);
  v->tmp = malloc(n);
  v->fr = av_frame_alloc();
  v->pkt = av_packet_alloc();
  if (!(v->pad = calloc((size_t)v->W * v->H * 3 + 64, 1))) goto nomem;
  if (!v->path || !v->tmp || !v->fr || !v->pkt) goto nomem;
  snprintf(v->tmp, n, "%s.tmp.%ld", path, (long)getpid());

  int e = avformat_alloc_output_context2(&v->oc, (AVOutputFormat *)of, NULL, v->tmp);
  if (e < 0 || !v->oc) goto nomem;
  if (!(v->st = avformat_new_stream(v->oc, NULL)) || !(v->cc = avcodec_alloc_context3(codec))) goto nomem;
  AVRational rate = av_d2q(fps > 0 ? fps : 25.0, 65535); /* MPEG-4 time bases stop at 65535 */
  v->cc->width = v->W;
  v->cc->height = v->H;
  v->cc->pix_fmt = AV_PIX_FMT_YUV420P;
  v->cc->time_base = av_inv_q(rate);
  v->cc->framerate = rate;
  v->cc->gop_size = 12;
  v->cc->flags |= AV_CODEC_FLAG_QSCALE;
  v->cc->global_quality = FF_QP2LAMBDA * 3;
  if (v->oc->oformat->flags & AVFMT_GLOBALHEADER) v->cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if ((e = avcodec_open2(v->cc, codec, NULL)) < 0) {
    release(v);
    return averr("opening the MPEG-4 encoder", path, e);
  }
  if ((e = avcodec_parameters_from_context(v->st->codecpar, v->cc)) < 0) goto nomem;
  v->st->time_base = v->cc->time_base;
  v->st->avg_frame_rate = rate;
  if ((e = avio_open(&v->oc->pb, v->tmp, AVIO_FLAG_WRITE)) < 0) {
    char buf[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(e, buf, sizeof buf);
    lt_error("cannot write the overlay video '%s': %s", path, buf);
    release(v);
    return LT_ERR_OUTPUT;
  }
  if ((e = avformat_write_header(v->oc, NULL)) < 0) {
    averr("writing the header", path, e);
    lt_vidout_close(v, LT_VIDOUT_DISCARD);
    return LT_ERR_OUTPUT;
  }
  v->header = 1;
  v->sws = sws_getContext(v->W, v->H, AV_PIX_FMT_RGB24, v->W, v->H, AV_PIX_FMT_YUV420P,
                          SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
  v->fr->format = AV_PIX_FMT_YUV420P;
  v->fr->width = v->W;
  v->fr->height = v->H;
  if (!v->sws || av_frame_get_buffer(v->fr, 0) < 0) {
    lt_vidout_close(v, LT_VIDOUT_DISCARD);
    lt_error("out of memory (overlay video '%s')", path);
    return LT_ERR_NOMEM;
  }
  *out = v;
  return 0;
nomem:
  release(v);
  lt_error("out of memory (overlay video '%s')", path);
  return LT_ERR_NOMEM;
}

int lt_vidout_frame(lt_vidout *v, const uint8_t *rgb)
{
  for (int y = 0; y < v->H; y++) { /* odd sizes: repeat the last column and row */
    const uint8_t *s = rgb + (size_t)(y < v->h ? y : v->h - 1) * v->w * 3;
    uint8_t *d = v->pad + (size_t)y * v->W * 3;
    memcpy(d, s, (size_t)v->w * 3);
    if (v->W > v->w) memcpy(d + (size_t)v->w * 3, s + (size_t)(v->w - 1) * 3, 3);
  }
  const uint8_t *src = v->pad;
  if (av_frame_make_writable(v->fr) < 0) {
    lt_error("out of memory (overlay video '%s')", v->path);
    return LT_ERR_NOMEM;
  }
  const uint8_t *planes[1] = {src};
  const int strides[1] = {v->W * 3};
  sws_scale(v->sws, planes, strides, 0, v->H, v->fr->data, v->fr->linesize);
  v->fr->pts = v->next_pts++;
  return encode(v, v->fr);
}

int lt_vidout_close(lt_vidout *v, int how)
{
  if (!v) return 0;
  if (how == LT_VIDOUT_PARTIAL && v->next_pts == 0) how = LT_VIDOUT_DISCARD; /* nothing worth keeping */
  int err = 0;
  if (v->header) {
    if (how != LT_VIDOUT_DISCARD) err = encode(v, NULL);
    int e = av_write_trailer(v->oc);
    if (!err && e < 0 && how != LT_VIDOUT_DISCARD) err = averr("writing the trailer", v->path, e);
  }
  if (v->oc && v->oc->pb && avio_closep(&v->oc->pb) < 0 && !err && how != LT_VIDOUT_DISCARD) {
    lt_error("cannot write the overlay video '%s': closing the file failed", v->path);
    err = LT_ERR_OUTPUT;
  }
  if (!err && how != LT_VIDOUT_DISCARD) {
    char *dst = v->path;
    char *partial = NULL;
    if (how == LT_VIDOUT_PARTIAL && (partial = malloc(strlen(v->path) + 9)))
      sprintf(dst = partial, "%s.partial", v->path);
    if (rename(v->tmp, dst) != 0) {
      lt_error("cannot write the overlay video '%s': %s", dst, strerror(errno));
      err = LT_ERR_OUTPUT;
    }
    free(partial);
  }
  if (err || how == LT_VIDOUT_DISCARD) remove(v->tmp);
  release(v);
  return err;
}
