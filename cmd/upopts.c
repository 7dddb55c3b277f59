/* cmd/upopts.c - the table of `cisc up`'s options and what is derived
 * from it: getopt's option list, the mount helper's -o parser, the help
 * text and the error messages (see upopts.h). */
#include "cmd/upopts.h"
#include "cmd/cmd.h"
#include "cmd/mnt.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A flash model default (device/media/flash.h) as a string literal. */
#define FLASH_DEF_STR(x) #x
#define FLASH_DEF_STR2(x) FLASH_DEF_STR(x)
#define FLASH_DEF(name) FLASH_DEF_STR2(FLASH_DEF_##name)

#define HELPER_USAGE "mount.ciscfs IMAGE MOUNTPOINT [-o KEY[=VALUE],...]"

struct up_opt;

/* How an option's argument is read. parse() sets the field or returns
 * -EINVAL (the value is not what want() describes) or another -errno;
 * want() describes the accepted values, for errors and help (may be ""). */
struct opt_kind {
    int (*parse)(const struct up_opt *u, const char *arg, struct up_opts *o);
    void (*want)(const struct up_opt *u, char *buf, size_t size);
    bool flag;            /* takes no argument */
    bool range;           /* help shows what want() says */
    bool number;          /* ... and the default */
};

/* One option. Numbers and sizes accept min..max (integers, also for a
 * real-valued option); choices accept one of words (NULL-terminated). */
struct up_opt {
    char letter;                 /* -x of `cisc up`, or 0 */
    const char *name;            /* --name of `cisc up`, or NULL (letter only) */
    const char *key;             /* KEY in the helper's -o list, or NULL */
    const struct opt_kind *kind;
    const char *arg;             /* the argument in help ("N"); choices show their words */
    uint64_t min, max;
    uint64_t def;                /* the default, for help (numbers) */
    const char *const *words;
    size_t off, size;            /* the field of struct up_opts set */
    const char *help;
};

static int parse_list(const struct up_opt *u, const char *arg, struct up_opts *o);

/* ---- kinds --------------------------------------------------------------------- */

static void *field(const struct up_opt *u, struct up_opts *o)
{
    return (char *)o + u->off;
}

/* Stores v in an unsigned (or non-negative int) field of u->size bytes. */
static void store_uint(void *p, size_t size, uint64_t v)
{
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    memcpy(p, size == 1 ? (void *)&v8 : size == 2 ? (void *)&v16 : size == 4 ? (void *)&v32
                                                                             : (void *)&v,
           size);
}

static int parse_flag(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    (void)arg;
    store_uint(field(u, o), u->size, 1);
    return 0;
}

static void want_nothing(const struct up_opt *u, char *buf, size_t size)
{
    (void)u;
    snprintf(buf, size, "%s", "");
}

static int parse_uint(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (*arg < '0' || *arg > '9' || *end != '\0' || errno || v < u->min || v > u->max)
        return -EINVAL;
    store_uint(field(u, o), u->size, v);
    return 0;
}

static void want_range(const struct up_opt *u, char *buf, size_t size)
{
    snprintf(buf, size, "%llu..%llu", (unsigned long long)u->min, (unsigned long long)u->max);
}

static int parse_real(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    char *end;
    double v = strtod(arg, &end);
    if (*arg == '\0' || *end != '\0' || !(v >= (double)u->min && v <= (double)u->max))
        return -EINVAL;
    memcpy(field(u, o), &v, sizeof(v));
    return 0;
}

/* A size in the largest binary unit that keeps it whole ("1M"). */
static void format_size(uint64_t v, char *buf, size_t size)
{
    static const char units[] = "KMGTPE";
    int u = -1;
    while (v && v % 1024 == 0 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, "%llu%.*s", (unsigned long long)v, u >= 0, u >= 0 ? units + u : "");
}

static int parse_size(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    uint64_t v;
    if (cmd_parse_size(arg, &v) || v < u->min || v > u->max)
        return -EINVAL;
    store_uint(field(u, o), u->size, v);
    return 0;
}

static void want_size(const struct up_opt *u, char *buf, size_t size)
{
    char lo[32], hi[32];
    format_size(u->min, lo, sizeof(lo));
    format_size(u->max, hi, sizeof(hi));
    if (u->max == UINT64_MAX)
        snprintf(buf, size, "a size of at least %s", lo);
    else
        snprintf(buf, size, "a size from %s to %s", lo, hi);
}

static int find_word(const struct up_opt *u, const char *arg)
{
    for (int i = 0; u->words[i]; i++)
        if (!strcmp(u->words[i], arg))
            return i;
    return -EINVAL;
}

