/* backend.h - backend selection. The only place that knows whether CUDA was
 * compiled in (backend.c). */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

#include "leuk.h"

/* Number of usable CUDA devices (0 when CUDA is not compiled in, no driver
 * or no device); *why gets a short reason when 0. */
int lt_cuda_device_count(const char **why);

/* Picks the leukocyte backend for `choice` (LT_BACKEND_*) and device index.
 * auto: CUDA when compiled in and a device is usable, else CPU (says which
 * with -v). cuda: LT_ERR_GPU with a clear message when unusable. */
int lt_backend_leuk(int choice, int device, const lt_leuk_backend **out);

/* True when this binary has the CUDA backend. */
int lt_have_cuda(void);

#endif
