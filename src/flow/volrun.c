/* volrun.c - the 3D flow run (`leuktrack flow --3d`, SPEC 4.4, seed 003):
 * a NIfTI volume sequence (one 4D file or several 3D files, volume.h) ->
 * for every consecutive pair of time points the CLG displacement field on
 * the volume's grid (anisotropic voxels honoured: derivatives and
 * smoothing in mm, clg.h), with the volume-preserving term --beta.
 *
 * Volumes are not video: this run does not use the frame loop; it reads the
 * sequence once, then per pair computes, writes and reports, checking the
 * stop flag between pairs (SIGINT/SIGTERM: the pairs done stay, exit 130).
 *
 * Intensities: scaled so that the largest |voxel| of the sequence is 255
 * (alpha's defaults assume 0..255 grey levels, whatever the scanner's units).
 * Outputs:
 *   -o OUT.nii[.gz]    (one pair) the displacement field, NIfTI vector image
 *   -o DIR             (several pairs) DIR/disp_NNNN.nii.gz for pair NNNN -> NNNN+1
 *                      Components in mm: world (RAS) axes by default,
 *                      --displacement voxel: along the voxel axes i, j, k.
 *   --summary FILE     pair,t_s,mean_mag_mm,p95_mag_mm,max_mag_mm,mean_div
 *                      (mean_div: mean divergence of the field, dimensionless)
 *   --color            mid-slice PNG per pair next to the field (the middle
 *                      z slice's in-plane motion, Middlebury colour code)
 * Backend: cpu or cuda as for 2D; when CUDA cannot hold the volume (create
 * fails for lack of GPU memory) auto falls back to the CPU, cuda fails. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "core/loop.h" /* lt_stop_requested */
#include "error.h"
#include "flow/color.h"
#include "flow/flow_mode.h"
#include "flow/volume.h"
#include "image.h"
#include "log.h"
#include "outfile.h"

static int ends_with(const char *s, const char *suf)
{
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && !strcmp(s + n - m, suf);
}

/* Mid-slice PNG: in-plane (x, y) motion of slice z = nz/2, in voxels. */
static int mid_png(const char *path, const float *const f[3], const lt_grid *g)
{
  int w = g->n[0], h = g->n[1], z = g->n[2] / 2;
  size_t off = (size_t)z * w * h, np = (size_t)w * h;
  float *u = malloc(np * sizeof(float)), *v = malloc(np * sizeof(float));
  uint8_t *rgb = malloc(np * 3);
  int err = LT_ERR_NOMEM;
  if (u && v && rgb) {
    for (size_t i = 0; i < np; i++) {
      u[i] = f[0][off + i] / g->h[0];
      v[i] = f[1][off + i] / g->h[1];
    }
    lt_flow_color(u, v, w, h, 0.0f, rgb);
    if (w >= 24 && h >= 24) lt_flow_color_legend(rgb, w, h, 0);
    err = lt_png_write_rgb(path, rgb, w, h);
  } else {
    lt_error("out of memory (mid-slice image)");
  }
  free(u);
  free(v);
  free(rgb);
  return err;
}