/* A choice kept as its index (an enum or bool field). */
static int parse_index(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    int i = find_word(u, arg);
    if (i < 0)
        return i;
    store_uint(field(u, o), u->size, (uint64_t)i);
    return 0;
}

/* A choice kept as its word (a const char * field; the table's string). */
static int parse_word(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    int i = find_word(u, arg);
    if (i < 0)
        return i;
    memcpy(field(u, o), &u->words[i], sizeof(const char *));
    return 0;
}

/* "a, b or c"; with sep "|" (for help): "a|b|c". */
static void join_words(const struct up_opt *u, const char *sep, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; u->words[i] && n < size; i++) {
        const char *s = i == 0 ? "" : sep ? sep : u->words[i + 1] ? ", " : " or ";
        int w = snprintf(buf + n, size - n, "%s%s", s, u->words[i]);
        n += w > 0 ? (size_t)w : 0;
    }
}

static void want_word(const struct up_opt *u, char *buf, size_t size)
{
    join_words(u, NULL, buf, size);
}

/* The daemon's log: absolute, and a file we can append to, now rather
 * than after the device detached from the terminal. */
static int parse_log(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    char *path = field(u, o);
    if (*arg == '\0')
        return -EINVAL;
    int r = mnt_absolute(arg, path, u->size);
    if (r)
        return r;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

static void want_file(const struct up_opt *u, char *buf, size_t size)
{
    (void)u;
    snprintf(buf, size, "a file name");
}

/* --members: a count 1..MEDIA_ARRAY_MAX, or a list of that many non-empty
 * paths (upopts_members resolves them). */
static int parse_members(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    char *end;
    unsigned long n = strtoul(arg, &end, 10);
    bool count = *arg >= '0' && *arg <= '9' && !*end;
    unsigned parts = 1;
    for (const char *p = arg; *p; p++)
        parts += *p == ',';
    bool list_ok = *arg && arg[0] != ',' && arg[strlen(arg) - 1] != ',' && !strstr(arg, ",,");
    if (count ? n < 1 || n > MEDIA_ARRAY_MAX : !list_ok || parts > MEDIA_ARRAY_MAX)
        return -EINVAL;
    if (strlen(arg) >= u->size)
        return -ENAMETOOLONG;
    memcpy(field(u, o), arg, strlen(arg) + 1);
    return 0;
}

static void want_members(const struct up_opt *u, char *buf, size_t size)
{
    (void)u;
    snprintf(buf, size, "a count 1..%u or a list IMG1,IMG2,...", MEDIA_ARRAY_MAX);
}

static const struct opt_kind k_flag = { parse_flag, want_nothing, .flag = true };
static const struct opt_kind k_uint = { parse_uint, want_range, .range = true, .number = true };
static const struct opt_kind k_real = { parse_real, want_range, .range = true, .number = true };
static const struct opt_kind k_size = { parse_size, want_size, .range = true };
static const struct opt_kind k_index = { parse_index, want_word };
static const struct opt_kind k_word = { parse_word, want_word };
static const struct opt_kind k_log = { parse_log, want_file };
static const struct opt_kind k_list = { parse_list, want_nothing };
static const struct opt_kind k_members = { parse_members, want_members };

/* ---- the table ------------------------------------------------------------------ */

#define AT(f) .off = offsetof(struct up_opts, f), .size = sizeof(((struct up_opts *)0)->f)
#define WORDS(...) .words = (const char *const[]){ __VA_ARGS__, NULL }

static const struct up_opt up_table[] = {
    { 'f', "foreground", "foreground", &k_flag, AT(foreground),
      .help = "stay in the foreground (default: return once mounted)" },
    { 0, "cores", "cores", &k_uint, "N", 1, SCHED_MAX_CORES, DEV_DEFAULT_CORES, AT(dev.cores),
      .help = "device cores (worker threads)" },
    { 0, "sched", "sched", &k_word, WORDS("fifo", "rr", "cfs", "cfs-cpu", "drf"), AT(dev.sched),
      .help = "scheduler for the device cores: fifo; rr (round robin over queues); cfs "
              "(fair core time per tenant, then per queue; least memory first while "
              "memory is short); cfs-cpu (cfs without the memory key); drf (dominant "
              "resource fairness over core time and device memory)" },
    { 0, "read-only", "ro", &k_flag, AT(dev.read_only),
      .help = "serve the image read-only: the device refuses every change through every "
              "door with EROFS, writes nothing to the image, and mounts read-only; an "
              "image whose journal or operational log needs replaying is refused unless "
              "--replay" },
    { 0, "replay", "replay", &k_flag, AT(dev.replay),
      .help = "with --read-only: first replay the journal and finish the logged ops (the "
              "one time the image is written), then serve it read-only" },
    { 0, "tenant", "tenant", &k_index, WORDS("uid", "pid"), AT(dev.tenant_pid),
      .help = "whom the scheduler is fair to: each uid (default) or each process" },
    { 0, "max-queues-per-tenant", "max_queues_per_tenant", &k_uint, "N", 0, 1u << 20, 0,
      AT(dev.max_queues), .help = "libcisc queue pairs a tenant may have open; 0: no cap" },
    { 0, "op-time-limit-ms", "op_time_limit_ms", &k_uint, "N", 1, 86400000, ENG_OP_TIME_MS_DEFAULT,
      AT(dev.op_time_limit_ms),
      .help = "a fused op that has run this long stops at its next step with -ETIME, "
              "changing nothing (at most 1 day: there is always a limit)" },
    { 0, "device-ram", "device_ram", &k_size, "SIZE", 1u << 20, 1ull << 40, AT(dev.dev_ram),
      .help = "device memory for fused ops' buffers (default 2 GiB)" },
    { 0, "tx", "tx", &k_index, WORDS("macro", "micro", "autorec"), AT(tx),
      .help = "fused ops' default transaction mode: macro (all or nothing), micro (each "
              "mutating step commits on its own), autorec (micro, and interrupted ops are "
              "finished by the device at the next start); an op may ask for a stronger one" },
    { 0, "tx-log-max", "tx_log_max", &k_size, "SIZE", 1u << 20, 1ull << 40, AT(dev.tx_log_max),
      .help = "autorec: space the operational logs of running ops may take (default 256 "
              "MiB); an op that does not fit waits up to 2 s for space, then fails with "
              "ENOSPC before changing anything" },
    { 0, "tx-log-entry", "tx_log_entry", &k_size, "SIZE", 64, 1u << 20, AT(dev.tx_log_entry),
      .help = "autorec: a step's logged intermediate state up to SIZE is inline in its log "
              "record, larger state goes to whole log blocks (default 4 KiB)" },
    { 0, "log", "log", &k_log, "FILE", AT(log),
      .help = "where the device writes its messages once mounted, each line "
              "timestamped (UTC), in the foreground too (default: none; -f: stderr)" },
    { 0, "size", "size", &k_size, "SIZE", 1u << 20, UINT64_MAX, AT(size),
      .help = "create and format IMAGE with this size if it is missing; an "
              "existing IMAGE must have this size" },
    { 'v', "verbose", "verbose", &k_flag, AT(dev.verbose),
      .help = "messages also name where in the device's source a problem was found" },
    { 0, "trace", "trace", &k_flag, AT(dev.trace),
      .help = "log every command the device runs (to --log FILE, which a daemon "
              "then needs; with -f and no --log: stderr)" },
    { 0, "dispatch", "dispatch", &k_index, WORDS("direct", "queue"), AT(dev.queue_only),
      .help = "direct (default): an idle device runs a command on the thread that "
              "submitted it, in a free core's slot; queue: every command is handed "
              "to a core thread" },
    { 0, "writeback", "writeback", &k_flag, AT(writeback),
      .help = "the kernel caches writes made through the mount (FUSE writeback cache): "
              "write(2) returns once the data is in the page cache; while a libcisc "
              "batch runs, the files open for writing on the mount are written back and "
              "their writers wait, and after a libcisc truncate the kernel takes the "
              "device's size. Off by default: write errors (ENOSPC, EIO) then reach "
              "the writer at fsync or close, not at write (docs/MOUNT.md)" },
    { 0, "link-latency-ns", "link_latency_ns", &k_uint, "N", 0, DM_LINK_MAX_NS,
      DM_DEFAULT_LINK_NS, AT(model.link_latency_ns),
      .help = "host<->device link latency, charged per crossing (libcisc submission "
              "fetch, completion post); 0 disables" },
    { 0, "core-speed", "core_speed", &k_real, "F", 1, (uint64_t)DM_CORE_SPEED_MAX, 1,
      AT(model.core_speed),
      .help = "device cores are F times slower than the host (compute steps and "
              "StorageFS work)" },
    { 0, "pollers", "pollers", &k_uint, "N", 1, QP_MAX_POLLERS, QP_DEFAULT_POLLERS,
      AT(dev.pollers), .help = "threads polling libcisc queue pairs" },
    { 0, "poll-us", "poll_us", &k_uint, "N", 0, 1000000, QP_DEFAULT_POLL_US, AT(dev.poll_us),
      .help = "pollers spin N microseconds before sleeping" },
    { 0, "max-progs", "max_progs", &k_uint, "N", 1, 65536, PROGS_DEFAULT_MAX,
      AT(progs.max_progs), .help = "eBPF programs the device may hold" },
    { 0, "max-prog-insns", "max_prog_insns", &k_uint, "N", 1, 1ull << 32,
      PROGS_DEFAULT_MAX_INSNS, AT(progs.max_insns),
      .help = "instructions of all its programs together" },
    { 0, "max-progs-per-user", "max_progs_per_user", &k_uint, "N", 1, 65536,
      PROGS_DEFAULT_MAX_USER, AT(progs.max_progs_user),
      .help = "eBPF programs one user may hold (root: no limit; users together may fill "
              "seven eighths of --max-progs)" },
    { 0, "max-prog-bytes-per-user", "max_prog_bytes_per_user", &k_size, "SIZE", 4096,
      1ull << 40, AT(progs.max_bytes_user),
      .help = "bytes of eBPF objects one user may hold (default 16M; root: no limit)" },
    { 0, "prog-budget", "prog_budget", &k_uint, "N", 1, PROGS_MAX_BUDGET, PROGS_DEFAULT_BUDGET,
      AT(progs.budget),
      .help = "instructions a program may run per invocation (one block) before it is "
              "stopped" },
    { 0, "bpf-exec", "bpf_exec", &k_index, WORDS("jit", "interp"), AT(progs.interp),
      .help = "jit (default where the host is x86-64): programs run as native code; "
              "interp: in the interpreter (the reference engine)" },
    { 0, "media", "media", &k_index, WORDS("file", "flash"), AT(media),
      .help = "file (default): the image at the host's speed; flash: a NAND model "
              "(FTL, GC, dies, channels) times every block; --flash-* set it" },
    { 0, "media-io", "media_io", &k_index, WORDS("auto", "pread", "mmap"), AT(dev.media_io),
      .help = "how the device reads and writes the image file: pread: a system call per "
              "block run; mmap: memcpy to and from a shared mapping (the same flushes make "
              "it durable; a bpf step reads its input in place); auto (default): mmap "
              "where the image is in RAM (tmpfs, ramfs), pread elsewhere (an I/O error "
              "of a disk would be SIGBUS under a mapping)" },
    { 0, "flash-channels", "flash_channels", &k_uint, "N", 0, 256, 0, AT(flash.channels),
      .help = "flash channels (0: " FLASH_DEF(CHANNELS) ")" },
    { 0, "flash-dies", "flash_dies", &k_uint, "N", 0, 256, 0, AT(flash.dies_per_channel),
      .help = "flash dies per channel (0: " FLASH_DEF(DIES) ")" },
    { 0, "flash-blocks", "flash_blocks", &k_uint, "N", 0, UINT32_MAX, 0,
      AT(flash.blocks_per_die), .help = "erase blocks per die (0: fit the image)" },
    { 0, "flash-pages", "flash_pages", &k_uint, "N", 0, 65536, 0, AT(flash.pages_per_block),
      .help = "4 KiB pages per erase block (0: " FLASH_DEF(PAGES) ", fewer for small images)" },
    { 0, "flash-op", "flash_op", &k_uint, "PERMILLE", 0, 10000, 0, AT(flash.op_permille),
      .help = "over-provisioning, spare pages per 1000 logical (0: " FLASH_DEF(OP_PERMILLE) ")" },
    { 0, "flash-gc", "flash_gc", &k_index, WORDS("greedy", "cost-benefit"),
      AT(flash.gc_policy), .help = "GC victim selection" },
    { 0, "flash-partitions", "flash_partitions", &k_uint, "N", 0, 256, 0,
      AT(flash.partitions), .help = "FTL partitions, each owning its stripes, channels "
                                    "and dies (0: 1, the single-lock FTL); divides the channels" },
    { 0, "flash-ftl", "flash_ftl", &k_index, WORDS("locks", "cores"), AT(flash.ftl),
      .help = "how the device reaches the FTL: locks (default): the thread that calls the "
              "media takes its page's partition lock (with one partition, the single-lock "
              "FTL); cores: one FTL core thread per partition owns it, and each page of a "
              "media call is handed to its owner through per-core lock-free rings (no lock "
              "on the FTL path); needs --media flash" },
    { 0, "flash-members", "flash_members", &k_uint, "N", 0, 64, 0, AT(flash.members),
      .help = "flash drives in an array, the image striped 64 KiB across them, each "
              "with its own FTL, GC and dies (0: 1)" },
    { 0, "members", NULL, &k_members, "N|IMG1,IMG2,...", AT(members),
      .help = "an array of member images (made by cisc mkfs --members), striped 64 KiB, "
              "one file system over them; with --media flash each member has its own "
              "model: N names IMAGE.0 .. IMAGE.N-1, a list names them in order (then give "
              "only the mount point)" },
    { 0, "flash-read-ns", "flash_read_ns", &k_uint, "N", 0, 1000000000, 0,
      AT(flash.t_read_ns), .help = "page read latency (0: " FLASH_DEF(READ_NS) ")" },
    { 0, "flash-prog-ns", "flash_prog_ns", &k_uint, "N", 0, 1000000000, 0,
      AT(flash.t_prog_ns), .help = "page program latency (0: " FLASH_DEF(PROG_NS) ")" },
    { 0, "flash-erase-ns", "flash_erase_ns", &k_uint, "N", 0, 1000000000, 0,
      AT(flash.t_erase_ns), .help = "block erase latency (0: " FLASH_DEF(ERASE_NS) ")" },
    { 0, "flash-xfer-ns", "flash_xfer_ns", &k_uint, "N", 0, 1000000000, 0,
      AT(flash.t_xfer_ns), .help = "channel transfer time per page (0: " FLASH_DEF(XFER_NS) ")" },
    { 0, "flash-ftl-ns", "flash_ftl_ns", &k_uint, "N", 0, 1000000000, 0,
      AT(flash.t_ftl_ns), .help = "FTL time of a host page read or write on the core that owns "
                                  "its partition, one timeline per partition (0: not modelled)" },
    { 'o', NULL, NULL, &k_list, "OPTS", AT(fuse_opts),
      .help = "mount options, comma-separated: any option here as its mount key "
              "(below), or the FUSE mount's (e.g. ro)" },
};
#define UP_NOPTS (sizeof(up_table) / sizeof(up_table[0]))

/* A row's field suits its kind (store_uint's sizes, a double, a pointer,
 * a char array) and its range and default fit. */
static bool row_ok(const struct up_opt *u)
{
    const struct opt_kind *k = u->kind;
    bool uint_field = u->size == 1 || u->size == 2 || u->size == 4 || u->size == 8;
    uint64_t field_max = u->size >= 8 ? UINT64_MAX : (1ull << (8 * u->size)) - 1;
    bool range_ok = u->min <= u->max && u->max <= field_max &&
                    (!k->number || (u->def >= u->min && u->def <= u->max));
    if ((!u->name && !u->letter) || !u->help || k->flag != (!u->arg && !u->words))
        return false;
    if (k == &k_real)
        return u->size == sizeof(double) && range_ok;
    if (k == &k_uint || k == &k_size)
        return uint_field && range_ok;
    if (k == &k_word)
        return u->size == sizeof(const char *) && u->words[0];
    if (k == &k_index)
        return uint_field && u->words[0];
    return k == &k_flag ? uint_field : u->size > 1;   /* log, list: char arrays */
}

static bool same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* The table's invariants (checked in debug builds): every row is well
 * formed, and no two rows share a name, a key or a letter. */
static bool __attribute__((unused)) table_ok(void)   /* assert() only */
{
    for (size_t i = 0; i < UP_NOPTS; i++) {
        const struct up_opt *u = &up_table[i];
        if (!row_ok(u))
            return false;
        for (size_t j = 0; j < i; j++)
            if (same(u->name, up_table[j].name) || same(u->key, up_table[j].key) ||
                (u->letter && u->letter == up_table[j].letter))
                return false;
    }
    return true;
}

/* ---- applying one option ---------------------------------------------------------- */

/* Sets option u from arg; `as` is how the user spelled it ("--cores",
 * "-o cores"). Returns 0, or 2 after printing the error. */
static int apply(const struct up_opt *u, const char *as, const char *arg, struct up_opts *o)
{
    int r = u->kind->parse(u, arg, o);
    if (r == 0 || r == 2)
        return r;   /* 2: a list whose item failed, reported */
    if (r != -EINVAL)
        return cmd_fail("up", "%s %s: %s", as, arg, strerror(-r));
    char want[256];
    u->kind->want(u, want, sizeof(want));
    return cmd_fail("up", "%s wants %s, not '%s'", as, want, arg);
}

static const struct up_opt *find_key(const char *key, size_t len)
{
    for (size_t i = 0; i < UP_NOPTS; i++)
        if (up_table[i].key && strlen(up_table[i].key) == len &&
            !strncmp(up_table[i].key, key, len))
            return &up_table[i];
    return NULL;
}

/* Options mount(8) passes that mean nothing to us or are the default. */
static bool mount8_generic(const char *opt)
{
    static const char *const ign[] = { "rw", "defaults", "auto", "noauto", "user", "users",
                                       "nouser", "_netdev", "nofail", "dev", "suid", "exec",
                                       "async", "relatime", "nodev", "nosuid", "noexec" };
    for (size_t i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
        if (!strcmp(opt, ign[i]))
            return true;
    return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

static int add_fuse_opt(struct up_opts *o, const char *opt)
{
    size_t len = strlen(o->fuse_opts);
    if (len + strlen(opt) + 2 > sizeof(o->fuse_opts))
        return cmd_fail("up", "-o: FUSE mount options longer than %zu bytes",
                        sizeof(o->fuse_opts) - 1);
    if (len)
        strcat(o->fuse_opts, ",");
    strcat(o->fuse_opts, opt);
    return 0;
}

/* One item of an -o list: KEY or KEY=VALUE. */
static int list_item(struct up_opts *o, const char *item)
{
    const char *eq = strchr(item, '=');
    size_t klen = eq ? (size_t)(eq - item) : strlen(item);
    const struct up_opt *u = find_key(item, klen);
    if (!u)
        return o->helper && mount8_generic(item) ? 0 : add_fuse_opt(o, item);
    char as[64];
    snprintf(as, sizeof(as), "-o %s", u->key);
    if (u->kind->flag && eq)
        return cmd_fail("up", "%s takes no value", as);
    if (!u->kind->flag && !eq)
        return cmd_fail("up", "%s needs a value (%s=...)", as, u->key);
    return apply(u, as, eq ? eq + 1 : "", o);
}

/* The -o kind: a comma-separated list of table keys and FUSE options.
 * Returns 0, 2 (an item failed, reported) or -ENOMEM. */
static int parse_list(const struct up_opt *u, const char *arg, struct up_opts *o)
{
    (void)u;
    char *copy = strdup(arg), *save = NULL;
    if (!copy)
        return -ENOMEM;
    int r = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !r; t = strtok_r(NULL, ",", &save))
        r = list_item(o, t);
    free(copy);
    return r;
}

/* What holds between options once all are read: --replay needs
 * --read-only, FTL cores need the flash media, and the FUSE mount of a
 * read-only device is read-only too. Returns 0, or 2 after the error. */
static int parse_done(struct up_opts *o)
{
    if (o->dev.replay && !o->dev.read_only)
        return cmd_fail("up", "--replay (-o replay) goes with --read-only (-o ro)");
    if (o->flash.ftl == FLASH_FTL_CORES && !o->media)
        return cmd_fail("up", "--flash-ftl cores (-o flash_ftl=cores) needs --media flash");
    return o->dev.read_only ? add_fuse_opt(o, "ro") : 0;
}

/* ---- cisc up's command line -------------------------------------------------------- */

/* getopt_long's tables: row i is val 256 + i (and its letter, if any). */
static void getopt_tables(struct option *lo, char *shorts)
{
    size_t n = 0, s = 0;
    shorts[s++] = '+';   /* options end at IMAGE */
    shorts[s++] = ':';   /* a missing value is ':', not '?' */
    for (size_t i = 0; i < UP_NOPTS; i++) {
        const struct up_opt *u = &up_table[i];
        int has = u->kind->flag ? no_argument : required_argument;
        if (u->name)
            lo[n++] = (struct option){ u->name, has, NULL, 256 + (int)i };
        if (u->letter) {
            shorts[s++] = u->letter;
            if (has == required_argument)
                shorts[s++] = ':';
        }
    }
    lo[n] = (struct option){ NULL, 0, NULL, 0 };
    shorts[s] = '\0';
}

static const struct up_opt *find_getopt(int ch)
{
    if (ch >= 256 && ch < 256 + (int)UP_NOPTS)
        return &up_table[ch - 256];
    for (size_t i = 0; i < UP_NOPTS; i++)
        if (up_table[i].letter && up_table[i].letter == ch)
            return &up_table[i];
    return NULL;
}

/* getopt_long's '?' (unknown option, or a flag given a value) or ':' (a
 * value missing); `last` is the argument it stopped at. Returns 2. */
static int getopt_error(int ch, const char *last)
{
    char opt[3] = { '-', (char)optopt, '\0' };
    const char *what = optopt > 0 && optopt < 256 ? opt : last;
    if (ch == ':')
        return cmd_fail("up", "%s needs a value (see cisc up --help)", what);
    return cmd_fail("up", "bad option '%s' (see cisc up --help)", what);
}

int upopts_parse_args(int argc, char **argv, struct up_opts *o)
{
    struct option lo[UP_NOPTS + 1];
    char shorts[2 * UP_NOPTS + 3], as[64];
    getopt_tables(lo, shorts);
    int ch;
    optind = 1;
    opterr = 0;   /* our messages, in cmd.h's form */
    while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        const struct up_opt *u = find_getopt(ch);
        if (!u)
            return getopt_error(ch, argv[optind - 1]);
        if (ch >= 256)
            snprintf(as, sizeof(as), "--%s", u->name);
        else
            snprintf(as, sizeof(as), "-%c", u->letter);
        if (apply(u, as, u->kind->flag ? "" : optarg, o))
            return 2;
    }
    if (argc - optind > 2)
        return cmd_fail("up", "too many arguments (want [IMAGE [MOUNTPOINT]])");
    o->image = optind < argc ? argv[optind] : NULL;
    o->mnt = optind + 1 < argc ? argv[optind + 1] : NULL;
    return parse_done(o);
}

/* ---- the mount helper's command line ------------------------------------------------ */

int upopts_parse_helper(int argc, char **argv, struct up_opts *o)
{
    const char *pos[2] = { NULL, NULL };
    int npos = 0;
    o->helper = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            if (apply(find_getopt('o'), "-o", argv[++i], o))
                return 2;
        } else if ((!strcmp(argv[i], "-t") || !strcmp(argv[i], "-N")) && i + 1 < argc) {
            i++;   /* mount(8)'s type and namespace */
        } else if (argv[i][0] == '-') {
            continue;   /* -n, -s, -v, -f (fake) ... from mount(8) */
        } else if (npos < 2) {
            pos[npos++] = argv[i];
        }
    }
    if (npos != 2) {
        fputs("usage: " HELPER_USAGE " (keys: cisc up --help)\n", stderr);
        return 2;
    }
    o->image = pos[0];
    o->mnt = pos[1];
    return parse_done(o);
}

