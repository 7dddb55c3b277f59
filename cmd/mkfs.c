/* cmd/mkfs.c - `cisc mkfs`: create a StorageFS image file. */
#include "cmd/cmd.h"
#include "cmd/members.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/le.h"
#include "device/media/media.h"
#include "device/storagefs/format.h"
#include "device/storagefs/storagefs.h"

#define DEFAULT_SIZE (1ull << 30)

struct mkfs_args {
    const char *image;
    uint64_t size, inodes;
    int force;
    const char *members;          /* --members N or IMG1,IMG2,...; NULL = one image */
    struct cmd_members mem;       /* the member paths (parse_members) */
};

static int parse(int argc, char **argv, struct mkfs_args *a)
{
    a->size = DEFAULT_SIZE;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--force") || !strcmp(s, "-f")) {
            a->force = 1;
        } else if ((!strcmp(s, "--size") || !strcmp(s, "-s")) && i + 1 < argc) {
            if (cmd_parse_size(argv[++i], &a->size) || a->size < 4096)
                return cmd_fail("mkfs", "invalid size '%s'", argv[i]);
        } else if (!strcmp(s, "--members") && i + 1 < argc) {
            a->members = argv[++i];
        } else if (!strcmp(s, "--inodes") && i + 1 < argc) {
            char *end;
            errno = 0;
            a->inodes = strtoull(argv[++i], &end, 10);
            if (errno || *end || a->inodes == 0 || argv[i][0] == '-')
                return cmd_fail("mkfs", "invalid inode count '%s'", argv[i]);
        } else if (s[0] == '-' && s[1]) {
            return cmd_fail("mkfs", "unknown option '%s' (see cisc mkfs --help)", s);
        } else if (a->image) {
            return cmd_fail("mkfs", "more than one image given");
        } else {
            a->image = s;
        }
    }
    return a->image || a->members ? 0 : cmd_fail("mkfs", "no image given (see cisc mkfs --help)");
}

/* --members (cmd/members.h): the members, and member 0 names a list. */
static int parse_members(struct mkfs_args *a)
{
    int r = cmd_members_parse("mkfs", a->members, a->image, &a->mem);
    if (!r && !a->image)
        a->image = a->mem.name;
    return r;
}