int lt_flow_run_3d(const lt_settings *s, const lt_flow_opts *o)
{
  lt_volume vol;
  int err = lt_volume_read(&vol, s->inputs, s->ninputs);
  if (err) return err;
  lt_grid g = lt_volume_grid(&vol);
  const size_t n = lt_grid_size(&g);
  int npairs = vol.nt - 1;
  int first = s->frame_begin, last = s->frame_end >= 0 && s->frame_end - 1 < npairs ? s->frame_end - 1 : npairs;
  float *I0 = NULL, *I1 = NULL, *f[3] = {0}, *div = NULL, *tmp = NULL, *mag = NULL;
  uint32_t *hist = NULL;
  void *ctx = NULL;
  const lt_flow_backend *be = NULL;
  lt_outfile sum = {0};
  char *path = NULL;
  if (first >= last) {
    lt_error("'%s': no pair of time points in the range --frames %d:%d (%d time points)", s->inputs[0], s->frame_begin,
             s->frame_end, vol.nt);
    err = LT_ERR_INPUT;
    goto out;
  }
  lt_info("%s: %dx%dx%d voxels of %gx%gx%g mm, %d time points", s->inputs[0], g.n[0], g.n[1], g.n[2], g.h[0], g.h[1],
          g.h[2], vol.nt);
  int folder = !(npairs == 1 || last - first == 1) || !s->output ||
               !(ends_with(s->output, ".nii") || ends_with(s->output, ".nii.gz"));
  if (s->output && folder && mkdir(s->output, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create the output folder '%s': %s", s->output, strerror(errno));
    err = LT_ERR_OUTPUT;
    goto out;
  }
  if (o->summary && (err = lt_out_open(&sum, o->summary))) goto out;
  const void *stages;
  if ((err = lt_backend_stages("flow", s->backend, s->device, &lt_flow_backend_cpu, &stages))) goto out;
  be = stages;
  I0 = malloc(n * sizeof(float));
  I1 = malloc(n * sizeof(float));
  div = malloc(n * sizeof(float));
  tmp = malloc(n * sizeof(float));
  mag = malloc(n * sizeof(float));
  hist = malloc(65536 * sizeof *hist);
  for (int d = 0; d < 3; d++) f[d] = malloc(n * sizeof(float));
  path = malloc((s->output ? strlen(s->output) : 0) + 64);
  if (!I0 || !I1 || !div || !tmp || !mag || !hist || !f[0] || !f[1] || !f[2] || !path) {
    lt_error("out of memory for %dx%dx%d volumes", g.n[0], g.n[1], g.n[2]);
    err = LT_ERR_NOMEM;
    goto out;
  }
  err = be->create_grid(&ctx, &o->flow, &g);
  if (err == LT_ERR_GPU && s->backend == LT_BACKEND_AUTO && be != &lt_flow_backend_cpu) {
    lt_warn("the volume does not fit the GPU (%zu MB needed); computing on the CPU",
            lt_clg_bytes(&o->flow, &g) >> 20);
    be = &lt_flow_backend_cpu;
    ctx = NULL;
    err = be->create_grid(&ctx, &o->flow, &g);
  }
  if (err) goto out;
  float mx = 1e-20f;
  for (size_t i = 0; i < n * (size_t)vol.nt; i++) mx = fmaxf(mx, fabsf(vol.data[i]));
  const float k = 255.0f / mx;
  if (sum.fp) fprintf(sum.fp, "pair,t_s,mean_mag_mm,p95_mag_mm,max_mag_mm,mean_div\n");
  double t_solve = 0, t0 = lt_now();
  for (int p = first; p < last; p++) {
    if (lt_stop_requested) {
      lt_error("interrupted after %d pairs", p - first);
      err = LT_ERR_INTERRUPTED;
      goto out;
    }
    const float *a = lt_volume_frame(&vol, p), *b = lt_volume_frame(&vol, p + 1);
    for (size_t i = 0; i < n; i++) {
      I0[i] = a[i] * k;
      I1[i] = b[i] * k;
    }
    double ts = lt_now();
    if ((err = be->compute_grid(ctx, I0, I1, f))) goto out;
    t_solve += lt_now() - ts;
    if (s->output) {
      if (folder) sprintf(path, "%s/disp_%04d.nii.gz", s->output, p);
      else strcpy(path, s->output);
      if ((err = lt_volume_write_displacement(path, &vol, (const float *const *)f,
                                              o->voxel_axes ? LT_DISP_VOXEL_MM : LT_DISP_WORLD_MM)))
        goto out;
      if (o->color) {
        if (folder) sprintf(path, "%s/disp_%04d_mid.png", s->output, p);
        else {
          strcpy(path, s->output);
          path[strlen(path) - (ends_with(path, ".gz") ? 7 : 4)] = 0;
          strcat(path, "_mid.png");
        }
        if ((err = mid_png(path, (const float *const *)f, &g))) goto out;
      }
    }
    if (sum.fp) {
      double msum = 0, mmax = 0, dsum = 0;
      for (size_t i = 0; i < n; i++) {
        mag[i] = sqrtf(f[0][i] * f[0][i] + f[1][i] * f[1][i] + f[2][i] * f[2][i]);
        msum += mag[i];
        if (mag[i] > mmax) mmax = mag[i];
      }
      lt_grid_divergence((const float *const *)f, div, tmp, &g);
      for (size_t i = 0; i < n; i++) dsum += div[i];
      size_t k95 = (size_t)ceil(0.95 * (double)n);
      double t_s = vol.dt > 0 ? p * (double)vol.dt : p;
      double p95 = lt_flow_kth_smallest(mag, n, k95 > 0 ? k95 : 1, hist);
      fprintf(sum.fp, "%d,%.6f,%.5f,%.5f,%.5f,%.6f\n", p, t_s, msum / n, p95, mmax,
              dsum / n);
      fflush(sum.fp);
      if ((err = lt_out_check(&sum))) goto out;
    }
  }
  if (sum.fp && (err = lt_out_commit(&sum))) goto out;
  lt_info("%d pairs, %s backend", last - first, be->name);
  if (s->stats)
    fprintf(stderr, "leuktrack stats: flow --3d, backend %s, %d pairs of %dx%dx%d, %.3f s, solve %.4f s per pair, "
            "%ld launches per pair\n", be->name, last - first, g.n[0], g.n[1], g.n[2], lt_now() - t0,
            t_solve / (last - first), be->launches(ctx));
out:
  lt_out_abort(&sum, err == LT_ERR_INTERRUPTED);
  if (be && ctx) be->destroy(ctx);
  free(I0);
  free(I1);
  free(div);
  free(tmp);
  free(mag);
  free(hist);
  for (int d = 0; d < 3; d++) free(f[d]);
  free(path);
  lt_volume_free(&vol);
  return err;
}