void upopts_init(struct up_opts *o)
{
    assert(table_ok());
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < UP_NOPTS; i++) {
        const struct up_opt *u = &up_table[i];
        char def[24];
        if (!u->kind->number)
            continue;   /* zero: no log, no size, fifo, direct, no flags */
        snprintf(def, sizeof(def), "%llu", (unsigned long long)u->def);
        int r = u->kind->parse(u, def, o);
        assert(r == 0);   /* table_ok: the default is in the range */
        (void)r;
    }
}

/* ---- arrays ------------------------------------------------------------------------ */

/* Member i's path as given: IMAGE.i (count form) or the i-th of the list. */
static int member_name(const struct up_opts *o, unsigned i, bool count, char *buf, size_t size)
{
    if (count)
        return snprintf(buf, size, "%s.%u", o->image, i) < (int)size ? 0 : -ENAMETOOLONG;
    const char *p = o->members;
    for (unsigned k = 0; k < i; k++)
        p = strchr(p, ',') + 1;
    size_t len = strcspn(p, ",");
    if (len >= size)
        return -ENAMETOOLONG;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return 0;
}

int upopts_members(struct up_opts *o)
{
    if (!o->members[0])
        return 0;
    bool count = strchr(o->members, ',') == NULL && o->members[0] >= '0' &&
                 o->members[0] <= '9' && strspn(o->members, "0123456789") == strlen(o->members);
    unsigned n = count ? (unsigned)atoi(o->members) : 1;
    for (const char *p = o->members; !count && *p; p++)
        n += *p == ',';
    if (o->size)
        return cmd_fail("up", "--size creates one image; make an array with: cisc mkfs "
                        "--members");
    if (count && !o->image)
        return cmd_fail("up", "--members %s names the members IMAGE.0 .. IMAGE.%u: give IMAGE",
                        o->members, n - 1);
    if (!count && o->image && o->mnt)
        return cmd_fail("up", "with --members IMG1,IMG2,... give only the mount point");
    if (!count && o->image)
        o->mnt = o->image;
    o->member_paths = calloc(n + 1, sizeof(char *));   /* NULL-terminated */
    if (!o->member_paths)
        return cmd_fail("up", "out of memory");
    for (unsigned i = 0; i < n; i++) {
        char name[PATH_MAX];
        int r = member_name(o, i, count, name, sizeof(name));
        o->member_paths[i] = r ? NULL : realpath(name, NULL);
        if (!o->member_paths[i])
            return cmd_fail("up", "array member %u, %s: %s (make an array with: cisc mkfs "
                            "--members)", i, r ? o->members : name,
                            strerror(r ? -r : errno));
    }
    o->nmembers = n;
    if (!count)
        o->image = o->member_paths[0];
    return 0;
}

