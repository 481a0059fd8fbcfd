/* flo.h - Middlebury .flo flow files and the standard flow error measures.
 *
 * .flo layout: "PIEH" (float 202021.25 little-endian), int32 LE width,
 * int32 LE height, then height*width (u, v) float32 LE pairs, row-major,
 * u = +x (right), v = +y (down) in pixels. |value| > 1e9 means unknown.
 *
 * All functions return 0 or a negative lt_err after one lt_error naming the
 * file (or the label given). */
#ifndef LT_FLOW_FLO_H
#define LT_FLOW_FLO_H

#include <stddef.h>

/* Largest .flo accepted by the reader (pixels), the video limit. */
#define LT_FLO_MAX_PIXELS (256LL * 1024 * 1024)
/* |value| above this is "unknown flow" (Middlebury convention). */
#define LT_FLO_UNKNOWN 1e9f

/* Reads PATH into *u and *v (malloc'ed planes of w*h floats, caller frees;
 * both NULL on failure). Strict: a wrong tag, a width or height < 1, more
 * than LT_FLO_MAX_PIXELS, a file shorter (truncated) or longer (trailing
 * bytes) than the header says: LT_ERR_INPUT. Values are not checked (NaN
 * and unknowns are the caller's business, see lt_flow_evaluate).
 * LT_ERR_NOMEM when the planes cannot be allocated. */
int lt_flo_read(const char *path, float **u, float **v, int *w, int *h);

/* Writes PATH atomically (temporary in the same folder, renamed when
 * complete; "-" is stdout). 0 or LT_ERR_OUTPUT / LT_ERR_USAGE (bad size). */
int lt_flo_write(const char *path, const float *u, const float *v, int w, int h);

/* The .flo bytes of (u, v): 12 + 8 w h bytes at out. */
void lt_flo_pack(unsigned char *out, const float *u, const float *v, int w, int h);

/* Background writer of a sequence of same-size .flo files, so that writing
 * (each file atomic and fsync'ed, outfile.h: milliseconds per file) is not
 * what limits the frame rate: put copies the flow into a free slot (packed,
 * one fwrite per file) and returns; `threads` threads write the queued
 * files, in queue order, 2 slots per thread (fewer when that would exceed
 * LT_FLO_WRITER_MAX_BYTES, at least 2); put waits while every slot is in
 * use. Every buffer is allocated by start. A failed write stops the queue:
 * put and finish return the first error (the file's own message was
 * printed). finish waits for every queued file, stops the threads and frees
 * the writer (NULL is accepted). */
#define LT_FLO_WRITER_MAX_THREADS 8
#define LT_FLO_WRITER_MAX_BYTES ((size_t)256 << 20)
typedef struct lt_flo_writer lt_flo_writer;
int lt_flo_writer_start(lt_flo_writer **wr, int w, int h, int threads, size_t pathmax);
int lt_flo_writer_put(lt_flo_writer *wr, const char *path, const float *u, const float *v);
int lt_flo_writer_finish(lt_flo_writer *wr);

typedef struct lt_flow_error {
  double aee;   /* average endpoint error |w - w_gt| (pixels) */
  double aae;   /* average angular error (degrees), Barron et al.: the angle
                   between (u, v, 1) and (u_gt, v_gt, 1) */
  long long n;  /* pixels counted */
} lt_flow_error;

/* Errors of (u, v) against (gu, gv) over pixels where mask != 0 (mask may
 * be NULL: every pixel) and the ground truth is known (|gu|, |gv| <= 1e9).
 * Sums in double, in pixel order. LT_ERR_INPUT (message names gt_name) when
 * the ground truth holds NaN or when no pixel is counted; LT_ERR_INTERNAL
 * when the estimate holds NaN/inf at a counted pixel. */
int lt_flow_evaluate(const float *u, const float *v, const float *gu, const float *gv, const float *mask, int w,
                     int h, const char *gt_name, lt_flow_error *out);

#endif
