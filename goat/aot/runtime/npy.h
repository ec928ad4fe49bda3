/* .npy files for compiled programs: load and save, as goat/interp/npyio.py reads and writes
 * them (read_npy and save_npy), with the same messages.  See npy.c. */
#ifndef GOAT_NPY_H
#define GOAT_NPY_H

#include "goat_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read the .npy file `path` into `out` (preallocated: the product of dims cells, float64,
 * row-major), converting to float64 as read_npy does; its shape must equal (rank, dims).
 * `shown` is the file name as the program wrote it, used in messages where read_npy uses
 * its `shown` (NULL: `path`).  On any problem: goat_fail(site, "%s", message) with the
 * message read_npy's OpError would have. */
void goat_load_npy(double *out, const char *path, const char *shown, int64_t rank,
                   const int64_t *dims, const char *site);

/* Write `data` (rank, dims; float64, row-major) to `path` as a .npy file (format 1.0, '<f8',
 * C order: the bytes numpy.save writes), atomically as save_npy does: a temporary file in
 * the same folder, written, fsynced, given the mode save_npy gives, renamed onto `path`, the
 * folder fsynced.  Errors: goat_fail(site, "%s", message) with save_npy's message. */
void goat_save_npy(const char *path, const char *shown, const double *data, int64_t rank,
                   const int64_t *dims, const char *site);

#ifdef __cplusplus
}
#endif
#endif