void upopts_free(struct up_opts *o)
{
    for (unsigned i = 0; o->member_paths && i < MEDIA_ARRAY_MAX && o->member_paths[i]; i++)
        free(o->member_paths[i]);
    free(o->member_paths);
    o->member_paths = NULL;
    o->nmembers = 0;
}

/* ---- help --------------------------------------------------------------------------- */

#define HELP_WIDTH 79
#define HELP_COL   23

/* Prints text's words from column col on, wrapping to column indent.
 * Returns the column after the last word. */
static int put_wrapped(FILE *f, const char *text, int col, int indent)
{
    while (*text) {
        size_t w = strcspn(text, " ");
        if (col > indent && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, text);
        col += (int)w;
        text += w;
        text += strspn(text, " ");
    }
    return col;
}

/* "N" or "direct|queue": the argument as help shows it. */
static void arg_name(const struct up_opt *u, char *buf, size_t size)
{
    if (u->words)
        join_words(u, "|", buf, size);
    else
        snprintf(buf, size, "%s", u->kind->flag ? "" : u->arg);
}

/* "  -f, --foreground", "  --cores N": the option's left column. */
static int help_left(const struct up_opt *u, char *buf, size_t size)
{
    char arg[128], spell[64];
    arg_name(u, arg, sizeof(arg));
    if (u->letter && u->name)
        snprintf(spell, sizeof(spell), "-%c, --%s", u->letter, u->name);
    else if (u->letter)
        snprintf(spell, sizeof(spell), "-%c", u->letter);
    else
        snprintf(spell, sizeof(spell), "--%s", u->name);
    return snprintf(buf, size, "  %s%s%s", spell, *arg ? " " : "", arg);
}

