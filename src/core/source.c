/* source.c - the source of frames (source.h): a video, image files read
 * one by one through the video layer (first frame of each), or a multi-page
 * TIFF stack read page by page with libtiff. */
#include "source.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#ifdef LT_HAVE_TIFF
#include <tiffio.h>
#endif

#include "error.h"
#include "log.h"

struct lt_source {
  const char *const *paths;
  int n, next;
  lt_channel channel;
  lt_video *video;   /* n == 1 */
  int width, height;
  double fps;
  long hint;
  lt_frame frame;    /* image list, TIFF: the current frame (own buffers) */
  /* TIFF stack */
  int meta;          /* 0 none, 1 ImageJ, 2 OME */
  double um_per_px;  /* 0 = unknown */
  long meta_frames;  /* ImageJ images= */
  int channels, slices;
  int ndirs, tiff_bad, fps_default;
#ifdef LT_HAVE_TIFF
  TIFF *tif;
  int tiff_next, tiff_end;
  void *scan;
  tmsize_t scan_n;
  uint32_t *rgba;
  size_t rgba_n;
#endif
};

/* ---- multi-page TIFF stacks (ImageJ, OME-TIFF) through libtiff ------- */

/* Owned pixel buffers of a frame for w x h (allocated on the first call;
 * grey points at them). 0 or LT_ERR_NOMEM after one message naming what. */
int lt_frame_own(lt_frame *f, int w, int h, const char *what)
{
  if (!f->grey_buf) {
    size_t np = (size_t)w * h;
    f->grey_buf = malloc(np * sizeof(float));
    f->grey8_buf = malloc(np);
    if (!f->grey_buf || !f->grey8_buf) {
      lt_error("out of memory for %s (%dx%d)", what, w, h);
      return LT_ERR_NOMEM;
    }
  }
  f->grey = f->grey_buf;
  f->width = w;
  f->height = h;
  return 0;
}

int lt_frame_copy(lt_frame *dst, const lt_frame *src, const char *what)
{
  int err = lt_frame_own(dst, src->width, src->height, what);
  if (err) return err;
  size_t np = (size_t)src->width * src->height;
  dst->grey = NULL;
  if (src->grey) {
    memcpy(dst->grey_buf, src->grey, np * sizeof(float));
    dst->grey = dst->grey_buf;
  }
  dst->grey8 = NULL;
  if (src->grey8) {
    memcpy(dst->grey8_buf, src->grey8, np);
    dst->grey8 = dst->grey8_buf;
  }
  dst->index = src->index;
  dst->t_s = src->t_s;
  return 0;
}

void lt_frame_release(lt_frame *f)
{
  free(f->grey_buf);
  free(f->grey8_buf);
  f->grey = f->grey_buf = NULL;
  f->grey8 = f->grey8_buf = NULL;
}

static int is_tiff_name(const char *p)
{
  const char *d = strrchr(p, '.');
  return d && (!strcasecmp(d, ".tif") || !strcasecmp(d, ".tiff"));
}

/* "the TIFF's ImageJ metadata" and the like, for -v */
static const char *const META_NAME[] = {NULL, "the TIFF's ImageJ metadata", "the OME-TIFF metadata"};

#ifdef LT_HAVE_TIFF
/* Length unit -> micrometres (0 = unknown). */
static double unit_um(const char *u, size_t n)
{
  static const struct { const char *name; double um; } U[] = {
      {"micron", 1}, {"microns", 1}, {"um", 1}, {"\xc2\xb5m", 1}, {"\xce\xbcm", 1}, {"\\u00B5m", 1},
      {"nm", 1e-3}, {"nanometer", 1e-3}, {"mm", 1e3}, {"cm", 1e4}, {"m", 1e6}, {"pm", 1e-6}};
  for (size_t i = 0; i < sizeof U / sizeof U[0]; i++)
    if (strlen(U[i].name) == n && !strncmp(u, U[i].name, n)) return U[i].um;
  return 0;
}

