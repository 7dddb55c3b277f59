/* proto/steps.c - the table of step kinds (steps.h) and its lookups. */
#include "proto/steps.h"

#include <stddef.h>
#include <string.h>

#define IN  STEP_INPUT
#define OUT STEP_OUTPUT
#define CMP (STEP_COMPUTE | STEP_INPUT)

/* Indexed by kind; rows for values that are no kind stay zero. */
static const struct step_kind kinds[WIRE_STEP_BPF + 1] = {
    [WIRE_STEP_OPEN] = { WIRE_STEP_OPEN, STEP_PATH, 0, "open" },
    [WIRE_STEP_CLOSE] = { WIRE_STEP_CLOSE, STEP_FILE, 0, "close" },
    [WIRE_STEP_READ] = { WIRE_STEP_READ, STEP_FILE | OUT, 0, "read" },
    [WIRE_STEP_WRITE] = { WIRE_STEP_WRITE, STEP_FILE | IN, 0, "write" },
    [WIRE_STEP_APPEND] = { WIRE_STEP_APPEND, STEP_FILE | IN, 0, "append" },
    [WIRE_STEP_TRUNCATE] = { WIRE_STEP_TRUNCATE, STEP_FILE, 0, "truncate" },
    [WIRE_STEP_FSYNC] = { WIRE_STEP_FSYNC, STEP_FILE, 0, "fsync" },
    [WIRE_STEP_UNLINK] = { WIRE_STEP_UNLINK, STEP_PATH, 0, "unlink" },
    [WIRE_STEP_CRC32C] = { WIRE_STEP_CRC32C, CMP | OUT, 4, "crc32c" },
    [WIRE_STEP_XXH3] = { WIRE_STEP_XXH3, CMP | OUT, 8, "xxh3" },
    [WIRE_STEP_ZSTD_COMPRESS] = { WIRE_STEP_ZSTD_COMPRESS, CMP | OUT, 0,
                                  "zstd_compress" },
    [WIRE_STEP_ZSTD_DECOMPRESS] = { WIRE_STEP_ZSTD_DECOMPRESS, CMP | OUT | STEP_PARSER, 0,
                                    "zstd_decompress" },
    [WIRE_STEP_ENCRYPT] = { WIRE_STEP_ENCRYPT, CMP | OUT, 0, "encrypt" },
    [WIRE_STEP_DECRYPT] = { WIRE_STEP_DECRYPT, CMP | OUT | STEP_PARSER, 0, "decrypt" },
    [WIRE_STEP_VERIFY] = { WIRE_STEP_VERIFY, CMP | STEP_INPUT2, 0, "verify" },
    [WIRE_STEP_PATCH] = { WIRE_STEP_PATCH, CMP | STEP_INPUT2 | OUT, 0, "patch" },
    [WIRE_STEP_CONCAT] = { WIRE_STEP_CONCAT, CMP | STEP_INPUT2 | OUT, 0, "concat" },
    [WIRE_STEP_BPF] = { WIRE_STEP_BPF, CMP | OUT, 0, "bpf" },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct step_kind *step_kind(unsigned kind)
{
    return kind < NKINDS && kinds[kind].name ? &kinds[kind] : NULL;
}

const struct step_kind *step_kind_named(const char *name)
{
    for (size_t k = 0; name && k < NKINDS; k++)
        if (kinds[k].name && strcmp(kinds[k].name, name) == 0)
            return &kinds[k];
    return NULL;
}

bool step_has(unsigned kind, unsigned props)
{
    const struct step_kind *k = step_kind(kind);
    return k && (k->props & props) == props;
}
