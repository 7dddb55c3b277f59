/* cmd/mkfs.c - `cisc mkfs`: create a StorageFS image file. */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/le.h"
#include "device/storagefs/format.h"
#include "device/storagefs/storagefs.h"

#define DEFAULT_SIZE (1ull << 30)

struct mkfs_args {
    const char *image;
    uint64_t size, inodes;
    int force;
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
    return a->image ? 0 : cmd_fail("mkfs", "no image given (see cisc mkfs --help)");
}

/* Refuses to overwrite something valuable without --force. */
static int check_target(const struct mkfs_args *a, int *existed)
{
    struct stat st;
    *existed = stat(a->image, &st) == 0;
    if (!*existed)
        return errno == ENOENT ? 0 : cmd_fail("mkfs", "%s: %s", a->image, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cmd_fail("mkfs", "%s: not a regular file", a->image);
    if (st.st_size == 0 || a->force)
        return 0;
    uint8_t b[16] = {0};
    int fd = open(a->image, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pread(fd, b, sizeof(b), 0) : -1;
    if (fd >= 0)
        close(fd);
    if (n == (ssize_t)sizeof(b) && le32_get(b + BH_MAGIC) == SFS_MAGIC_SUPER)
        return cmd_fail("mkfs", "%s already holds a ciscfs image (use --force to overwrite "
                        "it)", a->image);
    return cmd_fail("mkfs", "%s exists and is not empty (use --force to overwrite it)",
                    a->image);
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

static int run(int argc, char **argv)
{
    struct mkfs_args a = {0};
    int existed, r = parse(argc, argv, &a);
    if (r || (r = check_target(&a, &existed)) != 0)
        return r;
    struct media *m;
    r = media_create_file(a.image, a.size, 0, &m);
    if (r == -EBUSY)
        return cmd_fail("mkfs", "%s is in use by a running device", a.image);
    if (r)
        return cmd_fail("mkfs", "%s: %s", a.image, strerror(-r));
    struct sfs_mkfs_opts o = {.inodes = a.inodes, .root_uid = getuid(), .root_gid = getgid()};
    r = sfs_mkfs(m, &o);
    if (r == 0)
        print_summary(a.image, m);
    media_close(m);
    if (r && !existed)
        unlink(a.image);
    if (r == -ENOSPC)
        return cmd_fail("mkfs", "%s: %llu bytes is too small for StorageFS with these "
                        "settings", a.image, (unsigned long long)a.size);
    return r ? cmd_failed("mkfs", "%s: %s", a.image, strerror(-r)) : 0;
}

const struct cisc_cmd cmd_mkfs = {
    .name = "mkfs",
    .summary = "create a device image holding an empty StorageFS",
    .usage =
        "usage: cisc mkfs [--size SIZE] [--inodes N] [--force] IMAGE\n"
        "\n"
        "Creates IMAGE as a sparse file and writes an empty StorageFS (format\n"
        "version 1) into it. The root directory belongs to the calling user.\n"
        "\n"
        "Options:\n"
        "  -s, --size SIZE   image size, e.g. 512M, 1G, 64G (binary units; default 1G)\n"
        "      --inodes N    number of inodes (default: one per 16 KiB)\n"
        "  -f, --force       overwrite IMAGE even if it holds data or a ciscfs image\n"
        "  -h, --help        show this help\n"
        "\n"
        "Without --force, mkfs refuses to touch an existing non-empty file.\n"
        "Exit status: 0 success, 1 the operation failed (writing the file system\n"
        "failed), 2 usage or environment error.\n",
    .run = run,
};
