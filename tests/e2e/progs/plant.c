/* tests/e2e/progs/plant.c - test helper: writes a program record straight
 * into a stopped device's image, bypassing the verifier, the way a record
 * written by an older, more permissive device would look after an
 * upgrade. Usage: cisc-progs-plant IMAGE ID NAME OWNER FUNC OBJECT.o */
#include "device/progs/progs_int.h"

#include "device/media/media.h"
#include "device/storagefs/storagefs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int plant(struct sfs *fs, char **argv, const uint8_t *obj, size_t size)
{
    char err[256];
    struct progs *p;
    int r = progs_open(fs, NULL, &p, err, sizeof(err));
    if (r) {
        fprintf(stderr, "plant: %s\n", err);
        return r;
    }
    struct progs_rec rec = { .id = (uint32_t)atoi(argv[2]), .owner = (uint32_t)atoi(argv[4]),
                             .obj_size = (uint32_t)size, .load_time_ns = 1 };
    snprintf(rec.name, sizeof(rec.name), "%s", argv[3]);
    snprintf(rec.func, sizeof(rec.func), "%s", argv[5]);
    progs_sha256(obj, size, rec.sha256);
    r = progs_store_save(p, &rec, obj);
    progs_close(p);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fputs("usage: cisc-progs-plant IMAGE ID NAME OWNER FUNC OBJECT.o\n", stderr);
        return 2;
    }
    FILE *f = fopen(argv[6], "rb");
    static uint8_t obj[1 << 20];
    size_t size = f ? fread(obj, 1, sizeof(obj), f) : 0;
    if (f)
        fclose(f);
    struct media *m;
    struct sfs *fs;
    int r = media_open_file(argv[1], 0, &m);
    if (!r && (r = sfs_mount(m, &(struct sfs_mount_opts){ 0 }, &fs)))
        media_close(m);
    if (!r) {
        r = plant(fs, argv, obj, size);
        int u = sfs_unmount(fs);
        r = r ? r : u;
    }
    if (r)
        fprintf(stderr, "plant: %s\n", strerror(-r));
    return r ? 1 : 0;
}
