/*
 * device/engine/handle.h - the device's table of open files and directories.
 *
 * An open (from FUSE, or from a libcisc session, which has a table of its
 * own) gets a 64-bit handle: slot index + 1 in the low 32 bits, the slot's
 * generation in the high 32 bits, so a stale or forged handle is
 * recognised instead of naming a file someone else opened.
 *
 * Invariants:
 *   1. A handle is valid from hdl_open until hdl_close; any other value
 *      gets -EBADF.
 *   2. A slot's generation changes every time it is freed.
 *   3. All calls are thread-safe (one mutex, held briefly).
 *
 * Debug and sanitizer builds check the table after every change: the
 * open count, the free list (every free slot on it once) and 2
 * (hdl_check in handle.c).
 */
#ifndef CISC_DEVICE_HANDLE_H
#define CISC_DEVICE_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hdl {
    uint64_t ino;
    uint32_t flags;      /* O_* flags it was opened with */
    bool dir;
};

struct hdl_table;

/* Returns 0 and sets *out, or -ENOMEM. */
int hdl_table_create(struct hdl_table **out);

/* Caps the number of open entries (hdl_open then fails with -EMFILE);
 * 0 = the built-in maximum. */
void hdl_table_set_limit(struct hdl_table *t, uint32_t max);

/* Frees the table (open entries are forgotten: drain first). */
void hdl_table_destroy(struct hdl_table *t);

/* Records h; sets *fh. Returns 0 or -ENOMEM / -EMFILE. */
int hdl_open(struct hdl_table *t, const struct hdl *h, uint64_t *fh);

/* Copies the entry of fh into *out. Returns 0 or -EBADF. */
int hdl_get(struct hdl_table *t, uint64_t fh, struct hdl *out);

/* Removes fh, copying its entry into *out. Returns 0 or -EBADF. */
int hdl_close(struct hdl_table *t, uint64_t fh, struct hdl *out);

/* Removes any one open entry into *out; returns 1, or 0 when empty. */
int hdl_drain(struct hdl_table *t, struct hdl *out);

/* Number of open entries. */
uint64_t hdl_count(struct hdl_table *t);

#ifdef __cplusplus
}
#endif

#endif
