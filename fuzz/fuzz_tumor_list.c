/* fuzz_tumor_list.c - libFuzzer harness for the tumour mode's template list
 * parser (src/tumor/list.c, --templates LIST.csv). The input bytes are
 * written to a private temporary file and parsed; the callback checks each
 * entry (a non-empty path under the list's folder, x and y in range) and
 * refuses the third entry (an add error must stop the parse and come back
 * unchanged). Every parse must return 0 with at least one entry, the add
 * error, or LT_ERR_INPUT / LT_ERR_NOMEM, without a crash, leak or undefined
 * behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz_file.h"
#include "tumor/list.h"

#define ADD_REFUSED (-777)

static int add(void *u, const char *path, int x, int y)
{
  int *n = u;
  size_t len = strlen(path);
  if (len == 0 || len > 4096 + 64) abort();
  /* relative entries are joined to the list's folder (/tmp/) */
  if (path[0] != '/') abort();
  if (x < -4 * 65536 || x > 4 * 65536 || y < -4 * 65536 || y > 4 * 65536) abort();
  if (++*n == 3) return ADD_REFUSED;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_as_file("tumor_list", data, size);
  int n = 0;
  int r = lt_tumor_list_read(path, add, &n);
  if (r == 0) {
    if (n < 1 || n >= 3) abort();
  } else if (r == ADD_REFUSED) {
    if (n != 3) abort();
  } else if (r != LT_ERR_INPUT && r != LT_ERR_NOMEM) {
    abort();
  }
  return 0;
}
