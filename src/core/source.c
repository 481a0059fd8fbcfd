/* source.c - the source of frames (source.h): a video, or image files read
 * one by one through the video layer (first frame of each). */
#include "source.h"

#include <stdlib.h>
#include <string.h>

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
  lt_frame frame;    /* image list: the current frame (own buffers) */
};

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
    size_t np = (size_t)f->width * f->height;
    if (!s->frame.grey) {
      s->width = f->width;
      s->height = f->height;
      s->frame.grey = malloc(np * sizeof(float));
      s->frame.grey8_buf = malloc(np);
      if (!s->frame.grey || !s->frame.grey8_buf) {
        lt_error("out of memory for a %dx%d image", f->width, f->height);
        lt_video_close(v);
        return LT_ERR_NOMEM;
      }
    }
    memcpy(s->frame.grey, f->grey, np * sizeof(float));
    s->frame.grey8 = NULL;
    if (f->grey8) {
      memcpy(s->frame.grey8_buf, f->grey8, np);
      s->frame.grey8 = s->frame.grey8_buf;
    }
    s->frame.width = f->width;
    s->frame.height = f->height;
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
  if (n == 1) {
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

int lt_source_fps_is_default(const lt_source *s) { return s->video ? lt_video_fps_is_default(s->video) : 0; }

void lt_source_damage(const lt_source *s, lt_video_damage_info *d)
{
  memset(d, 0, sizeof *d);
  if (s->video) lt_video_damage(s->video, d);
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
  free(s->frame.grey);
  free(s->frame.grey8_buf);
  free(s);
}
