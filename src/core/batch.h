/* batch.h - many inputs in one process: `leuktrack [MODE] --jobs K -o DIR/ A B C...`.
 *
 * K worker threads share one process (so the CUDA context and the start-up
 * are paid once) and each runs the mode's run function on one input at a
 * time, with its own settings and parameters (cli.h: lt_cli_for_input):
 * -o DIR/NAME.EXT, output-path options made per input ("{}" -> NAME, a FILE
 * D/F -> D/NAME.F, a DIR D -> D/NAME). NAME is the input's file name without
 * its extension, characters outside [A-Za-z0-9._+-] replaced by '_'; two
 * inputs with one NAME are a usage error (leuktrack-batch names by path).
 * Each run is the one a single `leuktrack -o DIR/NAME.EXT INPUT` would do:
 * its own backend context (own CUDA streams on the shared CUDA context),
 * its own outputs, committed atomically; outputs are byte-identical to a
 * single run. A failing input is reported (its messages are tagged
 * "leuktrack: NAME: ...") and the others go on. OpenMP threads per worker:
 * --threads N if given, else the cores divided by K (at least 1).
 *
 * stdout: one line per input as it finishes, tab-separated:
 *   STATUS EXIT SECONDS INPUT OUTPUT   (STATUS done|failed|interrupted|not-run)
 * then nothing else (stdout carries no results: they are in DIR/).
 * Returns 0 when every input succeeded, LT_ERR_INTERRUPTED after SIGINT/
 * SIGTERM (running inputs keep their .partial files, the rest do not start),
 * else LT_ERR_SOME (exit 1; every failure is listed on stderr with its exit
 * status), or a usage error before anything ran. */
#ifndef LT_BATCH_H
#define LT_BATCH_H

#include "cli.h"

int lt_batch_run(const lt_cli *c);

#endif
