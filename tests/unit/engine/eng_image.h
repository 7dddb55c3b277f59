// tests/unit/engine/eng_image.h - the engine tests' file system: a fresh
// 64 MiB StorageFS image in a temporary file, mounted.
#ifndef CISC_TESTS_ENG_IMAGE_H
#define CISC_TESTS_ENG_IMAGE_H

#include <gtest/gtest.h>

#include "device/media/media.h"
#include "device/storagefs/storagefs.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

// Makes an image from the mkstemp template tmpl (its name in *path) and
// mounts it in *fs. Fails the test (fatally) on any error.
inline void MakeMountedImage(const char *tmpl, std::string *path, struct sfs **fs)
{
    std::string t = tmpl;
    int fd = mkstemp(&t[0]);
    ASSERT_GE(fd, 0);
    close(fd);
    *path = t;
    struct media *m;
    ASSERT_EQ(media_create_file(path->c_str(), 64 << 20, 0, &m), 0);
    struct sfs_mkfs_opts mo = {};
    ASSERT_EQ(sfs_mkfs(m, &mo), 0);
    media_close(m);
    ASSERT_EQ(media_open_file(path->c_str(), 0, &m), 0);
    struct sfs_mount_opts o = {};
    ASSERT_EQ(sfs_mount(m, &o, fs), 0);
}

#endif
