/* cmd/info.c - `cisc info`: show what an image holds, read-only. */
#include "cmd/cmd.h"
#include "cmd/json.h"

#include <errno.h>
#include <stdbool.h>
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

/* Usage in fsck's units: blocks of the whole image, metadata included. */
static void print_usage_lines(const struct sfs_info *in)
{
    uint64_t used = in->blocks - in->blocks_free;
    printf("%-14s %llu/%llu blocks used (%.1f%%), %llu free, metadata included (as cisc "
           "fsck counts)\n", "usage:", (unsigned long long)used, (unsigned long long)in->blocks,
           in->blocks ? 100.0 * (double)used / (double)in->blocks : 0.0,
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

static void json_uuid(struct json *j, const uint8_t *u)
{
    char buf[40];
    size_t n = 0;
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%02x%s", u[i],
                              i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
    json_str(j, "uuid", buf);
}

static int print_json(const char *image, const struct sfs_info *in)
{
    struct json j;
    json_begin(&j, stdout);
    json_obj_open(&j, NULL);
    json_str(&j, "image", image);
    json_u64(&j, "version", in->version);
    json_uuid(&j, in->uuid);
    json_bool(&j, "clean", in->clean);
    json_u64(&j, "block_size", in->block_size);
    json_u64(&j, "blocks", in->blocks);
    json_u64(&j, "blocks_used", in->blocks - in->blocks_free);
    json_u64(&j, "blocks_free", in->blocks_free);
    json_u64(&j, "inodes", in->inodes);
    json_u64(&j, "inodes_used", in->inodes - in->inodes_free);
    json_u64(&j, "inodes_free", in->inodes_free);
    json_obj_open(&j, "layout");
    json_u64(&j, "journal_start", in->journal_start);
    json_u64(&j, "journal_blocks", in->journal_blocks);
    json_u64(&j, "bbitmap_start", in->bbitmap_start);
    json_u64(&j, "bbitmap_blocks", in->bbitmap_blocks);
    json_u64(&j, "ibitmap_start", in->ibitmap_start);
    json_u64(&j, "ibitmap_blocks", in->ibitmap_blocks);
    json_u64(&j, "itable_start", in->itable_start);
    json_u64(&j, "itable_blocks", in->itable_blocks);
    json_u64(&j, "data_start", in->data_start);
    json_obj_close(&j);
    json_u64(&j, "journal_txns", in->journal_txns);
    json_u64(&j, "journal_next_seq", in->journal_next_seq);
    json_str(&j, "journal_note", in->journal_note);
    json_u64(&j, "feat_compat", in->feat_compat);
    json_u64(&j, "feat_incompat", in->feat_incompat);
    json_u64(&j, "feat_ro_compat", in->feat_ro_compat);
    json_u64(&j, "mount_count", in->mount_count);
    json_i64(&j, "created", in->mkfs_time);
    json_i64(&j, "last_mounted", in->mount_time);
    json_i64(&j, "last_written", in->write_time);
    json_obj_close(&j);
    return json_end(&j) ? cmd_fail("info", "stdout: %s", strerror(EIO)) : 0;
}

static void print_text(const char *image, const struct sfs_info *in)
{
    printf("%-14s %s\n", "image:", image);
    printf("%-14s StorageFS version %u\n", "format:", in->version);
    print_uuid(in->uuid);
    printf("%-14s %s\n", "state:", in->clean ? "clean" : "not cleanly unmounted (in use, or "
                                                         "the device stopped abruptly)");
    print_geometry(in);
    print_usage_lines(in);
    print_journal(in);
    printf("%-14s compat 0x%x, incompat 0x%x, ro_compat 0x%x\n", "features:", in->feat_compat,
           in->feat_incompat, in->feat_ro_compat);
    printf("%-14s %u\n", "mount count:", in->mount_count);
    print_time("created:", in->mkfs_time);
    print_time("last mounted:", in->mount_time);
    print_time("last written:", in->write_time);
}

static int parse_args(int argc, char **argv, const char **image, bool *json)
{
    *image = NULL;
    *json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            *json = true;
        else if (cmd_no_option("info", argv[i]))
            return CMD_USAGE;
        else if (*image)
            return cmd_fail("info", "expected exactly one IMAGE (see cisc info --help)");
        else
            *image = argv[i];
    }
    return *image ? 0 : cmd_fail("info", "no image given (see cisc info --help)");
}

static int run(int argc, char **argv)
{
    const char *image;
    bool json;
    int r = parse_args(argc, argv, &image, &json);
    if (r)
        return r;
    struct media *m;
    r = media_open_file(image, MEDIA_RDONLY | MEDIA_NOLOCK, &m);
    if (r)
        return cmd_fail("info", "%s: %s", image, strerror(-r));
    struct sfs_info in;
    r = sfs_info(m, &in);
    media_close(m);
    if (r == -EUCLEAN) {
        char msg[512];
        return cmd_failed("info", "%s: %s", image, corrupt_message(msg, sizeof(msg)));
    }
    if (r)
        return cmd_fail("info", "%s: %s", image, strerror(-r));
    if (json)
        return print_json(image, &in);
    print_text(image, &in);
    return 0;
}

const struct cisc_cmd cmd_info = {
    .name = "info",
    .summary = "show an image's geometry, usage and journal state",
    .usage =
        "usage: cisc info [--json] IMAGE\n"
        "\n"
        "Prints the format version, uuid, clean/dirty state, geometry and\n"
        "layout, block and inode usage, and the journal state (empty, or how\n"
        "many committed transactions the next mount will replay) of a\n"
        "StorageFS image. Read-only; works while a device uses the image.\n"
        "Usage is counted as cisc fsck counts it: blocks of the whole image,\n"
        "metadata included.\n"
        "\n"
        "  --json   the same as one JSON object (times in seconds since 1970)\n"
        "\n"
        "Exit status: 0 success, 1 the operation failed (not a valid StorageFS\n"
        "image), 2 usage or environment error (it cannot be read).\n",
    .run = run,
};
