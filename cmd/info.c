/* cmd/info.c - `cisc info`: show what an image holds, read-only. */
#include "cmd/cmd.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/corrupt.h"
#include "device/storagefs/storagefs.h"

static void print_time(const char *label, int64_t t)
{
    char buf[64] = "never";
    time_t tt = (time_t)t;
    struct tm tm;
    if (t > 0 && localtime_r(&tt, &tm))
        strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %z", &tm);
    printf("%-14s %s\n", label, buf);
}

static void print_uuid(const uint8_t *u)
{
    printf("%-14s ", "uuid:");
    for (int i = 0; i < 16; i++)
        printf("%02x%s", u[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
    printf("\n");
}

static void print_geometry(const struct sfs_info *in)
{
    double gib = (double)in->blocks * (double)in->block_size / (1024.0 * 1024 * 1024);
    printf("%-14s %llu bytes\n", "block size:", (unsigned long long)in->block_size);
    printf("%-14s %llu blocks (%.2f GiB)\n", "size:", (unsigned long long)in->blocks, gib);
    printf("%-14s journal %llu+%llu, block bitmap %llu+%llu, inode bitmap %llu+%llu, "
           "inode table %llu+%llu, data from %llu\n", "layout:",
           (unsigned long long)in->journal_start, (unsigned long long)in->journal_blocks,
           (unsigned long long)in->bbitmap_start, (unsigned long long)in->bbitmap_blocks,
           (unsigned long long)in->ibitmap_start, (unsigned long long)in->ibitmap_blocks,
           (unsigned long long)in->itable_start, (unsigned long long)in->itable_blocks,
           (unsigned long long)in->data_start);
}

static void print_usage_lines(const struct sfs_info *in)
{
    uint64_t data = in->blocks - 1 - in->data_start, used = data - in->blocks_free;
    printf("%-14s %llu of %llu data blocks used (%.1f%%), %llu free\n", "usage:",
           (unsigned long long)used, (unsigned long long)data,
           data ? 100.0 * (double)used / (double)data : 0.0,
           (unsigned long long)in->blocks_free);
    printf("%-14s %llu of %llu used, %llu free\n", "inodes:",
           (unsigned long long)(in->inodes - in->inodes_free), (unsigned long long)in->inodes,
           (unsigned long long)in->inodes_free);
}

static void print_journal(const struct sfs_info *in)
{
    if (in->journal_txns)
        printf("%-14s %llu committed transaction(s) awaiting replay (next mount replays "
               "them)\n", "journal:", (unsigned long long)in->journal_txns);
    else
        printf("%-14s empty (nothing to replay), next sequence %llu\n", "journal:",
               (unsigned long long)in->journal_next_seq);
    if (in->journal_note[0])
        printf("%-14s %s\n", "", in->journal_note);
}

/* The corruption report without its " (source.c:line)" suffix. */
static const char *corrupt_message(char *buf, size_t size)
{
    snprintf(buf, size, "%s", cisc_corrupt_last());
    char *loc = strrchr(buf, '(');
    if (loc && loc > buf && strstr(loc, ".c:"))
        loc[-1] = '\0';
    return buf;
}

static int run(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return cmd_fail("info", argc < 2 ? "no image given (see cisc info --help)"
                                         : "expected exactly one IMAGE (see cisc info --help)");
    const char *image = argv[1];
    struct media *m;
    int r = media_open_file(image, MEDIA_RDONLY | MEDIA_NOLOCK, &m);
    if (r)
        return cmd_fail("info", "%s: %s", image, strerror(-r));
    struct sfs_info in;
    r = sfs_info(m, &in);
    media_close(m);
    if (r == -EUCLEAN) {
        char msg[512];
        cmd_fail("info", "%s: %s", image, corrupt_message(msg, sizeof(msg)));
        return 1;
    }
    if (r)
        return cmd_fail("info", "%s: %s", image, strerror(-r));
    printf("%-14s %s\n", "image:", image);
    printf("%-14s StorageFS version %u\n", "format:", in.version);
    print_uuid(in.uuid);
    printf("%-14s %s\n", "state:", in.clean ? "clean" : "not cleanly unmounted (in use, or "
                                                        "the device stopped abruptly)");
    print_geometry(&in);
    print_usage_lines(&in);
    print_journal(&in);
    printf("%-14s compat 0x%x, incompat 0x%x, ro_compat 0x%x\n", "features:", in.feat_compat,
           in.feat_incompat, in.feat_ro_compat);
    printf("%-14s %u\n", "mount count:", in.mount_count);
    print_time("created:", in.mkfs_time);
    print_time("last mounted:", in.mount_time);
    print_time("last written:", in.write_time);
    return 0;
}

const struct cisc_cmd cmd_info = {
    .name = "info",
    .summary = "show an image's geometry, usage and journal state",
    .usage =
        "usage: cisc info IMAGE\n"
        "\n"
        "Prints the format version, uuid, clean/dirty state, geometry and\n"
        "layout, block and inode usage, and the journal state (empty, or how\n"
        "many committed transactions the next mount will replay) of a\n"
        "StorageFS image. Read-only; works while a device uses the image.\n"
        "\n"
        "Exit status: 0 on success, 1 if the image is not a valid StorageFS\n"
        "image, 2 if it cannot be read.\n",
    .run = run,
};
