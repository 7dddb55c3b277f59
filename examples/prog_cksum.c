/* prog_cksum.c - `prog-cksum MOUNT CKSUM.o SRC DST`: copies SRC to DST
 * inside the device only if SRC's CRC-32C is what it was when we looked.
 *
 * Two fused ops, each a vector built with cisc_vec_*:
 *   1. read SRC -> cksum (compute mode) -> the checksum line comes back;
 *   2. read SRC -> cksum (verify mode, the expected CRC as an argument,
 *      passes the data through) -> write DST.
 * If SRC changed in between, op 2 fails at the cksum step with -EBADMSG
 * and, the op being all or nothing, DST is not touched: not created, not
 * truncated. Files up to 16 MiB (one READ step). */
#include "prog_common.h"

#include <fcntl.h>
#include <stdlib.h>

#define MAX_FILE (16u << 20)

/* Op 1: "crc32c XXXXXXXX BYTES\n" for src. */
static int checksum(struct cisc_queue *q, uint32_t id, const char *src, uint32_t *crc,
                    unsigned long long *bytes)
{
    char line[65] = "";
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_open(&v, src, O_RDONLY, 0);
    int rd = cisc_vec_read(&v, f, 0, MAX_FILE);
    struct cisc_bpf_opts o = { .out_cap = 64 };   /* one line comes back */
    int ck = cisc_vec_bpf(&v, id, CISC_IN_STEP(rd), &o);
    cisc_vec_out_to(&v, ck, line, 64);
    r = (int)cisc_vec_submit(&v);
    if (!r)
        line[cisc_vec_out_len(&v, ck) < 64 ? cisc_vec_out_len(&v, ck) : 64] = '\0';
    if (!r && sscanf(line, "crc32c %x %llu", crc, bytes) != 2)
        r = -EPROTO;
    cisc_vec_free(&v);
    return r;
}

/* Op 2: the verified copy. */
static int verified_copy(struct cisc_queue *q, uint32_t id, const char *src, const char *dst,
                         uint32_t crc)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int f = cisc_vec_open(&v, src, O_RDONLY, 0);
    int rd = cisc_vec_read(&v, f, 0, MAX_FILE);
    struct cisc_bpf_opts o = { .arg = { crc, 1 }, .out_cap = MAX_FILE };   /* verify, pass through */
    int ck = cisc_vec_bpf(&v, id, CISC_IN_STEP(rd), &o);
    int out = cisc_vec_open(&v, dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cisc_vec_write(&v, out, 0, CISC_IN_STEP(ck));
    r = (int)cisc_vec_submit(&v);
    cisc_vec_free(&v);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fputs("usage: prog-cksum MOUNT CKSUM.o SRC DST\n", stderr);
        return 2;
    }
    struct cisc_session *s;
    struct cisc_queue *q;
    uint32_t id, crc;
    unsigned long long bytes;
    if (connect_device(argv[1], &s, &q))
        return 2;
    int r = ensure_program(s, "cksum", argv[2], &id);
    if (!r && !(r = checksum(q, id, argv[3], &crc, &bytes)))
        printf("%s: crc32c %08x, %llu bytes\n", argv[3], crc, bytes);
    if (!r && getenv("PROG_CKSUM_PAUSE"))   /* tests change SRC here */
        getchar();
    if (!r && !(r = verified_copy(q, id, argv[3], argv[4], crc)))
        printf("%s -> %s: copied and verified in the device\n", argv[3], argv[4]);
    else if (r == -EBADMSG)
        fprintf(stderr, "prog-cksum: %s changed: its checksum no longer matches; %s left "
                "as it was\n", argv[3], argv[4]);
    else if (r)
        fprintf(stderr, "prog-cksum: %s\n", strerror(-r));
    cisc_session_close(s);
    return r ? 1 : 0;
}