/* Time unit -> seconds (0 = unknown). */
static double unit_s(const char *u, size_t n)
{
  static const struct { const char *name; double s; } U[] = {
      {"s", 1}, {"sec", 1}, {"second", 1}, {"seconds", 1}, {"ms", 1e-3}, {"msec", 1e-3},
      {"\xc2\xb5s", 1e-6}, {"us", 1e-6}, {"min", 60}, {"h", 3600}, {"hr", 3600}};
  for (size_t i = 0; i < sizeof U / sizeof U[0]; i++)
    if (strlen(U[i].name) == n && !strncmp(u, U[i].name, n)) return U[i].s;
  return 0;
}

/* ImageJ: "key=value" lines. Returns the value's start and length, or NULL. */
static const char *ij_value(const char *d, const char *key, size_t *n)
{
  size_t k = strlen(key);
  for (const char *l = d; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (!strncmp(l, key, k) && l[k] == '=') {
      const char *v = l + k + 1;
      *n = strcspn(v, "\r\n");
      return v;
    }
  }
  return NULL;
}

/* OME-XML: the value of attribute NAME inside the first <Pixels ...> tag. */
static const char *ome_attr(const char *d, const char *name, size_t *n)
{
  const char *p = strstr(d, "<Pixels ");
  if (!p) p = strstr(d, ":Pixels ");
  if (!p) return NULL;
  const char *end = strchr(p, '>');
  size_t k = strlen(name);
  for (const char *a = p; (a = strstr(a, name)) && (!end || a < end); a += k) {
    if ((a[-1] == ' ' || a[-1] == '\n' || a[-1] == '\t') && a[k] == '=' && (a[k + 1] == '"' || a[k + 1] == '\'')) {
      const char *v = a + k + 2;
      const char *q = strchr(v, a[k + 1]);
      if (!q) return NULL;
      *n = (size_t)(q - v);
      return v;
    }
  }
  return NULL;
}

static double num(const char *v, size_t n)
{
  char b[64];
  if (!v || n == 0 || n >= sizeof b) return 0;
  memcpy(b, v, n);
  b[n] = 0;
  char *e;
  double x = strtod(b, &e);
  return e != b && isfinite(x) && x > 0 ? x : 0;
}

/* libtiff's messages: kept (per thread) for our own error line, never printed. */
static _Thread_local char tiff_msg[256];
static void tiff_handler(const char *module, const char *fmt, va_list ap)
{
  vsnprintf(tiff_msg, sizeof tiff_msg, fmt, ap);
}
static void tiff_quiet(const char *module, const char *fmt, va_list ap)
{
  char b[256];
  vsnprintf(b, sizeof b, fmt, ap);
  lt_debug("libtiff: %s", b);
}

/* The number under KEY (ImageJ line or OME attribute), 0 when absent. */
static double num_of(const char *(*get)(const char *, const char *, size_t *), const char *d, const char *key)
{
  size_t n = 0;
  const char *v = get(d, key, &n);
  return num(v, n);
}

/* The metadata of the first page: frame rate and pixel size. */
static void tiff_metadata(lt_source *s)
{
  char *desc = NULL;
  if (!TIFFGetField(s->tif, TIFFTAG_IMAGEDESCRIPTION, &desc) || !desc) return;
  size_t n = 0;
  const char *v;
  if (!strncmp(desc, "ImageJ=", 7)) {
    s->meta = 1;
    double fi = num_of(ij_value, desc, "finterval"), tu = 1;
    if ((v = ij_value(desc, "tunit", &n)) && unit_s(v, n) > 0) tu = unit_s(v, n);
    if (fi > 0) s->fps = 1.0 / (fi * tu);
    else if ((v = ij_value(desc, "fps", &n)) && num(v, n) > 0) s->fps = num(v, n);
    s->meta_frames = (long)num_of(ij_value, desc, "images");
    s->channels = (int)num_of(ij_value, desc, "channels");
    s->slices = (int)num_of(ij_value, desc, "slices");
    float xres = 0;
    v = ij_value(desc, "unit", &n);
    double u = v ? unit_um(v, n) : 0;
    if (u > 0 && TIFFGetField(s->tif, TIFFTAG_XRESOLUTION, &xres) && xres > 0) s->um_per_px = u / xres;
  } else if (strstr(desc, "<OME")) {
    s->meta = 2;
    double ti = num_of(ome_attr, desc, "TimeIncrement"), tu = 1;
    if ((v = ome_attr(desc, "TimeIncrementUnit", &n))) tu = unit_s(v, n);
    if (ti > 0 && tu > 0) s->fps = 1.0 / (ti * tu);
    double px = num_of(ome_attr, desc, "PhysicalSizeX"), pu = 1;
    if ((v = ome_attr(desc, "PhysicalSizeXUnit", &n))) pu = unit_um(v, n);
    if (px > 0 && pu > 0) s->um_per_px = px * pu;
    s->channels = (int)num_of(ome_attr, desc, "SizeC");
    s->slices = (int)num_of(ome_attr, desc, "SizeZ");
  }
}

