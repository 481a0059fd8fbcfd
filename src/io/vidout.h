/* vidout.h - a video of RGB frames (the overlays) through libavcodec and
 * libavformat: MPEG-4 Part 2 (FFmpeg's own encoder, no external library),
 * yuv420p at a fixed quantiser (q 3), one key frame every 12 frames, in an
 * MP4 or Matroska file chosen by the name's extension (.mp4, .mkv). Frames of
 * odd width or height are padded to even sizes by repeating the last
 * column/row. The file is written under a temporary name in the same folder
 * and renamed when closed with LT_VIDOUT_COMMIT. */
#ifndef LT_VIDOUT_H
#define LT_VIDOUT_H

#include <stdint.h>

typedef struct lt_vidout lt_vidout;

/* 0 when path ends in .mp4 or .mkv (any case), else LT_ERR_USAGE after one
 * message naming `opt`. */
int lt_vidout_check_name(const char *opt, const char *path);

/* Opens path for width x height frames at fps (25 when fps <= 0). Returns 0
 * or: LT_ERR_USAGE when this build's FFmpeg lacks the MPEG-4 encoder or the
 * container's muxer (the portable build's minimal static FFmpeg; the message
 * says how to get them), LT_ERR_OUTPUT when the file cannot be created,
 * LT_ERR_NOMEM, LT_ERR_INTERNAL (an encoder failure); one message each. */
int lt_vidout_open(lt_vidout **v, const char *path, int width, int height, double fps);

/* Encodes one frame (rgb: width*height*3, row 0 = top); frames are shown at
 * the fixed rate in the order given. Returns 0 or a negative lt_err. */
int lt_vidout_frame(lt_vidout *v, const uint8_t *rgb);

enum { LT_VIDOUT_DISCARD = 0, LT_VIDOUT_COMMIT, LT_VIDOUT_PARTIAL };
/* Flushes and closes: COMMIT renames to the path, PARTIAL to path.partial
 * (an interrupted run; removed when no frame was written), DISCARD removes
 * the file. Frees v (NULL is fine).
 * Returns 0 or a negative lt_err (the file is then removed). */
int lt_vidout_close(lt_vidout *v, int how);

#endif
