/*
 * cmd/mnt.h - mount-point helpers shared by `cisc up`, `cisc down`,
 * `cisc status` and the mount.ciscfs helper.
 *
 * Invariants:
 *   1. Paths are compared as the kernel shows them in /proc/self/mountinfo
 *      (octal escapes decoded), so dead mounts are found without stat().
 */
#ifndef CISC_CMD_MNT_H
#define CISC_CMD_MNT_H

#include <stdbool.h>
#include <stddef.h>

/* Makes path absolute (against the cwd) and removes "." and ".." parts
 * and repeated slashes, without touching the file system (a dead mount
 * cannot be stat'ed). Returns 0 or -ENAMETOOLONG. */
int mnt_absolute(const char *path, char *buf, size_t size);

/* True if the absolute path is a mount point of type fuse.ciscfs. */
bool mnt_is_ciscfs(const char *path);

/* Calls fn for every fuse.ciscfs mount of /proc/self/mountinfo, in
 * mount order, with its mount point and its source (the image path `cisc
 * up` gave as fsname), until fn returns nonzero. Returns 0 or -errno. */
int mnt_each_ciscfs(int (*fn)(void *arg, const char *mnt, const char *source), void *arg);

/* Lazily unmounts path (umount2 MNT_DETACH, else fusermount3 -uz).
 * Returns 0 or -1 with errno set. */
int mnt_detach(const char *path);

/* Unmounts path as umount(8) does without -l: -EBUSY, and nothing
 * changes, while a process has a file, its working directory or its root
 * under it (cmd/holders.h). Root asks the kernel; a user asks fusermount3
 * after checking the holders it can see. Returns 0 or -errno. */
int mnt_unmount(const char *path);

/* Starts the reaper of the ciscfs mount on path: a small process that
 * waits for this one to end, however it ends, and then detaches the mount
 * if it is still the same mount (its major:minor in mountinfo): a second
 * line behind fusermount3's auto_unmount, which sometimes never detaches
 * when two devices die at once. It holds no file of the caller's but a
 * pipe. Call after the mount, before any fork that should not keep it
 * alive. Returns 0 or -errno (-ENOENT: no ciscfs mount on path). */
int mnt_reaper_start(const char *path);

/* How many times the reaper tries to detach, 100 ms apart. */
#define MNT_REAP_TRIES 50

/* The default mount point (beside the default image). Returns 0 or -errno. */
int mnt_default(char *buf, size_t size);

/* The mount point a subcommand acts on: argv[1] made absolute, or the
 * default mount when absent. Prints the error and returns 2 on failure. */
int cmd_target_mount(const char *cmd, int argc, char **argv, char *mnt, size_t size);

/* mount(8)-style entry: `mount.ciscfs IMAGE DIR [-o OPTS]` (cmd/up.c). */
int cmd_mount_helper(int argc, char **argv);

#endif
