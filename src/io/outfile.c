/* outfile.c - complete-or-nothing output files; see outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

int lt_out_open(lt_outfile *o, const char *path)
{
  memset(o, 0, sizeof *o);
  if (!path || !strcmp(path, "-")) {
    o->path = strdup("-");
    o->fp = stdout;
    return o->path ? 0 : LT_ERR_NOMEM;
  }
  /* A device or FIFO (/dev/stdout, /dev/null, a pipe) is written in place:
   * renaming a temporary over it would replace the device node. */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      lt_error("cannot write '%s': it is a directory", path);
      return LT_ERR_OUTPUT;
    }
    o->path = strdup(path);
    o->fp = o->path ? fopen(path, "w") : NULL;
    if (!o->fp) {
      lt_error("cannot write '%s': %s", path, strerror(errno));
      free(o->path);
      o->path = NULL;
      return LT_ERR_OUTPUT;
    }
    o->direct = 1;
    return 0;
  }
  size_t n = strlen(path) + 32;
  o->path = strdup(path);
  o->tmp = malloc(n);
  if (!o->path || !o->tmp) {
    free(o->path);
    free(o->tmp);
    return LT_ERR_NOMEM;
  }
  snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  o->fp = fopen(o->tmp, "w");
  if (!o->fp) {
    lt_error("cannot write '%s': %s", path, strerror(errno));
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return LT_ERR_OUTPUT;
  }
  return 0;
}

int lt_out_check(lt_outfile *o)
{
  if (o->fp && ferror(o->fp) && !o->failed) {
    o->failed = errno == EPIPE && !o->tmp ? 2 : 1;
    if (o->failed == 1) lt_error("writing '%s' failed: %s", o->path, strerror(errno ? errno : EIO));
  }
  /* a closed pipe (| head) is the reader's choice: a quiet stop */
  return o->failed == 2 ? LT_ERR_PIPE : o->failed ? LT_ERR_OUTPUT : 0;
}

static void release(lt_outfile *o)
{
  free(o->path);
  free(o->tmp);
  memset(o, 0, sizeof *o);
}

int lt_out_commit(lt_outfile *o)
{
  if (!o->fp) return 0;
  if (!o->tmp) { /* stdout or a device */
    int bad = fflush(o->fp) != 0 || ferror(o->fp);
    int pipe_gone = o->failed == 2 || (bad && errno == EPIPE);
    if (o->direct && fclose(o->fp) != 0) bad = 1;
    if (bad && !o->failed && !pipe_gone)
      lt_error("writing to '%s' failed: %s", o->direct ? o->path : "stdout", strerror(errno ? errno : EIO));
    release(o);
    return pipe_gone ? LT_ERR_PIPE : bad ? LT_ERR_OUTPUT : 0;
  }
  int bad = lt_out_check(o) != 0;
  if (!bad && fflush(o->fp) != 0) bad = 1;
  if (!bad && fsync(fileno(o->fp)) != 0 && errno != EINVAL && errno != EROFS) bad = 1;
  int e = errno;
  if (fclose(o->fp) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  o->fp = NULL;
  if (!bad && rename(o->tmp, o->path) != 0) {
    bad = 1;
    e = errno;
  }
  if (bad) {
    if (!o->failed) lt_error("writing '%s' failed: %s", o->path, strerror(e ? e : EIO));
    unlink(o->tmp);
  }
  release(o);
  return bad ? LT_ERR_OUTPUT : 0;
}

void lt_out_abort(lt_outfile *o, int keep_partial)
{
  if (!o->fp) {
    release(o);
    return;
  }
  if (!o->tmp) {
    fflush(o->fp);
    if (o->direct) fclose(o->fp);
    release(o);
    return;
  }
  int ok = fflush(o->fp) == 0 && !ferror(o->fp);
  fclose(o->fp);
  o->fp = NULL;
  if (keep_partial && ok) {
    size_t n = strlen(o->path) + 16;
    char *part = malloc(n);
    if (part) {
      snprintf(part, n, "%s.partial", o->path);
      if (rename(o->tmp, part) == 0)
        lt_warn("kept the rows written so far in '%s'", part);
      else
        unlink(o->tmp);
      free(part);
    } else {
      unlink(o->tmp);
    }
  } else {
    unlink(o->tmp);
  }
  release(o);
}
