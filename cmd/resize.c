/* cmd/resize.c - `cisc resize IMAGE SIZE`: grow a stopped device's image
 * in place (sfs_grow, device/storagefs/grow.c); with --members, an array
 * of member images, every member by the same number of whole stripes
 * (media_array_relabel). */
#include "cmd/cmd.h"
#include "cmd/members.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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
        return cmd_fail("resize", "%s is member %u of an array of %u member images: resize "
                        "the whole array (cisc resize --members %u IMAGE SIZE, or --members "
                        "IMG1,IMG2,... SIZE)", image, l.index, l.members, l.members);
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

/* ---- arrays ---- */

/* Extends member file path to at least blocks blocks, durably (a label
 * that says more than the file holds is refused at start). */
static int extend_member(const char *path, uint64_t blocks)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int r = fstat(fd, &st) ? -errno : 0;
    if (!r && (uint64_t)st.st_size < blocks * 4096 && ftruncate(fd, (off_t)(blocks * 4096)))
        r = -errno;
    if (!r && fsync(fd))
        r = -errno;
    close(fd);
    return r;
}

/* Every member extended and relabelled with member_blocks, in that order
 * (media.h media_array_relabel: cut short, the array stays its old size). */
static int grow_members(const struct cmd_members *a, uint64_t member_blocks)
{
    struct media *mem[MEDIA_ARRAY_MAX];
    int r = 0;
    for (unsigned i = 0; !r && i < a->n; i++)
        r = extend_member(a->path[i], 1 + member_blocks);
    unsigned opened = 0;
    for (; !r && opened < a->n; opened++)
        r = media_open_file(a->path[opened], MEDIA_NOLOCK, &mem[opened]);
    if (r && opened)
        opened--;   /* the one that failed is not open */
    if (!r)
        r = media_array_relabel(mem, a->n, member_blocks);
    for (unsigned i = 0; i < opened; i++)
        media_close(mem[i]);
    return r;
}

/* Grows the array's file system to want blocks (rounded up to whole
 * stripes on every member): members first, then sfs_grow on the array,
 * all under the members' locks. */
static int grow_array(const struct cmd_members *a, uint64_t size)
{
    uint64_t stripes = (size / 4096 + (uint64_t)a->n * MEDIA_ARRAY_STRIPE - 1) /
                       ((uint64_t)a->n * MEDIA_ARRAY_STRIPE);
    uint64_t member_blocks = stripes * MEDIA_ARRAY_STRIPE, want = member_blocks * a->n, cur;
    struct media *lock, *m = NULL;   /* lock: held throughout */
    int r = cmd_members_open("resize", a, 0, &lock);
    if (r)
        return r;
    if ((r = precheck(a->name, lock, want, &cur)) != 0 || want == cur) {
        media_close(lock);
        if (!r)
            printf("%s: already %llu bytes, nothing to do\n", a->name,
                   (unsigned long long)(cur * 4096));
        return r;
    }
    r = grow_members(a, member_blocks);
    if (!r)
        r = media_array_open_files((const char *const *)a->path, a->n, MEDIA_NOLOCK, NULL, 0,
                                   &m);
    if (!r) {
        r = sfs_grow(m, want);
        media_close(m);
    }
    media_close(lock);
    if (r)
        return explain(a->name, r, want, cur, 0);
    printf("%s: grown from %llu to %llu blocks (%.1f MiB to %.1f MiB), %llu per member\n",
           a->name, (unsigned long long)cur, (unsigned long long)want, MIB(cur), MIB(want),
           (unsigned long long)member_blocks);
    return CMD_OK;
}

static int run(int argc, char **argv)
{
    const char *members = NULL, *pos[3];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--members") && i + 1 < argc)
            members = argv[++i];
        else if (cmd_no_option("resize", argv[i]))
            return CMD_USAGE;
        else if (npos < 3)
            pos[npos++] = argv[i];
        else
            npos++;
    }
    int want_pos = members && npos == 1 ? 1 : 2;   /* --members A,B SIZE */
    if (npos != want_pos)
        return cmd_fail("resize", "expected IMAGE and SIZE (see cisc resize --help)");
    uint64_t size;
    if (cmd_parse_size(pos[npos - 1], &size) || size < 4096)
        return cmd_fail("resize", "invalid size '%s'", pos[npos - 1]);
    if (!members)
        return grow(pos[0], size);
    struct cmd_members a;
    int r = cmd_members_parse("resize", members, npos == 2 ? pos[0] : NULL, &a);
    if (!r)
        r = grow_array(&a, size);
    cmd_members_free(&a);
    return r;
}

const struct cisc_cmd cmd_resize = {
    .name = "resize",
    .summary = "grow a stopped device's image",
    .usage =
        "usage: cisc resize IMAGE SIZE\n"
        "       cisc resize --members N IMAGE SIZE\n"
        "       cisc resize --members IMG1,IMG2,... SIZE\n"
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
        "\n"
        "--members  an array of member images (cisc mkfs --members; the same N\n"
        "          and IMAGE, or the same list), opened as cisc up opens them.\n"
        "          SIZE is the array's new total, rounded up to whole 64 KiB\n"
        "          stripes on every member: every member grows by the same\n"
        "          amount, each old block keeps its place (block b stays on\n"
        "          member (b / 16) % N), and the new stripes follow the old ones.\n"
        "          Adding members is not supported: it changes where every block\n"
        "          lives, so all data would move. Crash-safe: the member files are\n"
        "          extended, then their labels rewritten one by one, then the file\n"
        "          system grows; cut short between labels the array starts at its\n"
        "          old size, and running the resize again finishes it. Under\n"
        "          --media flash each member's model is rebuilt for its new size at\n"
        "          the next cisc up (its saved FTL state is of the old geometry).\n"
        "\n" CMD_EXIT_HELP,
    .run = run,
};