/* Reads the current page into s->frame. Returns 0 or LT_ERR_INPUT (reported
 * unless quiet: a damaged page after the first only ends the stream). */
static int tiff_page(lt_source *s, int page, int quiet)
{
  TIFF *t = s->tif;
  uint32_t w = 0, h = 0;
  uint16_t bps = 1, spp = 1, photo = PHOTOMETRIC_MINISBLACK, planar = PLANARCONFIG_CONTIG,
           fmt = SAMPLEFORMAT_UINT;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo)) photo = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  const char *name = s->paths[0];
  if (w == 0 || h == 0 || w > LT_VIDEO_MAX_SIDE || h > LT_VIDEO_MAX_SIDE || (double)w * h > LT_VIDEO_MAX_PIXELS) {
    lt_error("'%s': page %d has unsupported size %ux%u", name, page + 1, w, h);
    return LT_ERR_INPUT;
  }
  if (!s->frame.grey_buf) {
    s->width = (int)w;
    s->height = (int)h;
    int err = lt_frame_own(&s->frame, (int)w, (int)h, "a TIFF page");
    if (err) return err;
  } else if ((int)w != s->width || (int)h != s->height) {
    lt_error("'%s': page %d is %ux%u but page 1 is %dx%d: all pages of a TIFF stack must have one size", name,
             page + 1, w, h, s->width, s->height);
    return LT_ERR_INPUT;
  }
  float *dst = s->frame.grey_buf;
  uint8_t *d8 = s->frame.grey8_buf;
  int rgb = photo == PHOTOMETRIC_RGB && spp >= 3;
  int plain = !TIFFIsTiled(t) && planar == PLANARCONFIG_CONTIG && fmt == SAMPLEFORMAT_UINT &&
              (bps == 8 || bps == 16) && (photo == PHOTOMETRIC_MINISBLACK || rgb);
  int ints = bps == 8 && (!rgb || s->channel != LT_CHANNEL_LUMA);
  tiff_msg[0] = 0;
  if (plain) {
    tmsize_t sl = TIFFScanlineSize(t);
    if (sl > s->scan_n) {
      void *b = realloc(s->scan, (size_t)sl);
      if (!b) {
        lt_error("out of memory for a TIFF row");
        return LT_ERR_NOMEM;
      }
      s->scan = b;
      s->scan_n = sl;
    }
    int k = rgb ? (s->channel == LT_CHANNEL_R ? 0 : s->channel == LT_CHANNEL_G ? 1 : s->channel == LT_CHANNEL_B ? 2 : -1) : 0;
    for (uint32_t y = 0; y < h; y++) {
      if (TIFFReadScanline(t, s->scan, y, 0) < 0) goto bad;
      float *o = dst + (size_t)y * w;
      if (bps == 8) {
        const uint8_t *p = s->scan;
        for (uint32_t x = 0; x < w; x++, p += spp)
          o[x] = k >= 0 ? p[k] : 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
      } else {
        const uint16_t *p = s->scan;
        for (uint32_t x = 0; x < w; x++, p += spp) {
          float c[3];
          for (int j = 0; j < (rgb ? 3 : 1); j++) c[j] = (float)((double)p[j] * 255.0 / 65535);
          o[x] = k >= 0 ? c[k] : 0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2];
        }
      }
    }
  } else {
    /* palette, 1/2/4-bit, YCbCr, min-is-white, tiles, planes: libtiff's RGBA
     * (8 bits per sample) */
    size_t np = (size_t)w * h;
    if (np > s->rgba_n) {
      void *b = realloc(s->rgba, np * sizeof(uint32_t));
      if (!b) {
        lt_error("out of memory for a %ux%u TIFF page", w, h);
        return LT_ERR_NOMEM;
      }
      s->rgba = b;
      s->rgba_n = np;
    }
    if (!TIFFReadRGBAImageOriented(t, w, h, s->rgba, ORIENTATION_TOPLEFT, 0)) goto bad;
    int grey = photo == PHOTOMETRIC_MINISBLACK || photo == PHOTOMETRIC_MINISWHITE;
    ints = grey || s->channel != LT_CHANNEL_LUMA;
    for (size_t i = 0; i < np; i++) {
      uint32_t c = s->rgba[i];
      float r = TIFFGetR(c), g = TIFFGetG(c), b = TIFFGetB(c);
      dst[i] = grey ? r
               : s->channel == LT_CHANNEL_R ? r
               : s->channel == LT_CHANNEL_G ? g
               : s->channel == LT_CHANNEL_B ? b
                                            : 0.299f * r + 0.587f * g + 0.114f * b;
    }
  }
  s->frame.grey8 = NULL;
  if (ints) {
    size_t np = (size_t)w * h;
    for (size_t i = 0; i < np; i++) d8[i] = (uint8_t)dst[i];
    s->frame.grey8 = d8;
  }
  s->frame.width = (int)w;
  s->frame.height = (int)h;
  s->frame.index = page;
  s->frame.t_s = s->fps > 0 ? page / s->fps : page;
  return 0;
