/* error.c - lt_err -> exit status (the table in man/leuktrack.1). */
#include "error.h"

int lt_exit_status(int err)
{
  switch (err) {
  case LT_OK: return LT_EXIT_OK;
  case LT_ERR_USAGE: return LT_EXIT_USAGE;
  case LT_ERR_INPUT: return LT_EXIT_INPUT;
  case LT_ERR_OUTPUT: return LT_EXIT_OUTPUT;
  case LT_ERR_GPU: return LT_EXIT_GPU;
  case LT_ERR_INTERRUPTED: return LT_EXIT_INTERRUPTED;
  case LT_ERR_PIPE: return LT_EXIT_PIPE;
  default: return LT_EXIT_FAILURE;
  }
}
