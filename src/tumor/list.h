/* list.h - the template list parser of the tumour mode (--templates
 * LIST.csv): file,x,y per line; '#' comments and blank lines skipped, an
 * optional header line "file,x,y"; relative paths relative to the list's
 * folder; lines of at most 4094 characters; |x|, |y| <= 262144. */
#ifndef LT_TUMOR_LIST_H
#define LT_TUMOR_LIST_H

/* Reads the list and calls add(u, path, x, y) for each entry in order (path
 * is freed after the call); stops at the first nonzero return of add and
 * returns it. Returns 0, LT_ERR_INPUT after one lt_error for an unreadable,
 * malformed or empty list, LT_ERR_NOMEM. */
int lt_tumor_list_read(const char *list, int (*add)(void *u, const char *path, int x, int y), void *u);

#endif