/* One option: spelling, help text, then the accepted range (choices show
 * theirs in the spelling). */
static void help_row(FILE *f, const struct up_opt *u)
{
    char left[192], want[256], range[320];
    int col = help_left(u, left, sizeof(left));
    fputs(left, f);
    if (col + 1 >= HELP_COL)
        fprintf(f, "\n%*s", HELP_COL, "");
    else
        fprintf(f, "%*s", HELP_COL - col, "");
    col = put_wrapped(f, u->help, HELP_COL, HELP_COL);
    if (u->kind->range) {
        u->kind->want(u, want, sizeof(want));
        if (u->kind->number)
            snprintf(range, sizeof(range), "(%s, default %llu)", want,
                     (unsigned long long)u->def);
        else
            snprintf(range, sizeof(range), "(%s)", want);
        put_wrapped(f, range, col, HELP_COL);
    }
    fputc('\n', f);
}

/* "cores=N, sched=fifo, ..., trace" for the mount keys paragraph. */
static void help_keys(FILE *f)
{
    char text[2048], arg[128];
    size_t n = 0;
    text[0] = '\0';
    for (size_t i = 0; i < UP_NOPTS; i++) {
        const struct up_opt *u = &up_table[i];
        if (!u->key)
            continue;
        arg_name(u, arg, sizeof(arg));
        int w = snprintf(text + n, sizeof(text) - n, "%s%s%s%s", n ? ", " : "", u->key,
                         *arg ? "=" : "", arg);
        n += w > 0 && (size_t)w < sizeof(text) - n ? (size_t)w : 0;
    }
    put_wrapped(f, "As mount options (cisc up -o, mount -o, /etc/fstab) the same options are:",
                0, 0);
    fputs("\n  ", f);
    put_wrapped(f, text, 2, 2);
    fputs(".\n", f);
    put_wrapped(f, "Other keys go to the FUSE mount; mount(8)'s generic ones (defaults, rw, "
                "nofail, _netdev, x-*, ...) are dropped by the helper.", 0, 0);
    fputc('\n', f);
}

void upopts_help(FILE *f)
{
    fputs("usage: cisc up [OPTION]... [IMAGE [MOUNTPOINT]]\n"
          "       " HELPER_USAGE "   (mount -t ciscfs)\n"
          "\n"
          "Starts a device on IMAGE and mounts its file system on MOUNTPOINT.\n"
          "With no IMAGE, uses $XDG_DATA_HOME/ciscfs/default.img (1 GiB, made on\n"
          "first use) and mounts it on $XDG_DATA_HOME/ciscfs/mnt. A MOUNTPOINT\n"
          "that does not exist is created. The control socket is\n"
          ".NAME.cisc.sock beside the mount point.\n"
          "\n", f);
    for (size_t i = 0; i < UP_NOPTS; i++)
        help_row(f, &up_table[i]);
    fputc('\n', f);
    help_keys(f);
    fputs("\nStop it with: cisc down MOUNTPOINT (or SIGTERM/SIGINT to the device).\n"
          "Exit status: 0 success, 1 the operation failed (the device could not\n"
          "start on the image), 2 usage or environment error.\n", f);
}
