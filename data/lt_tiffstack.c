/* lt_tiffstack.c - writes a multi-page TIFF stack from a video (read with
 * leuktrack's video layer), as ImageJ or an OME-TIFF writer would: one page
 * per frame, ImageJ metadata (ImageDescription "ImageJ=...\nimages=N\n
 * frames=N\nfinterval=F\nunit=micron\n", XResolution = pixels per micron) or
 * an OME-XML ImageDescription (Pixels TimeIncrement, PhysicalSizeX). Used by
 * tests/test_tiff.sh (Debian's python3 has no tifffile by default).
 *   lt_tiffstack VIDEO OUT.tif [--bits 8|16] [--rgb] [--finterval S]
 *     [--um-per-px U] [--ome] [--tunit ms] [--resize-page K] [--pages N] [--tiled]
 * --rgb: R = 40 (flat), G = v, B = v / 2 (so --channel g reads v back);
 * --bits 16: v * 257; --resize-page K: page K (0-based) 2 px narrower;
 * no --finterval/--um-per-px/--ome: no metadata at all. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "video.h"

#ifdef LT_HAVE_TIFF
#include <tiffio.h>

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: lt_tiffstack VIDEO OUT.tif [--bits 8|16] [--rgb] [--finterval S] [--um-per-px U] "
                    "[--ome] [--tunit ms] [--resize-page K] [--pages N] [--tiled]\n");
    return 2;
  }
  int bits = 8, rgb = 0, ome = 0, resize = -1, pages = 1 << 30, tiled = 0;
  double fi = 0, um = 0;
  const char *tunit = "s";
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
    if (!strcmp(a, "--bits")) bits = atoi(v), i++;
    else if (!strcmp(a, "--rgb")) rgb = 1;
    else if (!strcmp(a, "--ome")) ome = 1;
    else if (!strcmp(a, "--tiled")) tiled = 1;
    else if (!strcmp(a, "--finterval")) fi = atof(v), i++;
    else if (!strcmp(a, "--um-per-px")) um = atof(v), i++;
    else if (!strcmp(a, "--tunit")) tunit = v, i++;
    else if (!strcmp(a, "--resize-page")) resize = atoi(v), i++;
    else if (!strcmp(a, "--pages")) pages = atoi(v), i++;
    else {
      fprintf(stderr, "lt_tiffstack: unknown option %s\n", a);
      return 2;
    }
  }
  /* frames first: ImageJ's description states their number */
  lt_video *vid;
  if (lt_video_open(&vid, argv[1], LT_CHANNEL_LUMA, 2)) return 3;
  int w = lt_video_width(vid), h = lt_video_height(vid), n = 0;
  uint8_t *all = NULL;
  const lt_frame *f;
  while (n < pages && lt_video_next(vid, &f) == 1) {
    uint8_t *b = realloc(all, (size_t)(n + 1) * w * h);
    if (!b) return 1;
    all = b;
    for (size_t i = 0; i < (size_t)w * h; i++) {
      float x = f->grey ? f->grey[i] : f->grey8[i];
      all[(size_t)n * w * h + i] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x + 0.5f);
    }
    n++;
  }
  lt_video_close(vid);
  char desc[2048] = "";
  if (ome) {
    snprintf(desc, sizeof desc,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/"
             "2016-06\"><Image ID=\"Image:0\" Name=\"stack\"><Pixels ID=\"Pixels:0\" DimensionOrder=\"XYZCT\" "
             "Type=\"%s\" SizeX=\"%d\" SizeY=\"%d\" SizeZ=\"1\" SizeC=\"1\" SizeT=\"%d\" PhysicalSizeX=\"%g\" "
             "PhysicalSizeXUnit=\"\xc2\xb5m\" PhysicalSizeY=\"%g\" TimeIncrement=\"%g\" TimeIncrementUnit=\"%s\">"
             "<TiffData/></Pixels></Image></OME>",
             bits == 16 ? "uint16" : "uint8", w, h, n, um, um, fi, tunit);
  } else if (fi > 0 || um > 0) {
    int l = snprintf(desc, sizeof desc, "ImageJ=1.54f\nimages=%d\nframes=%d\n", n, n);
    if (fi > 0) l += snprintf(desc + l, sizeof desc - l, "finterval=%g\n", fi);
    if (um > 0) l += snprintf(desc + l, sizeof desc - l, "unit=micron\n");
    snprintf(desc + l, sizeof desc - l, "loop=false\n");
  }
  TIFF *t = TIFFOpen(argv[2], "w");
  if (!t) return 1;
  int spp = rgb ? 3 : 1, bps = bits == 16 ? 2 : 1;
  uint8_t *row = malloc((size_t)w * spp * bps * 16 + 64);
  for (int p = 0; p < n; p++) {
    int pw = p == resize ? w - 2 : w;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)pw);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)h);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, rgb ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_SUBFILETYPE, 0);
    if (p == 0 && desc[0]) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, desc);
    if (um > 0) {
      TIFFSetField(t, TIFFTAG_XRESOLUTION, (float)(1.0 / um));
      TIFFSetField(t, TIFFTAG_YRESOLUTION, (float)(1.0 / um));
      TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, ome ? RESUNIT_CENTIMETER : RESUNIT_NONE);
    }
    const uint8_t *src = all + (size_t)p * w * h;
    if (tiled) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
      TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
      size_t ts = (size_t)16 * 16 * spp * bps;
      uint8_t *tile = malloc(ts);
      for (int ty = 0; ty < h; ty += 16)
        for (int tx = 0; tx < pw; tx += 16) {
          memset(tile, 0, ts);
          for (int y = ty; y < ty + 16 && y < h; y++)
            for (int x = tx; x < tx + 16 && x < pw; x++)
              for (int k = 0; k < spp; k++) {
                int v = src[(size_t)y * w + x];
                int c = !rgb ? v : k == 0 ? 40 : k == 1 ? v : v / 2;
                size_t o = (((size_t)(y - ty) * 16 + (x - tx)) * spp + k);
                if (bps == 2) ((uint16_t *)tile)[o] = (uint16_t)(c * 257);
                else tile[o] = (uint8_t)c;
              }
          TIFFWriteTile(t, tile, (uint32_t)tx, (uint32_t)ty, 0, 0);
        }
      free(tile);
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, (uint32_t)8);
      for (int y = 0; y < h; y++) {
        for (int x = 0; x < pw; x++)
          for (int k = 0; k < spp; k++) {
            int v = src[(size_t)y * w + x];
            int c = !rgb ? v : k == 0 ? 40 : k == 1 ? v : v / 2;
            size_t o = (size_t)x * spp + k;
            if (bps == 2) ((uint16_t *)row)[o] = (uint16_t)(c * 257);
            else row[o] = (uint8_t)c;
          }
        if (TIFFWriteScanline(t, row, (uint32_t)y, 0) < 0) return 1;
      }
    }
    if (!TIFFWriteDirectory(t)) return 1;
  }
  TIFFClose(t);
  free(row);
  free(all);
  fprintf(stderr, "lt_tiffstack: %s: %d pages %dx%d, %d-bit%s\n", argv[2], n, w, h, bits, rgb ? " RGB" : "");
  return 0;
}
#else
int main(void)
{
  fprintf(stderr, "lt_tiffstack: built without libtiff\n");
  return 1;
}
#endif
