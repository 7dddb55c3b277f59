/*
 * device/storagefs/map_read.h - zero-copy reads inside the device: a file
 * range shown where its bytes are (the mapped media, media_view) instead
 * of copied into a buffer, for engine steps that only read them (a bpf
 * step's input). sfs_read is the fallback whenever a view cannot be given.
 *
 * Invariants:
 *   1. A view is given only when the media's bytes are the file's newest
 *      bytes for the whole range: every block is mapped by a written
 *      extent (holes and unwritten extents read as zeros that are not on
 *      the media), the blocks are consecutive on the image, and the file
 *      is not hot (jdata.h: no journaled block of it waits in the block
 *      cache for its checkpoint, so the media is not older than the
 *      cache). File data is never cached otherwise (file.h).
 *   2. The view is taken under ip->rw (shared), like sfs_read, so it
 *      never sees a half-done extent change. After the call it stays the
 *      file's bytes only while the caller keeps away what could change
 *      the mapping or move the newest copy off the media:
 *        - truncation, hole punching, the reaping of an unlinked file
 *          (they free blocks that may be reused): the caller holds a
 *          reference to the inode (sfs_iget) and excludes size and
 *          extent changes (the engine: the file's stripe lock, which
 *          those take exclusively);
 *        - journaled data writes (they leave newer bytes in the cache):
 *          a file that is not hot becomes hot only by a data-journaled
 *          transaction writing it, which only a fused op holding the
 *          file's stripe exclusively starts (device/engine/fused/apply.c),
 *          and the inode cannot be evicted and reloaded hot (jdata.h
 *          invariant 6) while the caller's reference holds it.
 *      Plain overwrites in place (a concurrent write through the mount
 *      holds the stripe shared) go into the viewed blocks and show at
 *      once: a caller that needs the bytes fixed copies them.
 *   3. The pointer itself stays valid until the media is closed.
 */
#ifndef CISC_SFS_MAP_READ_H
#define CISC_SFS_MAP_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sfs;

/* Shows [off, off + len) of regular file ino (clamped to its size) in
 * place: sets *out to its first byte and returns the bytes shown (0, *out
 * NULL, at or past EOF). -EAGAIN when it cannot be shown in place (media
 * without views, a hole, an unwritten extent, extents not consecutive on
 * the image, journaled data not yet checkpointed): read it with sfs_read.
 * -EISDIR, -EINVAL (not a regular file) or -errno. */
ssize_t sfs_read_view(struct sfs *fs, uint64_t ino, uint64_t off, size_t len,
                      const uint8_t **out);

#endif
