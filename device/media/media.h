/*
 * device/media/media.h - the one seam between the device and its backing image.
 *
 * Every byte StorageFS reads or writes goes through a struct media. The
 * file backend does pread/pwrite on the image (or, with MEDIA_MMAP, copies
 * to and from a shared mapping of it: media_mmap.h); tests stack a fault backend
 * on top that fails, tears or drops writes after the Nth one ("power cut"),
 * then remount to check what survived. A later issue adds the hardware
 * model (media latency and bandwidth per block) here, in one place.
 *
 * Invariants:
 *   1. I/O is in whole blocks of MEDIA_BLOCK_SIZE at block-aligned offsets,
 *      but for media_write_part: bytes [off, off + len) of one block, its
 *      other bytes left as they are (backends that can: the file, mapped
 *      and RAM ones; others say -EOPNOTSUPP and the caller writes the
 *      whole block). It is one write like a block write: it lands whole
 *      or, at a power cut, torn, but changes no byte outside its range.
 *   2. media_flush() returns only when every write that returned before it
 *      is durable (fdatasync for the file backend). Writes not followed by
 *      a flush may be lost or torn at a power cut, in any order.
 *   3. All calls are thread-safe; concurrent I/O to different blocks runs
 *      in parallel.
 *   4. Errors are -errno; a short read of a file shorter than its
 *      geometry reads as -EIO, never as silent zeros.
 */
#ifndef CISC_DEVICE_MEDIA_H
#define CISC_DEVICE_MEDIA_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEDIA_BLOCK_SIZE 4096u

struct media;

struct media_ops {
    int (*read)(struct media *m, uint64_t blk, uint32_t nblk, void *buf);
    int (*write)(struct media *m, uint64_t blk, uint32_t nblk, const void *buf);
    int (*flush)(struct media *m);
    /* Deallocates blocks (hole punch); contents then read as zeros. */
    int (*discard)(struct media *m, uint64_t blk, uint64_t nblk);
    void (*close)(struct media *m);
    /* Optional: the descriptor holding block b at byte b * MEDIA_BLOCK_SIZE. */
    int (*fd)(struct media *m);
    /* Optional: a hint that blocks no longer hold live data (TRIM). Unlike
     * discard it changes no byte: a flash model stops migrating them. */
    void (*trim)(struct media *m, uint64_t blk, uint64_t nblk);
    /* Optional: blocks [blk, blk + nblk) in place (media_view). */
    const void *(*view)(struct media *m, uint64_t blk, uint64_t nblk);
    /* Optional: bytes [off, off + len) of block blk (media_write_part). */
    int (*write_part)(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                      const void *buf);
};

struct media {
    const struct media_ops *ops;
    uint64_t nblocks;            /* size of the medium in blocks */
};

/* Flags for media_open_file(). */
#define MEDIA_RDONLY  0x1u   /* open read-only */
#define MEDIA_NOLOCK  0x2u   /* do not take the exclusive image lock */
#define MEDIA_MMAP    0x4u   /* map the image and copy with memcpy (media_mmap.h)
                              * instead of a pread/pwrite per call */

/* Opens an image file. Unless MEDIA_NOLOCK, takes an exclusive lock
 * (flock LOCK_EX|LOCK_NB) on it: a second opener gets -EBUSY.
 * nblocks is the file size rounded down to whole blocks.
 * Returns 0 and sets *out, or -errno. */
int media_open_file(const char *path, unsigned flags, struct media **out);

/* Flags for media_create_file(). */
#define MEDIA_CREATE_EXCL 0x1u   /* fail with -EEXIST if the path exists */

/* Creates (or, without MEDIA_CREATE_EXCL, truncates and re-creates) a
 * private (mode 0600) sparse image file of size_bytes (rounded down to whole blocks; at least
 * one block), then opens it as media_open_file(path, 0) would.
 * Returns 0 and sets *out, or -errno. */
int media_create_file(const char *path, uint64_t size_bytes, unsigned flags,
                      struct media **out);

static inline int media_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    return m->ops->read(m, blk, n, buf);
}

static inline int media_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    return m->ops->write(m, blk, n, buf);
}

/* Writes len bytes of buf at byte off of block blk (off + len <= one
 * block), leaving the block's other bytes as they are: a small write into
 * a block that holds data needs neither a read of the block nor a copy of
 * it (invariant 1). Returns 0, -EOPNOTSUPP when the backend writes whole
 * blocks only (then write the block), or -errno. */
static inline int media_write_part(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                                   const void *buf)
{
    if (!m->ops->write_part)
        return -EOPNOTSUPP;
    if (off > MEDIA_BLOCK_SIZE || len > MEDIA_BLOCK_SIZE - off)
        return -EINVAL;
    return m->ops->write_part(m, blk, off, len, buf);
}

static inline int media_flush(struct media *m)
{
    return m->ops->flush(m);
}

static inline int media_discard(struct media *m, uint64_t blk, uint64_t n)
{
    return m->ops->discard(m, blk, n);
}