bad:
  if (!quiet)
    lt_error("'%s': page %d of %d cannot be read (%s)", name, page + 1, s->ndirs,
             tiff_msg[0] ? tiff_msg : "unsupported layout or damaged data");
  else
    lt_debug("'%s': page %d of %d cannot be read (%s)", name, page + 1, s->ndirs, tiff_msg[0] ? tiff_msg : "?");
  return LT_ERR_INPUT;
}

/* 1: s reads a multi-page TIFF; 0: not one (FFmpeg reads it); <0: error. */
static int tiff_open(lt_source *s, const char *path)
{
  TIFFSetErrorHandler(tiff_handler);
  TIFFSetWarningHandler(tiff_quiet);
  tiff_msg[0] = 0;
  TIFF *t = TIFFOpen(path, "r");
  if (!t) {
    /* a TIFF header whose first directory cannot be read: say so (FFmpeg's
     * message would be about its decoder); anything else: FFmpeg says */
    unsigned char h[4] = {0};
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(h, 1, 4, fp) : 0;
    if (fp) fclose(fp);
    if (got == 4 && ((h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) && !h[3]) ||
                     (h[0] == 'M' && h[1] == 'M' && !h[2] && (h[3] == 42 || h[3] == 43)))) {
      lt_error("'%s': damaged TIFF, its first page cannot be read (%s)", path, tiff_msg[0] ? tiff_msg : "?");
      return LT_ERR_INPUT;
    }
    return 0;
  }
  tdir_t nd = TIFFNumberOfDirectories(t);
  if (nd <= 1) {
    TIFFClose(t);
    return 0;
  }
  s->tif = t;
  s->ndirs = (int)nd;
  tiff_metadata(s);
  if (s->fps <= 0) {
    s->fps = 25; /* as FFmpeg's image sequences; the loop warns */
    s->fps_default = 1;
  }
  s->hint = s->meta_frames > s->ndirs ? s->meta_frames : s->ndirs;
  if (s->channels > 1 || s->slices > 1)
    lt_warn("'%s' is a hyperstack (%d channels, %d slices per time point); its %d pages are read in order as "
            "frames", path, s->channels > 1 ? s->channels : 1, s->slices > 1 ? s->slices : 1, s->ndirs);
  int r = tiff_page(s, 0, 0);
  if (r) return r;
  s->tiff_next = 0;
  lt_debug("'%s': TIFF stack of %d pages, %dx%d, %s", path, s->ndirs, s->width, s->height,
           s->meta ? META_NAME[s->meta] : "no ImageJ/OME metadata");
  return 1;
}