/* Refuses to overwrite something valuable (image) without --force. */
static int check_target(const struct mkfs_args *a, const char *image, int *existed)
{
    struct stat st;
    *existed = stat(image, &st) == 0;
    if (!*existed)
        return errno == ENOENT ? 0 : cmd_fail("mkfs", "%s: %s", image, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cmd_fail("mkfs", "%s: not a regular file", image);
    if (st.st_size == 0 || a->force)
        return 0;
    uint8_t b[16] = {0};
    int fd = open(image, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pread(fd, b, sizeof(b), 0) : -1;
    if (fd >= 0)
        close(fd);
    if (n == (ssize_t)sizeof(b) && (le32_get(b + BH_MAGIC) == SFS_MAGIC_SUPER ||
                                    !memcmp(b, "CISCARR1", 8)))
        return cmd_fail("mkfs", "%s already holds a ciscfs image (use --force to overwrite "
                        "it)", image);
    return cmd_fail("mkfs", "%s exists and is not empty (use --force to overwrite it)",
                    image);
}

static void print_summary(const char *image, struct media *m)
{
    struct sfs_info in;
    if (sfs_info(m, &in) != 0)
        return;
    printf("%s: StorageFS version %u, %llu blocks of %llu bytes (%.1f MiB), %llu inodes, "
           "journal %llu blocks\n", image, in.version, (unsigned long long)in.blocks,
           (unsigned long long)in.block_size, (double)in.blocks * in.block_size / 1048576.0,
           (unsigned long long)in.inodes, (unsigned long long)in.journal_blocks);
}

/* Formats m (one image or an array) and prints what it holds. */
static int format(const struct mkfs_args *a, struct media *m)
{
    struct sfs_mkfs_opts o = {.inodes = a->inodes, .root_uid = getuid(), .root_gid = getgid()};
    int r = sfs_mkfs(m, &o);
    if (r == 0)
        print_summary(a->image, m);
    return r;
}

static int fs_failed(const struct mkfs_args *a, int r)
{
    if (r == -ENOSPC)
        return cmd_fail("mkfs", "%s: %llu bytes is too small for StorageFS with these "
                        "settings", a->image, (unsigned long long)a->size);
    return cmd_failed("mkfs", "%s: %s", a->image, strerror(-r));
}

/* Creates the n member images (each a label plus its share of the size in
 * whole 64 KiB stripes), labels them as one array, formats the array. */
static int make_array(struct mkfs_args *a)
{
    int existed[MEDIA_ARRAY_MAX], r = 0;
    for (unsigned i = 0; !r && i < a->mem.n; i++)
        r = check_target(a, a->mem.path[i], &existed[i]);
    if (r)
        return r;
    uint64_t stripe = MEDIA_ARRAY_STRIPE * MEDIA_BLOCK_SIZE;
    uint64_t share = (a->size / a->mem.n + stripe - 1) / stripe * stripe;
    struct media *mem[MEDIA_ARRAY_MAX] = {0}, *arr = NULL;
    unsigned made = 0;
    for (; !r && made < a->mem.n; made++)
        r = media_create_file(a->mem.path[made], share + MEDIA_BLOCK_SIZE, 0, &mem[made]);
    if (r)
        cmd_fail("mkfs", "%s: %s", a->mem.path[made - 1], strerror(-r));
    if (!r && (r = media_array_format(mem, a->mem.n)) != 0)
        cmd_fail("mkfs", "cannot label the array: %s", strerror(-r));
    if (!r && (r = media_array_open(mem, a->mem.n, &arr)) != 0)
        cmd_fail("mkfs", "cannot open the array: %s", strerror(-r));
    int fr = r ? 0 : format(a, arr);
    if (arr)
        media_close(arr);   /* closes the members */
    for (unsigned i = 0; !arr && i < made; i++)
        media_close(mem[i]);
    for (unsigned i = 0; (r || fr) && i < made; i++)
        if (!existed[i])
            unlink(a->mem.path[i]);
    if (!r && !fr)
        printf("%s: an array of %u member images: %s .. %s\n", a->image, a->mem.n,
               a->mem.path[0], a->mem.path[a->mem.n - 1]);
    return r ? CMD_USAGE : fr ? fs_failed(a, fr) : 0;
}

static int run(int argc, char **argv)
{
    struct mkfs_args a = {0};
    int existed, r = parse(argc, argv, &a);
    if (!r && a.members) {
        r = parse_members(&a);
        if (!r)
            r = make_array(&a);
        cmd_members_free(&a.mem);
        return r;
    }
    if (r || (r = check_target(&a, a.image, &existed)) != 0)
        return r;
    struct media *m;
    r = media_create_file(a.image, a.size, 0, &m);
    if (r == -EBUSY)
        return cmd_fail("mkfs", "%s is in use by a running device", a.image);
    if (r)
        return cmd_fail("mkfs", "%s: %s", a.image, strerror(-r));
    r = format(&a, m);
    media_close(m);
    if (r && !existed)
        unlink(a.image);
    return r ? fs_failed(&a, r) : 0;
}

const struct cisc_cmd cmd_mkfs = {
    .name = "mkfs",
    .summary = "create a device image holding an empty StorageFS",
    .usage =
        "usage: cisc mkfs [--size SIZE] [--inodes N] [--force] IMAGE\n"
        "       cisc mkfs --members N [--size SIZE] ... IMAGE\n"
        "       cisc mkfs --members IMG1,IMG2,... [--size SIZE] ...\n"
        "\n"
        "Creates IMAGE as a sparse file and writes an empty StorageFS (format\n"
        "version 1) into it. The root directory belongs to the calling user.\n"
        "With --members, creates an array of member images instead (IMAGE.0 ..\n"
        "IMAGE.N-1, or the listed files), each labelled with the array and its\n"
        "place in it, striped 64 KiB into one StorageFS of SIZE in total; start\n"
        "it with cisc up --members (the same N and IMAGE, or the same list).\n"
        "\n"
        "Options:\n"
        "  -s, --size SIZE   image size, e.g. 512M, 1G, 64G (binary units; default 1G)\n"
        "      --inodes N    number of inodes (default: one per 16 KiB)\n"
        "      --members M   an array: M is a count 1..64 or a list IMG1,IMG2,...\n"
        "  -f, --force       overwrite IMAGE even if it holds data or a ciscfs image\n"
        "  -h, --help        show this help\n"
        "\n"
        "Without --force, mkfs refuses to touch an existing non-empty file.\n"
        "Exit status: 0 success, 1 the operation failed (writing the file system\n"
        "failed), 2 usage or environment error.\n",
    .run = run,
};
