/* volume.c - NIfTI-1 volume sequences in, displacement fields out, through
 * niftilib (see volume.h for what is accepted and why).
 *
 * Reading: nifti_image_read(path, 0) parses the header only; the header is
 * checked here against the file before nifti_image_load allocates the data
 * (a lying header must not make us allocate gigabytes), then the voxels are
 * converted to float with the scaling applied and checked for NaN/Inf.
 * niftilib's own messages are silenced (debug level 0): every failure is
 * reported once, here, with the file name.
 *
 * Writing: the header comes from nifti_convert_nim2nhdr (niftilib fills the
 * 348 bytes and the quaternion fields), data and header go through znzlib
 * (gzip when the name ends in .gz) with every write checked, into
 * PATH.tmp.PID, renamed over PATH only after a clean close. */
#include "flow/volume.h"

#include <errno.h>
#include <math.h>
#include <nifti1_io.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

size_t lt_volume_max_bytes = (size_t)8 << 30;

/* Header spatial unit -> mm factor (unknown units: taken as mm). */
static double unit_mm(int xyz_units)
{
  switch (xyz_units) {
  case NIFTI_UNITS_METER: return 1000.0;
  case NIFTI_UNITS_MICRON: return 0.001;
  default: return 1.0;
  }
}

/* Uncompressed length of a gzip file from its trailer (ISIZE, mod 2^32),
 * or -1 when unreadable. */
static long long gzip_isize(const char *path)
{
  FILE *fp = fopen(path, "rb");
  if (!fp) return -1;
  unsigned char b[4];
  long long r = -1;
  if (fseek(fp, -4, SEEK_END) == 0 && fread(b, 1, 4, fp) == 4)
    r = (long long)b[0] | (long long)b[1] << 8 | (long long)b[2] << 16 | (long long)b[3] << 24;
  fclose(fp);
  return r;
}

/* Header checks before any data is read. 0 or LT_ERR_INPUT. */
static int check_header(const nifti_image *nim, const char *path)
{
  if (nim->nifti_type != NIFTI_FTYPE_NIFTI1_1 && nim->nifti_type != NIFTI_FTYPE_NIFTI1_2) {
    lt_error("%s: not a NIfTI-1 file (ANALYZE or another format)", path);
    return LT_ERR_INPUT;
  }
  if (nim->dim[0] < 3 || nim->dim[0] > 7) {
    lt_error("%s: %d dimensions; a volume needs 3 (x,y,z) or 4 (x,y,z,t)", path, nim->dim[0]);
    return LT_ERR_INPUT;
  }
  for (int d = 5; d <= nim->dim[0]; d++)
    if (nim->dim[d] != 1) {
      lt_error("%s: dimension %d has size %d; only x,y,z,t volumes of scalars are read", path, d, nim->dim[d]);
      return LT_ERR_INPUT;
    }
  double nvox = 1;
  for (int d = 1; d <= 4 && d <= nim->dim[0]; d++) {
    int m = nim->dim[d];
    if (m < (d <= 3 ? 2 : 1)) {
      lt_error("%s: %s size %d (at least %d)", path, d == 1 ? "x" : d == 2 ? "y" : d == 3 ? "z" : "t", m,
               d <= 3 ? 2 : 1);
      return LT_ERR_INPUT;
    }
    nvox *= m;
  }
  for (int d = 1; d <= 3; d++)
    if (!(isfinite(nim->pixdim[d]) && fabsf(nim->pixdim[d]) > 0 && fabsf(nim->pixdim[d]) < 1e6f)) {
      lt_error("%s: voxel size %g along axis %d (must be finite and > 0)", path, nim->pixdim[d], d);
      return LT_ERR_INPUT;
    }
  switch (nim->datatype) {
  case NIFTI_TYPE_UINT8: case NIFTI_TYPE_INT8: case NIFTI_TYPE_INT16: case NIFTI_TYPE_UINT16:
  case NIFTI_TYPE_INT32: case NIFTI_TYPE_UINT32: case NIFTI_TYPE_INT64: case NIFTI_TYPE_UINT64:
  case NIFTI_TYPE_FLOAT32: case NIFTI_TYPE_FLOAT64: break;
  default:
    lt_error("%s: data type %s is not a real scalar type", path, nifti_datatype_string(nim->datatype));
    return LT_ERR_INPUT;
  }
  const double bytes = nvox * nim->nbyper;
  if (bytes > (double)lt_volume_max_bytes || nvox >= 9e15) {
    lt_error("%s: %.0f bytes of voxel data, more than the %zu accepted", path, bytes, lt_volume_max_bytes);
    return LT_ERR_INPUT;
  }
  if (nim->iname_offset < 0) {
    lt_error("%s: negative data offset %d", path, nim->iname_offset);
    return LT_ERR_INPUT;
  }
  /* does the file hold what the header announces? */
  const char *img = nim->iname ? nim->iname : path;
  const double need = bytes + nim->iname_offset;
  double have;
  if (nifti_is_gzfile(img)) {
    long long isz = gzip_isize(img);
    /* ISIZE is mod 2^32: exact only below 4 GiB */
    have = isz < 0 ? -1 : (need < 4294967296.0 ? (double)isz : need);
  } else {
    struct stat sb;
    have = stat(img, &sb) == 0 ? (double)sb.st_size : -1;
  }
  if (have < need) {
    lt_error("%s: the header announces %.0f bytes of data at offset %d, the file holds %.0f (truncated, or a lying header)",
             img, bytes, nim->iname_offset, have < 0 ? 0 : have - nim->iname_offset);
    return LT_ERR_INPUT;
  }
  return 0;
}

