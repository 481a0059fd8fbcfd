/* vcm_cuda.h - the CUDA backend of the VCM stage table (src/vcm/vcm.h),
 * the counterpart of lt_vcm_backend_cpu (cuda/vcm/vcm.cu). C-callable, no
 * CUDA types. Gives the same points in the same order as the CPU and the
 * same vectors to the bit where the similarity has no transcendental
 * (LT_VCM_SIM_MINMAX, LT_VCM_SIM_MINMAX2); tests/test_vcm_cuda.c checks it. */
#ifndef LT_VCM_CUDA_H
#define LT_VCM_CUDA_H

#include "../../src/vcm/vcm.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const lt_vcm_backend lt_vcm_backend_cuda;

#ifdef __cplusplus
}
#endif

#endif
