/* tolerances.h - CPU-vs-CUDA equivalence tolerances (tests/test_cuda_equiv.c).
 *
 * How they were calibrated: the CUDA kernels repeat the CPU's arithmetic
 * operation for operation, with non-contracted multiply/add intrinsics where a
 * bit decides a discrete outcome, so GICOV, MG, the dilation and the maxima
 * are expected to be bit-identical, and so is MGVF (no transcendental
 * function left in it: its Heaviside is the step, mgvf.c). Measured on an NVIDIA H100 80GB HBM3
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
 * windows (65x33: 148 iterations, 97x49: 500, identical on both): the
 * per-pixel arithmetic is the same operations in the same order. The bound
 * is far below what the snake resolves. */
#define TOL_MGVF 1e-6
/* MGVF iteration counts: measured identical. The convergence sums are
 * added in another order on the GPU (double; rounding ~1e-16 relative), so
 * a mean |change| within that of the tolerance could stop one check
 * (LT_MGVF_CHECK_EVERY = 4 iterations) apart; none did, and the bound
 * keeps it so: such a case would show here first. */
#define TOL_MGVF_ITERS 0

/* Tracked cells after N frames: centre and snaxel radii, px. Needed
 * accuracy, as for refinement; measured max 2.8e-14 px (49 cells x 3 frames,
 * Rodinia) and 1.4e-14 px (10 cells x 8 frames, synthetic), no status or
 * MGVF-iteration mismatch (evolution in double with FMA contraction). */
#define TOL_TRACK_PX 0.05

#endif
