/* cmd/fsck.c - `cisc fsck`: check a StorageFS image offline, read-only. */
#include "cmd/cmd.h"

#include <errno.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/engine/fused/oplog.h"
#include "device/storagefs/storagefs.h"

static void print_problem(void *arg, const char *msg)
{
    printf("%s: %s\n", (const char *)arg, msg);
}

static int open_image(const char *image, struct media **m)
{
    int r = media_open_file(image, MEDIA_RDONLY, m);
    if (r == -EBUSY)
        return cmd_fail("fsck", "%s is in use by a running device", image);
    if (r)
        return cmd_fail("fsck", "%s: %s", image, strerror(-r));
    return 0;
}

static int report(const char *image, const struct sfs_fsck_result *res)
{
    if (res->journal_txns)
        printf("%s: journal: %llu committed transaction(s) not yet replayed; checked as "
               "replayed (in memory only)\n", image, (unsigned long long)res->journal_txns);
    if (res->journal_note[0])
        printf("%s: journal: %s\n", image, res->journal_note);
    if (res->problems) {
        printf("%s: %llu problem(s) found\n", image, (unsigned long long)res->problems);
        return 1;
    }
    printf("%s: clean, %llu files, %llu/%llu blocks used (%.1f%%)\n", image,
           (unsigned long long)res->files, (unsigned long long)res->blocks_used,
           (unsigned long long)res->blocks_total,
           res->blocks_total ? 100.0 * (double)res->blocks_used / (double)res->blocks_total
                             : 0.0);
    return 0;
}

/* The operational log (AutoRec, device/engine/fused/oplog.h): each log
 * named, a log that does not check is a problem. The image is mounted
 * read-only as replayed (nothing written). Returns the problems found. */
static unsigned check_oplog(const char *image)
{
    struct media *m;
    struct sfs *fs;
    if (media_open_file(image, MEDIA_RDONLY, &m))
        return 0;   /* reported by the check above */
    struct sfs_mount_opts mo = { .defer_writes = true };
    if (sfs_mount(m, &mo, &fs)) {
        media_close(m);
        return 0;   /* the file system's own problems are reported above */
    }
    int bad = fop_oplog_check(fs, print_problem, (void *)image);
    sfs_unmount(fs);
    return bad > 0 ? (unsigned)bad : 0;
}

static int run(int argc, char **argv)
{
    if (argc > 1 && cmd_no_option("fsck", argv[1]))
        return CMD_USAGE;
    if (argc != 2)
        return cmd_fail("fsck", argc < 2 ? "no image given (see cisc fsck --help)"
                                         : "expected exactly one IMAGE (see cisc fsck --help)");
    const char *image = argv[1];
    struct media *m;
    int r = open_image(image, &m);
    if (r)
        return r;
    struct sfs_fsck_result res;
    r = sfs_fsck(m, print_problem, (void *)image, &res);
    media_close(m);
    if (r == -EUCLEAN) {
        printf("%s: no usable superblock; nothing else can be checked\n", image);
        return 1;
    }
    if (r)
        return cmd_fail("fsck", "%s: %s", image, strerror(-r));
    if (!res.problems)
        res.problems += check_oplog(image);
    return report(image, &res);
}

const struct cisc_cmd cmd_fsck = {
    .name = "fsck",
    .summary = "check a device image for consistency (read-only)",
    .usage =
        "usage: cisc fsck IMAGE\n"
        "\n"
        "Checks every invariant of the StorageFS format (docs/FORMAT.md): both\n"
        "superblocks, the checksum of every metadata block, the journal, the\n"
        "bitmaps against what is reachable, extents, directories, link counts,\n"
        "extended attributes and the orphan list; then the operational log of\n"
        "autorec ops (each log named; one that does not check is a problem,\n"
        "with the byte and block where it failed). It never writes to IMAGE: a\n"
        "journal that still needs replay is replayed in memory and the result\n"
        "is checked.\n"
        "\n"
        "Prints one line per problem, then a summary:\n"
        "  IMAGE: clean, N files, USED/TOTAL blocks used (P%)\n"
        "(blocks of the whole image, metadata included: cisc info's units)\n"
        "\n"
        "Exit status: 0 success, 1 the operation failed (problems found), 2 usage\n"
        "or environment error (the image could not be read).\n",
    .run = run,
};
