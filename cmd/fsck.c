/* cmd/fsck.c - `cisc fsck`: check a StorageFS image offline, read-only;
 * with --repair, fix what sfs_repair fixes (device/storagefs/repair.c).
 * An array of member images (--members) is opened as the device opens it
 * (labels checked, a missing, swapped or foreign member named) and its
 * striped space checked and repaired like one image. */
#include "cmd/cmd.h"
#include "cmd/members.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/corrupt.h"
#include "device/engine/fused/oplog.h"
#include "device/storagefs/storagefs.h"

/* What is checked: one image, or the array of mem's members. */
struct target {
    const char *name;                 /* in messages: IMAGE, or the array's name */
    const struct cmd_members *mem;    /* NULL: one image */
};

static void print_problem(void *arg, const char *msg)
{
    printf("%s: %s\n", (const char *)arg, msg);
}

/* A member of an array (media.h "Arrays") holds a share of a file system
 * that only the whole array makes whole: refused, and named as such. */
static int refuse_member(const char *image, struct media *m)
{
    struct media_array_label l;
    if (media_array_label_read(m, &l))
        return 0;
    media_close(m);
    return cmd_fail("fsck", "%s is member %u of an array of %u member images: check the "
                    "whole array (cisc fsck --members %u IMAGE, or --members IMG1,IMG2,...)",
                    image, l.index, l.members, l.members);
}

/* Opens t's media with media_open_file flags, quietly. Returns 0 or -errno. */
static int target_media(const struct target *t, unsigned flags, struct media **m)
{
    if (!t->mem)
        return media_open_file(t->name, flags, m);
    return media_array_open_files((const char *const *)t->mem->path, t->mem->n, flags, NULL,
                                  0, m);
}

/* Opens t with flags for a check or a repair, saying why it cannot.
 * Returns 0, or an exit status. */
static int open_target(const struct target *t, unsigned flags, struct media **m)
{
    if (t->mem)
        return cmd_members_open("fsck", t->mem, flags, m);
    int r = media_open_file(t->name, flags, m);
    if (r == -EBUSY)
        return cmd_fail("fsck", "%s is in use by a running device", t->name);
    if (r)
        return cmd_fail("fsck", "%s: %s", t->name, strerror(-r));
    return refuse_member(t->name, *m);
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
static unsigned check_oplog(const struct target *t)
{
    struct media *m;
    struct sfs *fs;
    if (target_media(t, MEDIA_RDONLY, &m))
        return 0;   /* reported by the check above */
    struct sfs_mount_opts mo = { .defer_writes = true };
    if (sfs_mount(m, &mo, &fs)) {
        media_close(m);
        return 0;   /* the file system's own problems are reported above */
    }
    int bad = fop_oplog_check(fs, print_problem, (void *)t->name);
    sfs_unmount(fs);
    return bad > 0 ? (unsigned)bad : 0;
}

/* sfs_repair's opener: the lock is held by the caller's own handle for
 * the whole repair, so each reopening goes without it. */
static int reopen(void *arg, struct media **m)
{
    return target_media(arg, MEDIA_NOLOCK, m);
}

/* Takes t's lock (every member's for an array) for a repair, saying why
 * it cannot. Returns 0, or an exit status. */
static int lock_target(const struct target *t, struct media **lock)
{
    if (t->mem)
        return cmd_members_open("fsck", t->mem, 0, lock);
    int r = media_open_file(t->name, 0, lock);
    if (r == -EBUSY)
        return cmd_fail("fsck", "%s is in use by a running device: stop it (cisc down) "
                        "before repairing", t->name);
    if (r)
        return cmd_fail("fsck", "%s: %s", t->name, strerror(-r));
    return refuse_member(t->name, *lock);
}

static int repair(const struct target *t)
{
    const char *image = t->name;
    struct media *lock;    /* held throughout: no device may start meanwhile */
    int r = lock_target(t, &lock);
    if (r)
        return r;
    struct sfs_repair_result res;
    r = sfs_repair(reopen, (void *)t, print_problem, (void *)image, &res);
    media_close(lock);
    if (r == -EUCLEAN && res.unfixable) {
        printf("%s: %llu problem(s) that --repair does not fix; nothing was changed\n", image,
               (unsigned long long)res.unfixable);
        return CMD_FAILED;
    }
    if (r == -EUCLEAN) {
        printf("%s: problems remain after repair (%llu repair(s) made)\n", image,
               (unsigned long long)res.fixed);
        return CMD_FAILED;
    }
    if (r)
        return cmd_failed("fsck", "%s: repair failed: %s%s%s", image, strerror(-r),
                          *cisc_corrupt_what() ? ": " : "",
                          cisc_corrupt_what());
    if (check_oplog(t)) {   /* not something --repair changes */
        printf("%s: the operational log has damaged entries (named above); --repair "
               "leaves them\n", image);
        return CMD_FAILED;
    }
    if (res.fixed)
        printf("%s: repaired, %llu repair(s); now clean\n", image,
               (unsigned long long)res.fixed);
    else
        printf("%s: clean, nothing to repair\n", image);
    return CMD_OK;
}

static int check(const struct target *t)
{
    struct media *m;
    int r = open_target(t, MEDIA_RDONLY, &m);
    if (r)
        return r;
    if (media_array_uneven(m))
        printf("%s: the members' labels disagree on their size (a cisc resize cut short): "
               "checked at the smallest; cisc resize --members again finishes the grow\n",
               t->name);
    struct sfs_fsck_result res;
    r = sfs_fsck(m, print_problem, (void *)t->name, &res);
    media_close(m);
    if (r == -EUCLEAN) {
        printf("%s: no usable superblock; nothing else can be checked\n", t->name);
        return 1;
    }
    if (r)
        return cmd_fail("fsck", "%s: %s", t->name, strerror(-r));
    if (!res.problems)
        res.problems += check_oplog(t);
    return report(t->name, &res);
}

struct fsck_args {
    bool fix;
    const char *members;     /* --members N or IMG1,IMG2,...; NULL: one image */
    const char *image;
};

static int parse(int argc, char **argv, struct fsck_args *a)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repair"))
            a->fix = true;
        else if (!strcmp(argv[i], "--members") && i + 1 < argc)
            a->members = argv[++i];
        else if (cmd_no_option("fsck", argv[i]))
            return CMD_USAGE;
        else if (a->image)
            return cmd_fail("fsck", "expected exactly one IMAGE (see cisc fsck --help)");
        else
            a->image = argv[i];
    }
    if (!a->image && !a->members)
        return cmd_fail("fsck", "no image given (see cisc fsck --help)");
    return 0;
}