static int tiff_next(lt_source *s, const lt_frame **f)
{
  *f = NULL;
  if (s->tiff_end) return 0;
  int i = s->tiff_next;
  if (i > 0) {
    tiff_msg[0] = 0;
    if (!TIFFReadDirectory(s->tif)) {
      if (tiff_msg[0]) { /* a damaged directory: the stream ends here (a damage warning) */
        lt_debug("'%s': page %d: %s", s->paths[0], i + 1, tiff_msg);
        s->tiff_bad++;
      }
      s->tiff_end = 1;
      return 0;
    }
    int r = tiff_page(s, i, 1);
    if (r) {
      /* a page of another size is an error; unreadable data ends the stream */
      uint32_t w = 0, h = 0;
      TIFFGetField(s->tif, TIFFTAG_IMAGEWIDTH, &w);
      TIFFGetField(s->tif, TIFFTAG_IMAGELENGTH, &h);
      if (r != LT_ERR_INPUT || (int)w != s->width || (int)h != s->height) return r;
      s->tiff_bad++;
      s->tiff_end = 1;
      return 0;
    }
  }
  s->tiff_next = i + 1;
  *f = &s->frame;
  return 1;
}
#else
/* Without libtiff: 1 when PATH is a TIFF with a second page (classic or
 * BigTIFF header walk), so that it is refused rather than read as 1 frame. */
static int tiff_multipage(const char *path)
{
  FILE *fp = fopen(path, "rb");
  if (!fp) return 0;
  unsigned char h[16];
  int multi = 0;
  if (fread(h, 1, 16, fp) >= 8 && (h[0] == h[1]) && (h[0] == 'I' || h[0] == 'M')) {
    int le = h[0] == 'I';
#define U16(p) (le ? (unsigned)(p)[0] | (unsigned)(p)[1] << 8 : (unsigned)(p)[1] | (unsigned)(p)[0] << 8)
    unsigned magic = U16(h + 2);
    uint64_t off = 0;
    int big = magic == 43;
    for (int i = 0; i < (big ? 8 : 4); i++)
      off |= (uint64_t)h[(big ? 8 : 4) + (le ? i : (big ? 7 : 3) - i)] << (8 * i);
    if ((magic == 42 || big) && off && !fseeko(fp, (off_t)off, SEEK_SET)) {
      unsigned char c[8];
      if (fread(c, 1, big ? 8 : 2, fp) == (size_t)(big ? 8 : 2)) {
        uint64_t n = 0;
        for (int i = 0; i < (big ? 8 : 2); i++) n |= (uint64_t)c[le ? i : (big ? 7 : 1) - i] << (8 * i);
        if (n < 100000 && !fseeko(fp, (off_t)(n * (big ? 20 : 12)), SEEK_CUR) &&
            fread(c, 1, big ? 8 : 4, fp) == (size_t)(big ? 8 : 4))
          for (int i = 0; i < (big ? 8 : 4); i++) multi |= c[i] != 0;
      }
    }
#undef U16
  }
  fclose(fp);
  return multi;
}
#endif

static int read_image(lt_source *s, int i, int check_size)
{
  lt_video *v = NULL;
  int r = lt_video_open(&v, s->paths[i], s->channel, 2);
  if (r) return r;
  const lt_frame *f;
  r = lt_video_next(v, &f);
  if (r == 1 && check_size && (f->width != s->width || f->height != s->height)) {
    lt_error("'%s' is %dx%d but '%s' is %dx%d: all images of a sequence must have one size", s->paths[i],
             f->width, f->height, s->paths[0], s->width, s->height);
    r = LT_ERR_INPUT;
  }
  if (r == 1) {
    if (!s->frame.grey_buf) {
      s->width = f->width;
      s->height = f->height;
    }
    int err = lt_frame_copy(&s->frame, f, "an image");
    if (err) {
      lt_video_close(v);
      return err;
    }
    s->frame.index = i;
    s->frame.t_s = s->fps > 0 ? i / s->fps : i;
    r = 0;
  } else if (r == 0) {
    lt_error("'%s' contains no image", s->paths[i]);
    r = LT_ERR_INPUT;
  }
  lt_video_close(v);
  return r;
}

