/* list.c - the template list of `leuktrack tumor --templates LIST.csv`
 * (contract in list.h); a file of its own so that the fuzz harness
 * (fuzz/fuzz_tumor_list.c) reaches it without the pipeline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "tumor/list.h"

/* file,x,y per line; '#' comments and blank lines skipped, an optional
 * header line "file,x,y"; relative paths relative to the list's folder. */
int lt_tumor_list_read(const char *list, int (*add)(void *u, const char *path, int x, int y), void *u)
{
  FILE *f = fopen(list, "r");
  if (!f) {
    lt_error("cannot read template list '%s': %s", list, strerror(errno));
    return LT_ERR_INPUT;
  }
  const char *slash = strrchr(list, '/');
  size_t dirlen = slash ? (size_t)(slash - list) + 1 : 0;
  char line[4096];
  int lineno = 0, n = 0, err = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n') {
      lt_error("template list '%s', line %d: line too long", list, lineno);
      err = LT_ERR_INPUT;
      break;
    }
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '#') continue;
    if (n == 0 && !strcmp(p, "file,x,y")) continue;
    char *c2 = strrchr(p, ',');
    char *c1 = NULL;
    if (c2) {
      *c2 = 0;
      c1 = strrchr(p, ',');
      *c2 = ',';
    }
    char *e1, *e2;
    long x = 0, y = 0;
    int ok = c1 && c1 > p;
    if (ok) {
      errno = 0;
      x = strtol(c1 + 1, &e1, 10);
      ok = e1 != c1 + 1 && e1 == c2 && !errno;
      y = strtol(c2 + 1, &e2, 10);
      ok = ok && e2 != c2 + 1 && !*e2 && !errno && labs(x) <= 4 * 65536 && labs(y) <= 4 * 65536;
    }
    if (!ok) {
      lt_error("template list '%s', line %d: expected file,x,y (x,y integers), got '%.80s'", list, lineno, p);
      err = LT_ERR_INPUT;
      break;
    }
    *c1 = 0;
    size_t fl = strlen(p);
    char *path = malloc(dirlen + fl + 1);
    if (!path) {
      err = LT_ERR_NOMEM;
      lt_error("out of memory");
      break;
    }
    if (p[0] == '/') memcpy(path, p, fl + 1);
    else {
      memcpy(path, list, dirlen);
      memcpy(path + dirlen, p, fl + 1);
    }
    err = add(u, path, (int)x, (int)y);
    free(path);
    if (err) break;
    n++;
  }
  if (!err && ferror(f)) {
    lt_error("cannot read template list '%s': read error", list);
    err = LT_ERR_INPUT;
  }
  fclose(f);
  if (!err && n == 0) {
    lt_error("template list '%s' names no templates (expected file,x,y lines)", list);
    err = LT_ERR_INPUT;
  }
  return err;
}