static int run(int argc, char **argv)
{
    struct fsck_args a = {0};
    int r = parse(argc, argv, &a);
    if (r)
        return r;
    struct cmd_members mem;
    struct target t = { a.image, NULL };
    if (a.members) {
        if ((r = cmd_members_parse("fsck", a.members, a.image, &mem)) != 0) {
            cmd_members_free(&mem);
            return r;
        }
        t = (struct target){ mem.name, &mem };
    }
    r = a.fix ? repair(&t) : check(&t);
    if (a.members)
        cmd_members_free(&mem);
    return r;
}

const struct cisc_cmd cmd_fsck = {
    .name = "fsck",
    .summary = "check a device image for consistency (read-only), or --repair it",
    .usage =
        "usage: cisc fsck [--repair] IMAGE\n"
        "       cisc fsck [--repair] --members N IMAGE\n"
        "       cisc fsck [--repair] --members IMG1,IMG2,...\n"
        "\n"
        "Checks every invariant of the StorageFS format (docs/FORMAT.md): both\n"
        "superblocks, the checksum of every metadata block, the journal, the\n"
        "bitmaps against what is reachable, extents, directories, link counts,\n"
        "extended attributes and the orphan list; then the operational log of\n"
        "autorec ops (each log named; one that does not check is a problem,\n"
        "with the byte and block where it failed). Without --repair it never\n"
        "writes to IMAGE: a journal that still needs replay is replayed in\n"
        "memory and the result is checked.\n"
        "\n"
        "--members  an array of member images (made by cisc mkfs --members; the\n"
        "          same N and IMAGE, or the same list): the members are opened as\n"
        "          cisc up opens them (a missing, swapped or foreign member is\n"
        "          named and nothing is checked) and the striped file system is\n"
        "          checked, or repaired, as one image. A member alone is refused.\n"
        "\n"
        "--repair  fix what it finds, when every problem is of a kind it fixes:\n"
        "          block bitmap bits (blocks referenced but marked free are marked\n"
        "          used, blocks nothing references are freed), inode bitmap bits (an\n"
        "          entry naming a free inode whose slot still holds it marks it used\n"
        "          again; otherwise the entry is removed), corrupt inode slots (the\n"
        "          inode is freed), link counts, inodes with links but no entry (moved\n"
        "          to /lost+found/#INO, never deleted), inodes with no links and no\n"
        "          entry (freed: a deletion that lost its orphan record), and the free\n"
        "          counts. Fixes are made through the journal (a crash during repair\n"
        "          loses at most the fix under way; run it again), one line each\n"
        "          (\"repaired: ...\"), then the image is checked again until clean.\n"
        "          With a problem it does not fix (a corrupt metadata block, a broken\n"
        "          tree, a block claimed by two files) nothing is changed. The device\n"
        "          must be stopped: an image in use is refused.\n"
        "\n"
        "Prints one line per problem, then a summary:\n"
        "  IMAGE: clean, N files, USED/TOTAL blocks used (P%)\n"
        "(blocks of the whole image, metadata included: cisc info's units)\n"
        "\n"
        "Exit status: 0 success, 1 the operation failed (problems found, or left\n"
        "after --repair; 0 after --repair means the image is now clean), 2 usage\n"
        "or environment error (the image could not be read).\n",
    .run = run,
};