int lt_source_open(lt_source **out, const char *const *paths, int n, lt_channel channel, int ring)
{
  *out = NULL;
  lt_source *s = calloc(1, sizeof *s);
  if (!s) {
    lt_error("out of memory");
    return LT_ERR_NOMEM;
  }
  s->paths = paths;
  s->n = n;
  s->channel = channel;
  int r;
  r = 0;
  if (n == 1 && is_tiff_name(paths[0])) {
#ifdef LT_HAVE_TIFF
    r = tiff_open(s, paths[0]);
#else
    if (tiff_multipage(paths[0])) {
      lt_error("'%s' is a multi-page TIFF stack, and this leuktrack was built without libtiff, which reads "
               "them (rebuild with libtiff, e.g. Debian libtiff-dev, or convert the stack to a video)", paths[0]);
      r = LT_ERR_INPUT;
    }
#endif
    if (r < 0) {
      lt_source_close(s);
      return r;
    }
  }
  if (r == 1) {
    r = 0;
  } else if (n == 1) {
    r = lt_video_open(&s->video, paths[0], channel, ring);
    if (!r) {
      s->width = lt_video_width(s->video);
      s->height = lt_video_height(s->video);
      s->fps = lt_video_fps(s->video);
      s->hint = lt_video_frames_hint(s->video);
    }
  } else {
    s->hint = n;
    r = read_image(s, 0, 0); /* the size, and errors of the first file, now */
    s->next = 0;
  }
  if (r) {
    lt_source_close(s);
    return r;
  }
  *out = s;
  return 0;
}

int lt_source_width(const lt_source *s) { return s->width; }
int lt_source_height(const lt_source *s) { return s->height; }
double lt_source_fps(const lt_source *s) { return s->fps; }
long lt_source_frames_hint(const lt_source *s) { return s->hint; }
const char *lt_source_name(const lt_source *s) { return s->paths[0]; }

int lt_source_next(lt_source *s, const lt_frame **f)
{
  if (s->video) return lt_video_next(s->video, f);
#ifdef LT_HAVE_TIFF
  if (s->tif) return tiff_next(s, f);
#endif
  *f = NULL;
  if (s->next >= s->n) return 0;
  int i = s->next++;
  if (i > 0) {
    int r = read_image(s, i, 1);
    if (r) return r;
  }
  *f = &s->frame;
  return 1;
}

int lt_source_fps_is_default(const lt_source *s)
{
  if (s->ndirs) return s->fps_default;
  return s->video ? lt_video_fps_is_default(s->video) : 0;
}

const char *lt_source_fps_origin(const lt_source *s)
{
  if (s->ndirs) return s->fps_default ? NULL : META_NAME[s->meta];
  if (s->video && !lt_video_fps_is_default(s->video) && s->fps > 0) return "the container";
  return NULL;
}

int lt_source_is_tiff(const lt_source *s) { return s->ndirs > 0; }
double lt_source_um_per_px(const lt_source *s) { return s->um_per_px; }
const char *lt_source_meta_origin(const lt_source *s) { return s->um_per_px > 0 ? META_NAME[s->meta] : NULL; }

void lt_source_damage(const lt_source *s, lt_video_damage_info *d)
{
  memset(d, 0, sizeof *d);
  if (s->video) lt_video_damage(s->video, d);
  if (s->ndirs) { /* a TIFF stack: damaged pages end it; declared = pages (or ImageJ's images=) */
    d->rejected = s->tiff_bad;
    d->declared = s->hint;
    d->expected = s->hint;
  }
}

int lt_source_map(const lt_source *s, const void **base, size_t *size)
{
  return s->video ? lt_video_map(s->video, base, size) : 0;
}

void lt_source_bytes_only(lt_source *s)
{
  if (s->video) lt_video_bytes_only(s->video, 1);
}

int lt_source_peek(lt_source *s, const lt_frame **f)
{
  if (s->video) return lt_video_peek(s->video, f);
  *f = NULL;
  return 0;
}

void lt_source_close(lt_source *s)
{
  if (!s) return;
  lt_video_close(s->video);
#ifdef LT_HAVE_TIFF
  if (s->tif) TIFFClose(s->tif);
  free(s->scan);
  free(s->rgba);
#endif
  lt_frame_release(&s->frame);
  free(s);
}
