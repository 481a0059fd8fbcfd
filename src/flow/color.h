/* color.h - the Middlebury colour coding of a flow field (Baker et al.,
 * flow-code/colorcode.cpp): hue = direction on a 55-colour wheel
 * (RY 15, YG 6, GC 4, CB 11, BM 13, MR 6), saturation = magnitude / max
 * magnitude (white = no motion), beyond the normalisation darkened to 75%.
 * Right is red, down yellow, left cyan, up blue-violet. Unknown flow
 * (|value| > 1e9, or not finite) is black. */
#ifndef LT_FLOW_COLOR_H
#define LT_FLOW_COLOR_H

#include <stdint.h>

/* Colour of one flow vector already divided by the normalisation; rgb[3]. */
void lt_flow_color_pixel(float fx, float fy, uint8_t rgb[3]);

/* rgb (w*h*3 bytes, row-major RGB) = colour code of (u, v). maxmag > 0 is
 * the magnitude shown fully saturated; maxmag <= 0 uses the field's largest
 * known magnitude (1 if the field is all zero). Returns the magnitude used. */
float lt_flow_color(const float *u, const float *v, int w, int h, float maxmag, uint8_t *rgb);

/* Draws the legend: a colour wheel of the given radius (<= 0: a tenth of
 * the smaller side, at least 8) in the top-right corner, 2 pixels in from
 * the border; pixels outside the disc are left alone. */
void lt_flow_color_legend(uint8_t *rgb, int w, int h, int radius);

#endif
