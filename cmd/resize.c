/* cmd/resize.c - `cisc resize IMAGE SIZE`: grow a stopped device's image
 * in place (sfs_grow, device/storagefs/grow.c). */
#include "cmd/cmd.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "device/storagefs/storagefs.h"

#define MIB(b) ((double)(b) * 4096.0 / 1048576.0)

/* Why sfs_grow refused, in the user's terms. */
static int explain(const char *image, int r, uint64_t want, uint64_t cur, uint64_t max)
{
    if (r == -EINVAL)
        return cmd_fail("resize", "%s holds %llu bytes; shrinking an image is not supported "
                        "(only growing)", image, (unsigned long long)(cur * 4096));
    if (r == -EFBIG)
        return cmd_fail("resize", "%s can grow to at most %llu bytes (%.1f MiB), not %llu: "
                        "its block bitmap covers no more, and a larger bitmap would have to "
                        "move the inode table and data after it (not supported); copy the "
                        "files to a new image made with cisc mkfs --size instead", image,
                        (unsigned long long)(max * 4096), MIB(max),
                        (unsigned long long)(want * 4096));
    if (r == -EAGAIN)
        return cmd_fail("resize", "%s was not unmounted cleanly or its journal needs replay: "
                        "start and stop its device once (cisc up, cisc down), then resize",
                        image);
    if (r == -EUCLEAN)
        return cmd_failed("resize", "%s is not a valid ciscfs image (check it with cisc fsck)",
                          image);
    return cmd_fail("resize", "%s: %s", image, strerror(-r));
}

/* Checks the request against the image before its file is extended.
 * Returns 0 (go on), or an exit status. */
static int precheck(const char *image, struct media *m, uint64_t want, uint64_t *cur)
{
    uint64_t max;
    int r = sfs_grow_limit(m, cur, &max);
    if (!r && (want < *cur || want > max))
        r = want < *cur ? -EINVAL : -EFBIG;
    if (r)
        return explain(image, r, want, *cur, max);
    struct sfs_fsck_result res;
    r = sfs_fsck(m, NULL, NULL, &res);
    if (r || res.problems)
        return cmd_failed("resize", "%s has problems: run cisc fsck (and --repair) first",
                          image);
    return 0;
}

static int grow(const char *image, uint64_t size)
{
    uint64_t want = size / 4096, cur;
    struct media *lock;   /* held throughout: no device may start meanwhile */
    int r = media_open_file(image, 0, &lock);
    if (r == -EBUSY)
        return cmd_fail("resize", "%s is in use by a running device: stop it (cisc down) "
                        "first (resizing is offline)", image);
    if (r)
        return cmd_fail("resize", "%s: %s", image, strerror(-r));
    struct media_array_label l;   /* a member is a share of a striped file system */
    if (media_array_label_read(lock, &l) == 0) {
        media_close(lock);
        return cmd_fail("resize", "%s is member %u of an array of %u member images: arrays "
                        "cannot be resized", image, l.index, l.members);
    }
    if ((r = precheck(image, lock, want, &cur)) != 0 || want == cur) {
        media_close(lock);
        if (!r)
            printf("%s: already %llu bytes, nothing to do\n", image,
                   (unsigned long long)(cur * 4096));
        return r;
    }
    struct media *m = NULL;
    if (truncate(image, (off_t)(want * 4096)) != 0)
        r = -errno;
    else
        r = media_open_file(image, MEDIA_NOLOCK, &m);
    if (!r) {
        r = sfs_grow(m, want);
        media_close(m);
    }
    media_close(lock);
    if (r)
        return explain(image, r, want, cur, 0);
    printf("%s: grown from %llu to %llu blocks (%.1f MiB to %.1f MiB)\n", image,
           (unsigned long long)cur, (unsigned long long)want, MIB(cur), MIB(want));
    return CMD_OK;
}

static int run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (cmd_no_option("resize", argv[i]))
            return CMD_USAGE;
    if (argc != 3)
        return cmd_fail("resize", "expected IMAGE and SIZE (see cisc resize --help)");
    uint64_t size;
    if (cmd_parse_size(argv[2], &size) || size < 4096)
        return cmd_fail("resize", "invalid size '%s'", argv[2]);
    return grow(argv[1], size);
}

const struct cisc_cmd cmd_resize = {
    .name = "resize",
    .summary = "grow a stopped device's image",
    .usage =
        "usage: cisc resize IMAGE SIZE\n"
        "\n"
        "Grows the file system in IMAGE to SIZE bytes (suffixes K, M, G; rounded\n"
        "down to 4 KiB blocks), offline: the device must be stopped and the image\n"
        "cleanly unmounted and consistent (cisc fsck). The new space is free data\n"
        "space at the next cisc up (df shows it); files, inodes and the journal\n"
        "are unchanged. Crash-safe: cut short, the image is the old size or the\n"
        "new one, and the next cisc up (or cisc resize) finishes a grow that\n"
        "was cut after its commit point.\n"
        "\n"
        "Limits: shrinking is refused. The block bitmap cannot grow (the inode\n"
        "table and data follow it and are addressed by block number), so an\n"
        "image grows at most to what its bitmap covers: 32640 blocks (127.5 MiB)\n"
        "per bitmap block, e.g. 127.5 MiB for an image made at 64 MiB, 1147.5 MiB\n"
        "for one made at 1 GiB; the error names the limit. Not online: a\n"
        "running device sized its allocator and cache at mount, and its journal\n"
        "never changes the geometry (cisc down, cisc resize, cisc up).\n"
        "\n" CMD_EXIT_HELP,
    .run = run,
};
