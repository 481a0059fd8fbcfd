/* flow_mode.h - the flow mode's own options (its row of the mode table is
 * lt_mode_flow, mode.c) and its run (pipeline.c). The computational core
 * (CLG solver, .flo files, colour coding) is clg.h, flo.h and color.h. */
#ifndef LT_FLOW_MODE_H
#define LT_FLOW_MODE_H

#include <stddef.h>
#include <stdint.h>

#include "flow/clg.h"
#include "mode.h"

typedef struct lt_flow_opts {
  lt_flow_params flow;      /* --alpha --rho --sigma --levels --warps --iterations */
  int color;                /* --color: colour-coded PNG next to each .flo */
  const char *summary;      /* --summary FILE.csv or NULL */
  const char *ground_truth; /* --ground-truth FILE.flo or NULL */
  const char *mask;         /* --mask PNG or NULL (needs --ground-truth) */
  const char *plot;         /* --plot FILE.png or NULL */
  int folder;               /* set by check: one video (or 3+ images): -o names a folder */
  int alpha_set;            /* --alpha given (else the 2D or 3D default) */
  int three_d;              /* --3d: NIfTI volume sequence (volrun.c) */
  int voxel_axes;           /* --displacement voxel: components along i, j, k (else world mm) */
} lt_flow_opts;

extern const lt_mode lt_mode_flow;

/* The run (pipeline.c): the frame loop over consecutive pairs. */
int lt_flow_run(const lt_settings *s, const void *opts);
/* The k-th smallest (1-based, 1 <= k <= n) of n non-negative floats, exactly
 * (two radix passes over the bit patterns; hist: 65536 counters of scratch):
 * the p95 of the flow summaries (pipeline.c, volrun.c). */
float lt_flow_kth_smallest(const float *a, size_t n, size_t k, uint32_t *hist);
/* --3d (volrun.c): every consecutive pair of a NIfTI volume sequence. */
int lt_flow_run_3d(const lt_settings *s, const lt_flow_opts *o);

#endif
