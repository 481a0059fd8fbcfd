/* modes.c - the mode table: one row per mode, the first is the default.
 * A new mode is a folder src/MODE/ (+ cuda/MODE/) defining an lt_mode
 * (mode.h) and one row here. */
#include "mode.h"

#include "flow/flow_mode.h"
#include "leukocyte/leuk_mode.h"
#include "tumor/tumor_mode.h"
#include "vcm/vcm_mode.h"

const lt_mode *const lt_modes[] = {
  &lt_mode_leukocyte,
  &lt_mode_tumor,
  &lt_mode_vcm,
  &lt_mode_flow,
};
const int lt_nmodes = (int)(sizeof lt_modes / sizeof lt_modes[0]);
