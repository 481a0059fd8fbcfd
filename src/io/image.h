/* image.h - PNG (libpng) and PGM/PPM read/write.
 * Read: 8/16-bit, grey/grey+alpha/RGB/RGBA/palette PNG, binary P5/P6 PNM;
 * result is single-channel float 0..255 (luma or one channel, 16-bit scaled
 * to 0..255), row 0 = top. Write: 8-bit grey, RGB or palette PNG, written to a
 * temporary name and renamed (never half-written). All return 0 or a
 * negative lt_err after one lt_error() naming the file. */
#ifndef LT_IMAGE_H
#define LT_IMAGE_H

#include <stdint.h>

#include "video.h" /* lt_channel */

/* *px is malloc'ed (caller frees). */
int lt_image_read(const char *path, lt_channel channel, float **px, int *width, int *height);
int lt_png_write_grey(const char *path, const uint8_t *px, int width, int height);
int lt_png_write_rgb(const char *path, const uint8_t *rgb, int width, int height);
/* 8-bit palette PNG: idx[width*height] index pal[3*npal] (RGB, npal <= 256). */
int lt_png_write_palette(const char *path, const uint8_t *idx, int width, int height, const uint8_t *pal, int npal);

#endif
