/*
 * device/media/media_mmap.h - the mapped backend of the media seam: the
 * image file mapped MAP_SHARED, blocks read and written with memcpy
 * instead of one pread/pwrite system call each (media_open_file with
 * MEDIA_MMAP; `cisc up --media-io mmap`).
 *
 * Durability and ordering are the file backend's (media.h invariant 2):
 * a MAP_SHARED mapping is the file's page cache, so media_flush's
 * fdatasync writes back every byte stored through the mapping before it
 * returns, and bytes not yet flushed may be lost at a power cut exactly
 * as the file backend's unflushed pwrites. The journal keeps its order
 * with the same flushes it makes for the file backend.
 *
 * Invariants (in addition to those of media.h):
 *   1. A store into the mapping never meets a block without backing
 *      store (a full disk would raise SIGBUS instead of -ENOSPC): only
 *      blocks marked in the allocation bitmap are written with memcpy.
 *      The first write to a block not marked gives its group of 64
 *      blocks backing store with MADV_POPULATE_WRITE (which fails where
 *      a store would fault; one call for a run of appends, and the pages
 *      come prefaulted writable), or else goes through pwrite, which
 *      allocates the block or fails with -errno.
 *   2. A bit of the bitmap is set only for a block the file holds data
 *      for (SEEK_DATA at open, a populated group, or a pwrite that
 *      returned), and cleared before its hole is punched by discard.
 *      So the image may hold backing store (zeros) for up to 63 blocks
 *      around each written one that the file system does not use.
 *      On a copy-on-write file system (btrfs) an overwrite needs new
 *      space too: there a full disk can still fault.
 *   3. The mapping covers the file's size at open (nblocks); the file is
 *      never shortened while mapped (the exclusive lock keeps other
 *      devices and cisc resize away; an image shrunk by hand under a
 *      running device faults, where the file backend reads -EIO). Growth
 *      (cisc resize) happens with the device stopped: the next open maps
 *      the grown file.
 *   4. Reads through media_fd (splice) see every write, since the
 *      descriptor and the mapping share one page cache.
 *   5. media_view hands out pointers into the mapping (read them only:
 *      a store there would bypass invariant 1); they stay valid until
 *      close and show every write at once. Reading a block the file
 *      system holds data in never faults: the block has backing store
 *      (written), and the file is never shortened (invariant 3).
 */
#ifndef CISC_DEVICE_MEDIA_MMAP_H
#define CISC_DEVICE_MEDIA_MMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "device/media/media.h"

/* Maps the open image fd of size_bytes (whole blocks are used) and takes
 * ownership of fd (closed on failure too). Returns 0 and sets *out, or
 * -errno. Called by media_open_file for MEDIA_MMAP. */
int media_mmap_wrap(int fd, uint64_t size_bytes, bool rdonly, struct media **out);

#endif
