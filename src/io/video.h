/* video.h - streaming video input through libavformat/libavcodec/libswscale.
 *
 * Any container/codec FFmpeg decodes (AVI rawvideo incl. pal8 bottom-up,
 * MJPEG, H.264, FFV1, image2 PNG sequences, ...). Frames become single-channel
 * float in 0..255 (luma, or one colour channel), row 0 = top of the picture.
 * A decode thread fills a small ring of frames so decoding overlaps compute;
 * memory is flat whatever the video length. Frame index = decode order from 0;
 * t_s = pts in seconds when the container has one, else index / fps, else
 * index (and has_time = 0). The number of frames comes from decoding, never
 * from the header. */
#ifndef LT_VIDEO_H
#define LT_VIDEO_H

#include <stddef.h>
#include <stdint.h>

typedef enum { LT_CHANNEL_LUMA = 0, LT_CHANNEL_R, LT_CHANNEL_G, LT_CHANNEL_B } lt_channel;

typedef struct lt_frame {
  int index;      /* 0-based decode order */
  double t_s;     /* seconds */
  int width, height;
  float *grey;    /* width*height, row-major, 0..255, row 0 = top; NULL only
                     for an 8-bit frame after lt_video_bytes_only(v, 1) */
  const uint8_t *grey8; /* the same pixels as bytes when every one is an integer
                           0..255 (8-bit video; made by the decode thread so a
                           GPU backend uploads a quarter of the bytes), else NULL;
                           read-only: it may point into FFmpeg's packet or frame
                           or into the memory-mapped file (video.c) */
  uint8_t *grey8_buf;   /* internal */
  float *grey_buf;      /* internal */
} lt_frame;

typedef struct lt_video lt_video;

/* Largest accepted frame side and area; bigger inputs are LT_ERR_INPUT. */
#define LT_VIDEO_MAX_SIDE 32768
#define LT_VIDEO_MAX_PIXELS (256LL * 1024 * 1024)

/* Opens PATH ("-" = standard input), checks it has a decodable video stream of sane size, decodes
 * the first frame (so a file with zero decodable frames fails here with
 * LT_ERR_INPUT "... contains no decodable video frames"), and starts the
 * decode thread with a ring of RING frames (>= 2). Returns 0 or a negative
 * lt_err after one lt_error() naming the file and the problem. */
int lt_video_open(lt_video **out, const char *path, lt_channel channel, int ring);

int lt_video_width(const lt_video *v);
int lt_video_height(const lt_video *v);
/* Average frame rate from the container, 0 if unknown. */
double lt_video_fps(const lt_video *v);
/* Number of frames the header announces (for a progress ETA only; the real
 * count comes from decoding), 0 if it says nothing. */
long lt_video_frames_hint(const lt_video *v);

/* Next frame in decode order. Returns 1 and sets *frame (valid until the
 * next call or close), 0 at the end of the stream, or a negative lt_err after
 * an lt_error() (e.g. a corrupt packet mid-stream that the decoder cannot
 * recover from, or a frame whose size changed). */
int lt_video_next(lt_video *v, const lt_frame **frame);

/* The frame after the one lt_video_next returned last, if it is decoded
 * already (never waits): returns 1 and sets *frame, which the next
 * lt_video_next returns and which stays valid as long as that one, else 0. */
int lt_video_peek(lt_video *v, const lt_frame **frame);
/* on = 1: frames that are 8-bit come as bytes only (grey8 set, grey NULL),
 * saving the decode thread the float conversion, for a consumer that reads
 * only grey8 when it is set (a GPU backend). Takes effect for the frames
 * decoded after the call. */
void lt_video_bytes_only(lt_video *v, int on);
/* The memory map the frames' bytes (grey8) come from after frame 0 (a
 * YUV4MPEG2 grey file read through a map): 1 with its start and size, or 0
 * (none). The map and its bytes stay until lt_video_close, so a GPU
 * backend may register it and copy frames straight out of it. */
int lt_video_map(const lt_video *v, const void **base, size_t *size);
/* 1 when the frame rate is only the demuxer's default (image sequences:
 * image files store none). */
int lt_video_fps_is_default(const lt_video *v);
/* Damage seen so far: packets or frames the decoder rejected (skipped),
 * frames it returned with errors concealed, and the number of frames the
 * container declares (0 = unknown; compare with the frames decoded at the
 * end). Read it after the last lt_video_next. */
typedef struct lt_video_damage_info {
  int rejected, concealed;
  long declared;  /* nb_frames of the header, 0 = not stored */
  long expected;  /* declared, else estimated from the duration (approximate) */
} lt_video_damage_info;
void lt_video_damage(const lt_video *v, lt_video_damage_info *d);
/* Stops the decode thread and frees everything. NULL is accepted. */
void lt_video_close(lt_video *v);

#endif
