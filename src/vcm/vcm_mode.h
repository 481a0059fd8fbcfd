/* vcm_mode.h - the vcm mode's own options (its row of the mode table is
 * lt_mode_vcm, mode.c) and its run (pipeline.c). */
#ifndef LT_VCM_MODE_H
#define LT_VCM_MODE_H

#include "mode.h"
#include "vcm.h"

typedef struct lt_vcm_opts {
  lt_vcm_params vcm;   /* the core's parameters (vcm.h), defaults from lt_vcm_params_default */
  const char *flo_dir; /* --flo DIR or NULL */
  double arrow_scale;  /* --arrow-scale; 0 = automatic per pair */
} lt_vcm_opts;

extern const lt_mode lt_mode_vcm;

int lt_vcm_run(const lt_settings *s, const void *opts);

#endif
