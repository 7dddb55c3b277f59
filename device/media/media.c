/*
 * device/media/media.c - the file backend of the media seam: a backing image
 * file accessed with pread/pwrite, made durable with fdatasync, with
 * discard as a hole punch and an exclusive flock against a second device.
 *
 * Invariants (in addition to those of media.h):
 *   1. Every read and write loops until the whole range is transferred;
 *      a read that meets end-of-file is -EIO, never silent zeros.
 *   2. The file descriptor is the only state; it is never shared, so all
 *      calls are thread-safe through the kernel's own positional I/O.
 */
#include "device/media/media.h"
#include "device/media/media_mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct media_file {
    struct media m;     /* first: the media a caller sees */
    int fd;
    int rdonly;
};

static struct media_file *to_file(struct media *m)
{
    return (struct media_file *)m;
}

static int range_ok(const struct media *m, uint64_t blk, uint64_t n)
{
    return blk <= m->nblocks && n <= m->nblocks - blk;
}

static int file_read(struct media *m, uint64_t blk, uint32_t n, void *buf)
{
    if (!range_ok(m, blk, n))
        return -EINVAL;
    int fd = to_file(m)->fd;
    size_t len = (size_t)n * MEDIA_BLOCK_SIZE, done = 0;
    off_t off = (off_t)(blk * MEDIA_BLOCK_SIZE);
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EIO;      /* the file is shorter than its geometry */
        done += (size_t)r;
    }
    return 0;
}

/* pwrite of len bytes at byte off of the image, whole (invariant 1). */
static int write_at(struct media *m, off_t off, const void *buf, size_t len)
{
    if (to_file(m)->rdonly)
        return -EROFS;
    int fd = to_file(m)->fd;
    size_t done = 0;
    while (done < len) {
        ssize_t r = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        done += (size_t)r;
    }
    return 0;
}

static int file_write(struct media *m, uint64_t blk, uint32_t n, const void *buf)
{
    if (!range_ok(m, blk, n))
        return -EINVAL;
    return write_at(m, (off_t)(blk * MEDIA_BLOCK_SIZE), buf, (size_t)n * MEDIA_BLOCK_SIZE);
}

static int file_write_part(struct media *m, uint64_t blk, uint32_t off, uint32_t len,
                           const void *buf)
{
    if (!range_ok(m, blk, 1))
        return -EINVAL;
    return write_at(m, (off_t)(blk * MEDIA_BLOCK_SIZE + off), buf, len);
}

static int file_flush(struct media *m)
{
    if (to_file(m)->rdonly)
        return 0;
    return fdatasync(to_file(m)->fd) ? -errno : 0;
}

/* Writes zeros where the file system cannot punch holes. */
static int zero_fill(struct media *m, uint64_t blk, uint64_t n)
{
    static const uint8_t zeros[64 * MEDIA_BLOCK_SIZE];
    while (n) {
        uint32_t k = n > 64 ? 64 : (uint32_t)n;
        int r = file_write(m, blk, k, zeros);
        if (r)
            return r;
        blk += k;
        n -= k;
    }
    return 0;
}

static int file_discard(struct media *m, uint64_t blk, uint64_t n)
{
    if (!range_ok(m, blk, n))
        return -EINVAL;
    if (to_file(m)->rdonly)
        return -EROFS;
    if (n == 0)
        return 0;
    int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    if (fallocate(to_file(m)->fd, mode, (off_t)(blk * MEDIA_BLOCK_SIZE),
                  (off_t)(n * MEDIA_BLOCK_SIZE)) == 0)
        return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS)
        return -errno;
    return zero_fill(m, blk, n);
}

static void file_close(struct media *m)
{
    close(to_file(m)->fd);    /* also drops the flock */
    free(m);
}

static int file_fd(struct media *m)
{
    return to_file(m)->fd;
}

static const struct media_ops file_ops = {
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .discard = file_discard,
    .close = file_close,
    .fd = file_fd,
    .write_part = file_write_part,
};

/* Wraps an open descriptor: takes the lock, sizes the media. */
static int wrap_fd(int fd, unsigned flags, struct media **out)
{
    if (!(flags & MEDIA_NOLOCK) && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno == EWOULDBLOCK ? EBUSY : errno;
        close(fd);
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = S_ISREG(st.st_mode) ? errno : EINVAL;
        close(fd);
        return -e;
    }
    if (flags & MEDIA_MMAP)
        return media_mmap_wrap(fd, (uint64_t)st.st_size, (flags & MEDIA_RDONLY) != 0, out);
    struct media_file *f = calloc(1, sizeof(*f));
    if (!f) {
        close(fd);
        return -ENOMEM;
    }
    f->m.ops = &file_ops;
    f->m.nblocks = (uint64_t)st.st_size / MEDIA_BLOCK_SIZE;
    f->fd = fd;
    f->rdonly = (flags & MEDIA_RDONLY) != 0;
    *out = &f->m;
    return 0;
}

int media_open_file(const char *path, unsigned flags, struct media **out)
{
    int oflags = (flags & MEDIA_RDONLY ? O_RDONLY : O_RDWR) | O_CLOEXEC;
    int fd = open(path, oflags);
    if (fd < 0)
        return -errno;
    return wrap_fd(fd, flags, out);
}

int media_create_file(const char *path, uint64_t size_bytes, unsigned flags,
                      struct media **out)
{
    uint64_t nblk = size_bytes / MEDIA_BLOCK_SIZE;
    if (nblk == 0)
        return -EINVAL;
    int oflags = O_RDWR | O_CREAT | O_CLOEXEC | (flags & MEDIA_CREATE_EXCL ? O_EXCL : 0);
    int fd = open(path, oflags, 0600);
    if (fd < 0)
        return -errno;
    /* Lock before truncating: an image in use by a device is not touched. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno == EWOULDBLOCK ? EBUSY : errno;
        close(fd);
        return -e;
    }
    /* Private, also when an existing file is made an image: it will hold
     * every file's bytes whatever their permissions (README). */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, 0) != 0 ||
        ftruncate(fd, (off_t)(nblk * MEDIA_BLOCK_SIZE)) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return wrap_fd(fd, MEDIA_NOLOCK, out);   /* the lock is already held */
}
