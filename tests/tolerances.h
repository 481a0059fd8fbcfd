/* tolerances.h - CPU-vs-CUDA equivalence tolerances (tests/test_cuda_equiv.c).
 *
 * How they were calibrated: the CUDA kernels repeat the CPU's arithmetic
 * operation for operation, with non-contracted multiply/add intrinsics where a
 * bit decides a discrete outcome, so GICOV, MG, the dilation and the maxima
 * are expected to be bit-identical and MGVF identical up to atanf in the
 * |z| <= 1e-6 band of the Heaviside. Measured on an NVIDIA H100 80GB HBM3
 * (driver 580, 2026-11-22, docs/CUDA.md) on the Rodinia frame (ROI
 * 0,110,640,219) and the synthetic frame of the test; each bound is the
 * measured maximum times a safety factor, or the accuracy the algorithm
 * needs where the measurement was 0. */
#ifndef LT_TOLERANCES_H
#define LT_TOLERANCES_H

/* GICOV map, max |cpu - cuda| over the ROI. Measured 0 (bit-identical: the
 * same double sums in the same order, no FMA contraction). The bound allows
 * one float ulp at |GICOV| ~ 8 should a compiler reassociate. */
#define TOL_GICOV_MAP 1e-6

/* Dilated MG map. Measured 0: max is exact. */
#define TOL_DILATE_MAP 0.0

/* Maxima lists: identical (count, positions, radii); the GICOV value of each
 * maximum within TOL_GICOV_MAP. A difference could only come from a GICOV
 * difference at a near-tie of mean^2/var, which the bit-identical map rules
 * out. */
#define TOL_MAXIMA_MISMATCH 0

/* Refined detections (centre and mean radius), px. The spline snake is in
 * double; nvcc contracts a*b+c to FMA there, so results differ in the last
 * bits (measured max 1.5e-12 px Rodinia, 5.7e-14 px synthetic). The bound is the accuracy that matters
 * downstream (0.05 px, the requirement). */
#define TOL_REFINE_PX 0.05

/* MGVF field on one window, max |cpu - cuda|. Measured 0 on the test
 * windows (65x33: 146 iterations, 97x49: 500, identical on both); a Heaviside argument within 1e-6 of
 * 0 can differ by 1 ulp of atanf, which stays far below 1e-6 after the
 * contraction of the iteration. */
#define TOL_MGVF 1e-6
/* MGVF iteration counts may differ by this much (convergence sum order). */
#define TOL_MGVF_ITERS 1

/* Tracked cells after N frames: centre and snaxel radii, px. Needed
 * accuracy, as for refinement; measured max 2.8e-14 px (49 cells x 3 frames,
 * Rodinia) and 1.4e-14 px (10 cells x 8 frames, synthetic), no status or
 * MGVF-iteration mismatch (evolution in double with FMA contraction). */
#define TOL_TRACK_PX 0.05

#endif