/* Tells the medium that blocks [blk, blk + n) hold no live data any more
 * (the file system freed them). A hint: contents are unchanged, and a
 * backend without a model of its own ignores it. */
static inline void media_trim(struct media *m, uint64_t blk, uint64_t n)
{
    if (m->ops->trim)
        m->ops->trim(m, blk, n);
}

/* Zero-copy reads (splicing file data straight into a reply): the open
 * descriptor whose bytes at blk * MEDIA_BLOCK_SIZE hold block blk (the
 * image file), owned by m; or -EOPNOTSUPP when the backend has none (the
 * fault backend), and callers copy through media_read instead. Reads
 * through it see every write that returned, like media_read. */
static inline int media_fd(struct media *m)
{
    return m->ops->fd ? m->ops->fd(m) : -EOPNOTSUPP;
}

/* Zero-copy reads in the device's own memory (a bpf step's input): the
 * bytes of blocks [blk, blk + n) where they are, or NULL when the backend
 * cannot show them in place (only the mapped backend can: media_mmap.h),
 * and callers copy through media_read instead. The pointer stays valid
 * until media_close; the bytes behind it are the blocks' current
 * contents, so they change when the blocks are written (callers keep
 * writers away while they read, or copy first). */
static inline const void *media_view(struct media *m, uint64_t blk, uint64_t n)
{
    return m->ops->view ? m->ops->view(m, blk, n) : NULL;
}

static inline void media_close(struct media *m)
{
    if (m)
        m->ops->close(m);
}

/*
 * Arrays (ScalaCache 5.5, media_array.c): N member media, each an image
 * of its own (with its own flash model when there is one), striped
 * MEDIA_ARRAY_STRIPE blocks (64 KiB) round-robin into one media that one
 * StorageFS fills. Block 0 of every member is its label: the array's
 * random id, the member count, the member's index and the data blocks per
 * member, so that a missing, swapped or foreign member is named at start.
 */
#define MEDIA_ARRAY_STRIPE 16u     /* blocks: 64 KiB */
#define MEDIA_ARRAY_MAX    64u

struct media_array_label {
    uint32_t members, index;
    uint64_t member_blocks;        /* data blocks per member (after the label) */
    uint8_t id[16];                /* the array's */
};

/* Reads m's label. Returns 0, -ENOENT (m is not an array member),
 * -EUCLEAN (a damaged label) or -errno. */
int media_array_label_read(struct media *m, struct media_array_label *l);

/* Labels n fresh members (member i gets index i, a new random id; each
 * member's data is the largest stripe multiple the smallest holds after
 * its label) and flushes them. Returns 0, -ENOSPC (a member holds no
 * stripe) or -errno. */
int media_array_format(struct media *const *members, unsigned n);

/* Checks that members[0..n), named names[i] in messages, are the members
 * of one array in order: each labelled, the same id and count, its own
 * index, as long as its label says (the labels' sizes may differ after a
 * grow cut short: media_array_relabel). Returns 0, or -EINVAL / -EUCLEAN / -errno with
 * a one-line reason naming the member in err. */
int media_array_check(struct media *const *members, const char *const *names, unsigned n,
                      char *err, size_t errlen);

/* Stripes members[0..n) (media_array_check passed) into one media of
 * n * member_blocks blocks (the smallest of the labels' when they differ:
 * a grow cut short, see media_array_relabel), which owns them from then
 * on (also closes them). Returns 0 and sets *out, or -errno (the members
 * stay the caller's). No media_fd: reads copy. */
int media_array_open(struct media *const *members, unsigned n, struct media **out);

/* Opens the member images paths[0..n) with media_open_file(flags) (so
 * locked unless MEDIA_NOLOCK), checks their labels (media_array_check)
 * and stripes them (media_array_open), as the device does. Returns 0 and
 * sets *out, or -errno (-EBUSY: a member is in use) with a one-line
 * reason naming the member in err; then nothing stays open. */
int media_array_open_files(const char *const *paths, unsigned n, unsigned flags, char *err,
                           size_t errlen, struct media **out);

/* Grows the array's members (their files already extended to at least
 * 1 + member_blocks blocks) by rewriting each label with member_blocks
 * (a multiple of MEDIA_ARRAY_STRIPE), one member at a time, each flushed.
 * The stripe map keeps every old block in place; cut short, the labels
 * disagree and the array opens at the smallest member_blocks, so the
 * file system on it must grow only after this returns. Returns 0, or
 * -EINVAL (a member too short, not labelled, or a bad size) or -errno. */
int media_array_relabel(struct media *const *members, unsigned n, uint64_t member_blocks);

/* The number of members of array m (0 when m is not an array). */
unsigned media_array_members(struct media *m);

/* True when array m's member labels disagree on the size: a grow cut
 * short between labels (media_array_relabel), so m is the smallest. */
bool media_array_uneven(struct media *m);

/* Member i of array m, or NULL. */
struct media *media_array_member(struct media *m, unsigned i);

#endif