/* The voxel data, read here through znzlib rather than nifti_image_load:
 * niftilib fills a short read with zeros and replaces NaN/Inf floats by 0
 * (with a warning at most), and both must be errors here. Sets nim->data
 * (freed by nifti_image_free). 0 or LT_ERR_INPUT / LT_ERR_NOMEM. */
static int load_data(nifti_image *nim, const char *path)
{
  const char *img = nim->iname ? nim->iname : path;
  size_t nvox = 1;
  for (int d = 1; d <= nim->dim[0]; d++) nvox *= (size_t)nim->dim[d];
  const size_t bytes = nvox * (size_t)nim->nbyper;
  void *buf = malloc(bytes ? bytes : 1);
  if (!buf) {
    lt_error("%s: out of memory (%zu MB of voxel data)", path, bytes >> 20);
    return LT_ERR_NOMEM;
  }
  znzFile fp = znzopen(img, "rb", nifti_is_gzfile(img));
  size_t got = 0;
  if (!znz_isnull(fp)) {
    if (znzseek(fp, (znz_off_t)nim->iname_offset, SEEK_SET) >= 0) got = znzread(buf, 1, bytes, fp);
    znzclose(fp);
  }
  if (got != bytes) {
    lt_error("%s: %zu of the %zu bytes of voxel data could be read (truncated or corrupt file)", img, got, bytes);
    free(buf);
    return LT_ERR_INPUT;
  }
  if (nim->byteorder != nifti_short_order() && nim->swapsize > 1) nifti_swap_Nbytes(nvox, nim->swapsize, buf);
  free(nim->data);
  nim->data = buf;
  return 0;
}

