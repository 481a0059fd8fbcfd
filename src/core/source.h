/* source.h - one "source of frames" for every mode: a video (anything FFmpeg
 * decodes, including image2 patterns such as IM0_%02d.jpg, with its decode
 * thread and ring, io/video.h) or a list of image files (a pair A B or a
 * sequence, each read through FFmpeg, all of one size), or a multi-page TIFF
 * stack (ImageJ, OME-TIFF: one page per frame, read with libtiff one page at a
 * time; frame rate and pixel size from its metadata). Frames are
 * single-channel float 0..255 (+ bytes when 8-bit), row 0 = top. */
#ifndef LT_SOURCE_H
#define LT_SOURCE_H

#include "video.h"

typedef struct lt_source lt_source;

/* n == 1: a video; n >= 2: image files, frame i = file i. ring: frames
 * decoded ahead (video). Returns 0 or a negative lt_err (reported). */
int lt_source_open(lt_source **out, const char *const *paths, int n, lt_channel channel, int ring);
int lt_source_width(const lt_source *s);
int lt_source_height(const lt_source *s);
double lt_source_fps(const lt_source *s);       /* 0 = unknown */
long lt_source_frames_hint(const lt_source *s); /* from the header, for ETA only; 0 = unknown */
const char *lt_source_name(const lt_source *s); /* the (first) path */
/* As lt_video_next / lt_video_peek. */
int lt_source_next(lt_source *s, const lt_frame **f);
int lt_source_peek(lt_source *s, const lt_frame **f);
/* The frame rate is a default (image sequence), see lt_video_fps_is_default. */
int lt_source_fps_is_default(const lt_source *s);
/* Where the frame rate came from: "the container", "the TIFF's ImageJ
 * metadata", "the OME-TIFF metadata"; NULL when it is a default or unknown. */
const char *lt_source_fps_origin(const lt_source *s);
/* Pixel size in micrometres from a TIFF stack's metadata (0 = unknown), and
 * where it came from ("the TIFF's ImageJ metadata"; NULL when unknown). */
double lt_source_um_per_px(const lt_source *s);
int lt_source_is_tiff(const lt_source *s); /* a multi-page TIFF stack */
const char *lt_source_meta_origin(const lt_source *s);
/* Decode damage so far (zero for image lists: a bad image is an error). */
void lt_source_damage(const lt_source *s, lt_video_damage_info *d);
/* 8-bit video frames as bytes only from now on (lt_video_bytes_only). */
void lt_source_bytes_only(lt_source *s);
/* The memory map of a video input (lt_video_map): 1, or 0 (none). */
int lt_source_map(const lt_source *s, const void **base, size_t *size);
void lt_source_close(lt_source *s);

/* Frames with pixel buffers of their own (grey_buf, grey8_buf): the image
 * list and TIFF readers' current frame, the loop's previous frame.
 * lt_frame_own allocates them for w x h on the first call (grey = grey_buf);
 * lt_frame_copy copies src (grey and/or grey8, index, t_s) into them;
 * lt_frame_release frees them. 0 or LT_ERR_NOMEM after one message. */
int lt_frame_own(lt_frame *f, int w, int h, const char *what);
int lt_frame_copy(lt_frame *dst, const lt_frame *src, const char *what);
void lt_frame_release(lt_frame *f);

#endif
