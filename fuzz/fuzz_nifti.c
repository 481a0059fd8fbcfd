/* fuzz_nifti.c - libFuzzer harness for lt_volume_read (src/flow/volume.c,
 * NIfTI-1 through niftilib). The input bytes are written to a private
 * temporary file named .nii.gz when they start with the gzip magic, else
 * .nii (niftilib picks the format by name). lt_volume_max_bytes is lowered
 * to 64 MB so that a lying header cannot reach the fuzzer's malloc limit.
 * Every read must return 0 with a volume whose every voxel is finite and
 * readable, or LT_ERR_INPUT / LT_ERR_NOMEM with no data, without a crash,
 * leak or undefined behaviour. A successful read is also written out as a
 * displacement field (the first frame as all three components). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "flow/volume.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char path[64], out[80];
  const int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  snprintf(path, sizeof path, "/tmp/lt_fuzz_nifti.%ld.nii%s", (long)getpid(), gz ? ".gz" : "");
  snprintf(out, sizeof out, "/tmp/lt_fuzz_nifti.%ld.out.nii", (long)getpid());
  FILE *fp = fopen(path, "wb");
  if (!fp) abort();
  if (size && fwrite(data, 1, size, fp) != size) abort();
  fclose(fp);
  lt_volume_max_bytes = (size_t)64 << 20;
  lt_volume v;
  const char *paths[1] = {path};
  int r = lt_volume_read(&v, paths, 1);
  if (r == 0) {
    if (!v.data || v.nt < 2 || v.n[0] < 2 || v.n[1] < 2 || v.n[2] < 2) abort();
    const size_t per = (size_t)v.n[0] * v.n[1] * v.n[2];
    for (size_t i = 0; i < per * v.nt; i++)
      if (!isfinite(v.data[i])) abort();
    for (int d = 0; d < 3; d++)
      if (!(v.h[d] > 0) || !isfinite(v.h[d])) abort();
    const float *f[3] = {v.data, v.data, v.data};
    if (per <= ((size_t)1 << 20) && lt_volume_write_displacement(out, &v, f, LT_DISP_WORLD_MM) != 0) abort();
    unlink(out);
  } else if (r != LT_ERR_INPUT && r != LT_ERR_NOMEM) {
    abort();
  } else if (v.data) {
    abort();
  }
  lt_volume_free(&v);
  unlink(path);
  return 0;
}