static double voxel(const nifti_image *nim, size_t i)
{
  const void *p = nim->data;
  switch (nim->datatype) {
  case NIFTI_TYPE_UINT8: return ((const uint8_t *)p)[i];
  case NIFTI_TYPE_INT8: return ((const int8_t *)p)[i];
  case NIFTI_TYPE_INT16: return ((const int16_t *)p)[i];
  case NIFTI_TYPE_UINT16: return ((const uint16_t *)p)[i];
  case NIFTI_TYPE_INT32: return ((const int32_t *)p)[i];
  case NIFTI_TYPE_UINT32: return ((const uint32_t *)p)[i];
  case NIFTI_TYPE_INT64: return (double)((const int64_t *)p)[i];
  case NIFTI_TYPE_UINT64: return (double)((const uint64_t *)p)[i];
  case NIFTI_TYPE_FLOAT32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

/* Copies the orientation of nim (and its voxel -> world affine, in mm). */
static void take_orientation(lt_volume *v, const nifti_image *nim)
{
  const double u = unit_mm(nim->xyz_units);
  v->qform_code = nim->qform_code;
  v->sform_code = nim->sform_code;
  v->quatern[0] = nim->quatern_b, v->quatern[1] = nim->quatern_c, v->quatern[2] = nim->quatern_d;
  v->qoffset[0] = nim->qoffset_x, v->qoffset[1] = nim->qoffset_y, v->qoffset[2] = nim->qoffset_z;
  v->qfac = nim->qfac;
  const mat44 *m = nim->sform_code > 0 ? &nim->sto_xyz : &nim->qto_xyz;
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) {
      v->srow[r][c] = nim->sto_xyz.m[r][c];
      v->affine[r][c] = (float)(m->m[r][c] * u);
    }
  if (nim->sform_code <= 0 && nim->qform_code <= 0) { /* ANALYZE-style: scaling only */
    memset(v->affine, 0, sizeof v->affine);
    for (int d = 0; d < 3; d++) v->affine[d][d] = v->h[d];
  }
}

/* Reads file number `index` of `nfiles`: the first one fixes the geometry
 * and allocates v->data for all of them; later ones must match it. */
static int read_one(lt_volume *v, const char *path, int index, int nfiles)
{
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    lt_error("%s: %s", path, stat(path, &sb) != 0 ? strerror(errno) : "not a regular file");
    return LT_ERR_INPUT;
  }
  nifti_image *nim = nifti_image_read(path, 0);
  if (!nim) {
    lt_error("%s: not a readable NIfTI-1 file (bad or truncated header)", path);
    return LT_ERR_INPUT;
  }
  int r = check_header(nim, path);
  /* niftilib turns a zero or non-finite voxel size into 1: look at the raw header */
  int swapped = 0;
  nifti_1_header *raw = r ? NULL : nifti_read_header(path, &swapped, 0);
  for (int d = 1; raw && !r && d <= 3; d++)
    if (!(isfinite(raw->pixdim[d]) && raw->pixdim[d] != 0.0f)) {
      lt_error("%s: voxel size %g along axis %d in the header (must be finite and > 0)", path, raw->pixdim[d], d);
      r = LT_ERR_INPUT;
    }
  free(raw);
  const int nt = nim->dim[0] >= 4 ? nim->dim[4] : 1;
  const double u = unit_mm(nim->xyz_units);
  float h[3];
  for (int d = 0; d < 3; d++) h[d] = (float)(fabsf(nim->pixdim[d + 1]) * u);
  /* in mm, after the unit: a denormal size (or one that a micron unit takes
   * to 0) would make every voxel spacing and world vector meaningless */
  for (int d = 0; !r && d < 3; d++)
    if (!(isnormal(h[d]) && h[d] >= 1e-6f && h[d] <= 1e9f)) {
      lt_error("%s: voxel size %g mm along axis %d (must be 1e-6 to 1e9 mm)", path, h[d], d + 1);
      r = LT_ERR_INPUT;
    }
  if (!r && nfiles == 1 && nt < 2) {
    lt_error("%s: a 3D volume (one time point); motion needs a 4D file (x,y,z,t) or two or more 3D files", path);
    r = LT_ERR_INPUT;
  }
  if (!r && nfiles > 1 && nt != 1) {
    lt_error("%s: a 4D file (%d time points) among several files; give one 4D file or only 3D files", path, nt);
    r = LT_ERR_INPUT;
  }
  if (!r && index > 0) {
    int same_n = 1, same_h = 1;
    for (int d = 0; d < 3; d++) {
      same_n &= nim->dim[d + 1] == v->n[d];
      same_h &= fabsf(h[d] - v->h[d]) <= 1e-4f * v->h[d];
    }
    if (!same_n) {
      lt_error("%s: %dx%dx%d voxels, the first file has %dx%dx%d", path, nim->dim[1], nim->dim[2], nim->dim[3], v->n[0],
               v->n[1], v->n[2]);
      r = LT_ERR_INPUT;
    } else if (!same_h) {
      lt_error("%s: voxel size %gx%gx%g mm, the first file has %gx%gx%g mm", path, h[0], h[1], h[2], v->h[0], v->h[1],
               v->h[2]);
      r = LT_ERR_INPUT;
    }
  }
  if (!r && index == 0) {
    for (int d = 0; d < 3; d++) v->n[d] = nim->dim[d + 1], v->h[d] = h[d];
    v->nt = nfiles == 1 ? nt : nfiles;
    v->dt = nim->dim[0] >= 4 && isfinite(nim->pixdim[4]) ? nim->pixdim[4] : 0.0f;
    take_orientation(v, nim);
    const size_t total = (size_t)v->n[0] * v->n[1] * v->n[2] * v->nt;
    v->data = malloc(total * sizeof(float));
    if (!v->data) {
      lt_error("%s: out of memory (%zu MB for the float volumes)", path, total * sizeof(float) >> 20);
      r = LT_ERR_NOMEM;
    }
  }
  if (!r) r = load_data(nim, path);
  if (!r) {
    const size_t per = (size_t)v->n[0] * v->n[1] * v->n[2], cnt = per * (size_t)nt;
    float *dst = v->data + per * (size_t)index;
    const int scaled = nim->scl_slope != 0.0f && isfinite(nim->scl_slope) && isfinite(nim->scl_inter);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < cnt; i++) {
      double x = voxel(nim, i);
      if (scaled) x = x * nim->scl_slope + nim->scl_inter;
      float f = (float)x;
      if (!isfinite(f) && bad++ == 0) first = i;
      dst[i] = f;
    }
    if (bad) {
      const size_t x = first % v->n[0], y = first / v->n[0] % v->n[1], z = first / per % v->n[2], t = first / per;
      lt_error("%s: %zu NaN or infinite voxel(s), the first at x=%zu y=%zu z=%zu t=%zu; clean the data first", path, bad, x,
               y, z, t);
      r = LT_ERR_INPUT;
    }
  }
  nifti_image_free(nim);
  return r;
}

