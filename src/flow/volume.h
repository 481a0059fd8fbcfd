/* volume.h - volume sequences for the 3D flow mode: NIfTI-1 in (one 4D file
 * x,y,z,t, or several 3D files, .nii or .nii.gz) and the displacement field
 * out as a NIfTI vector image, through niftilib (Debian libnifti2-dev: no
 * hand-written NIfTI parser).
 *
 * Data layout: one float array of nx*ny*nz*nt voxels, x fastest, t slowest
 * (NIfTI's own order), intensities with scl_slope/scl_inter applied. The
 * grid of a frame is lt_volume_grid: n = (nx, ny, nz), h = voxel size in mm
 * (pixdim[1..3], converted from the header's spatial unit).
 *
 * What is rejected (LT_ERR_INPUT after one lt_error naming the file):
 * not NIfTI-1 (ANALYZE, NIfTI-2), a dimension < 2 along x, y or z, more than
 * 4 dimensions, a voxel size that is not finite and > 0, complex/RGB or
 * other non-scalar data types, a header whose data would not fit in the file
 * (.nii: vox_offset + size > file size; .nii.gz: > the gzip trailer's
 * uncompressed length, checked before any allocation), short (truncated)
 * data, more than lt_volume_max_bytes of data, any NaN or Inf voxel (the
 * message gives the count and the first one's x,y,z,t: flow on undefined
 * intensities has no meaning, and replacing them silently would invent
 * data), a single 3D file (a pair needs a 4D file or two or more 3D files),
 * a 4D file among several, and files whose dimensions or voxel sizes (to
 * 1e-4 relative) differ from the first one's. */
#ifndef LT_FLOW_VOLUME_H
#define LT_FLOW_VOLUME_H

#include <stddef.h>

#include "flow/grid.h"

typedef struct lt_volume {
  int n[3], nt;     /* voxels per axis, time points */
  float h[3];       /* voxel size, mm */
  float dt;         /* time step (pixdim[4], the header's unit; 0 if none) */
  float *data;      /* n[0]*n[1]*n[2]*nt floats */
  /* orientation of the (first) file, kept for the output */
  int qform_code, sform_code;
  float quatern[3], qoffset[3], qfac;
  float srow[3][4];
  float affine[3][4]; /* voxel -> world (mm): sform if set, else qform, else scaling */
} lt_volume;

/* Largest voxel data accepted per file, in bytes of the file's own type
 * (default 8 GiB); the fuzz harness lowers it. */
extern size_t lt_volume_max_bytes;

/* paths[0..npaths-1]: one 4D file (nt >= 2) or npaths >= 2 3D files.
 * 0, LT_ERR_INPUT or LT_ERR_NOMEM (after one message); on error *v is
 * empty (lt_volume_free is still allowed). */
int lt_volume_read(lt_volume *v, const char *const paths[], int npaths);
void lt_volume_free(lt_volume *v); /* accepts an empty / freed volume */
/* The grid of one time point, and time point t's voxels. */
lt_grid lt_volume_grid(const lt_volume *v);
const float *lt_volume_frame(const lt_volume *v, int t);

/* How the three components are expressed in the output. */
typedef enum lt_disp_space {
  LT_DISP_WORLD_MM = 0, /* world (NIfTI RAS) mm: affine's linear part times the voxel displacement */
  LT_DISP_VOXEL_MM = 1  /* along the voxel axes i, j, k, in mm (the solver's own output) */
} lt_disp_space;

/* Writes f[0..2] (n[0]*n[1]*n[2] floats each, displacement in mm along the
 * voxel axes, as lt_clg_compute returns it on lt_volume_grid) as a NIfTI-1
 * float32 image of dim (5, nx, ny, nz, 1, 3), intent
 * NIFTI_INTENT_DISPLACEMENT_VECTOR, pixdim and qform/sform of ref, units mm,
 * gzip-compressed when path ends in .gz. The file appears complete or not at
 * all (written to PATH.tmp.PID, then renamed). 0 or LT_ERR_OUTPUT. */
int lt_volume_write_displacement(const char *path, const lt_volume *ref, const float *const f[3], lt_disp_space space);

#endif