int lt_volume_read(lt_volume *v, const char *const paths[], int npaths)
{
  memset(v, 0, sizeof *v);
  if (npaths < 1) {
    lt_error("flow --3d: no input volume");
    return LT_ERR_INPUT;
  }
  nifti_set_debug_level(0);
  for (int i = 0; i < npaths; i++) {
    int r = read_one(v, paths[i], i, npaths);
    if (r) {
      lt_volume_free(v);
      return r;
    }
  }
  return 0;
}

void lt_volume_free(lt_volume *v)
{
  if (!v) return;
  free(v->data);
  memset(v, 0, sizeof *v);
}

lt_grid lt_volume_grid(const lt_volume *v)
{
  lt_grid g = {{v->n[0], v->n[1], v->n[2]}, {v->h[0], v->h[1], v->h[2]}};
  return g;
}

const float *lt_volume_frame(const lt_volume *v, int t) { return v->data + (size_t)v->n[0] * v->n[1] * v->n[2] * t; }

static int ends_with(const char *s, const char *suf)
{
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

int lt_volume_write_displacement(const char *path, const lt_volume *ref, const float *const f[3], lt_disp_space space)
{
  const size_t per = (size_t)ref->n[0] * ref->n[1] * ref->n[2];
  int dims[8] = {5, ref->n[0], ref->n[1], ref->n[2], 1, 3, 1, 1};
  nifti_set_debug_level(0);
  nifti_image *nim = nifti_make_new_nim(dims, NIFTI_TYPE_FLOAT32, 0);
  float *buf = malloc(3 * per * sizeof(float));
  char *tmp = malloc(strlen(path) + 32);
  if (!nim || !buf || !tmp) {
    lt_error("%s: out of memory", path);
    nifti_image_free(nim);
    free(buf), free(tmp);
    return LT_ERR_NOMEM;
  }
  for (int d = 0; d < 3; d++) nim->pixdim[d + 1] = ref->h[d];
  nim->dx = ref->h[0], nim->dy = ref->h[1], nim->dz = ref->h[2];
  nim->pixdim[4] = nim->dt = ref->dt;
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->intent_code = NIFTI_INTENT_DISPVECT; /* 1006, NIFTI_INTENT_DISPLACEMENT_VECTOR */
  snprintf(nim->intent_name, sizeof nim->intent_name, "%s", space == LT_DISP_WORLD_MM ? "disp world mm" : "disp ijk mm");
  snprintf(nim->descrip, sizeof nim->descrip, "leuktrack CLG flow");
  nim->qform_code = ref->qform_code;
  nim->sform_code = ref->sform_code;
  nim->quatern_b = ref->quatern[0], nim->quatern_c = ref->quatern[1], nim->quatern_d = ref->quatern[2];
  nim->qoffset_x = ref->qoffset[0], nim->qoffset_y = ref->qoffset[1], nim->qoffset_z = ref->qoffset[2];
  nim->qfac = ref->qfac;
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) nim->sto_xyz.m[r][c] = ref->srow[r][c];
  /* the components */
  for (size_t i = 0; i < per; i++) {
    if (space == LT_DISP_VOXEL_MM) {
      for (int c = 0; c < 3; c++) buf[c * per + i] = f[c][i];
    } else {
      const double vx[3] = {f[0][i] / ref->h[0], f[1][i] / ref->h[1], f[2][i] / ref->h[2]};
      for (int r = 0; r < 3; r++)
        buf[r * per + i] = (float)(ref->affine[r][0] * vx[0] + ref->affine[r][1] * vx[1] + ref->affine[r][2] * vx[2]);
    }
  }
  nifti_1_header hdr = nifti_convert_nim2nhdr(nim);
  hdr.vox_offset = 352.0f;
  nifti_image_free(nim);
  snprintf(tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
  int ok = 0;
  znzFile fp = znzopen(tmp, "wb", ends_with(path, ".gz"));
  if (!znz_isnull(fp)) {
    const char ext[4] = {0, 0, 0, 0};
    ok = znzwrite(&hdr, sizeof hdr, 1, fp) == 1 && znzwrite(ext, 1, 4, fp) == 4 &&
         znzwrite(buf, sizeof(float), 3 * per, fp) == 3 * per;
    ok = (znzclose(fp) == 0) && ok;
  }
  int r = 0;
  if (!ok || rename(tmp, path) != 0) {
    lt_error("%s: cannot write the displacement field (%s)", path, errno ? strerror(errno) : "write failed");
    unlink(tmp);
    r = LT_ERR_OUTPUT;
  }
  free(buf), free(tmp);
  return r;
}
