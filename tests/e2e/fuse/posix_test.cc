// tests/e2e/fuse/posix_test.cc - POSIX semantics through the FUSE mount:
// every FUSE operation the front end maps, with its errno cases.
#include "tests/e2e/fuse/mount_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include <set>
#include <vector>

using e2e::MountTest;

namespace {

int Renameat2(const std::string &a, const std::string &b, unsigned flags)
{
    return (int)syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), flags);
}

std::string Slurp(int fd, off_t off, size_t n)
{
    std::string s(n, '\0');
    ssize_t r = pread(fd, &s[0], n, off);
    s.resize(r > 0 ? (size_t)r : 0);
    return s;
}

}  // namespace

TEST_F(MountTest, CreateWriteReadTruncate)
{
    int fd = open(P("f").c_str(), O_CREAT | O_EXCL | O_RDWR, 0644);   // create
    ASSERT_GE(fd, 0) << strerror(errno);
    std::string data(300000, 'x');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)('a' + i % 26);
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0), (ssize_t)data.size());   // write_buf
    EXPECT_EQ(Slurp(fd, 0, data.size()), data);                                 // read
    EXPECT_EQ(Slurp(fd, 299990, 100), data.substr(299990));
    ASSERT_EQ(ftruncate(fd, 1000), 0);                                          // setattr size
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);                                               // getattr
    EXPECT_EQ(st.st_size, 1000);
    ASSERT_EQ(ftruncate(fd, 5000), 0);
    EXPECT_EQ(Slurp(fd, 1000, 10), std::string(10, '\0'));   // extension reads as zeros
    EXPECT_EQ(fsync(fd), 0);                                  // fsync
    EXPECT_EQ(fdatasync(fd), 0);
    EXPECT_EQ(close(fd), 0);                                  // flush + release
    EXPECT_EQ(open(P("f").c_str(), O_CREAT | O_EXCL | O_RDWR, 0644), -1);
    EXPECT_EQ(errno, EEXIST);
    fd = open(P("f").c_str(), O_WRONLY | O_TRUNC);            // open with O_TRUNC
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 0);
    close(fd);
    EXPECT_EQ(truncate(P("f").c_str(), 77), 0);
    EXPECT_EQ(stat(P("f").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 77);
}

TEST_F(MountTest, LookupErrors)
{
    struct stat st;
    EXPECT_EQ(stat(P("missing").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOENT);
    // a negative entry is cached; creating the name must still work
    EXPECT_EQ(stat(P("missing").c_str(), &st), -1);
    ASSERT_TRUE(e2e::WriteFile(P("missing"), "now here"));
    EXPECT_EQ(stat(P("missing").c_str(), &st), 0);
    EXPECT_EQ(stat(P("missing/x").c_str(), &st), -1);
    EXPECT_EQ(errno, ENOTDIR);
    std::string longname(256, 'n');
    EXPECT_EQ(open(P(longname).c_str(), O_CREAT | O_WRONLY, 0644), -1);
    EXPECT_EQ(errno, ENAMETOOLONG);
}

TEST_F(MountTest, AppendAndDirect)
{
    int fd = open(P("log").c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "one\n", 4), 4);
    ASSERT_EQ(write(fd, "two\n", 4), 4);
    close(fd);
    EXPECT_EQ(e2e::ReadFile(P("log")), "one\ntwo\n");

    fd = open(P("direct").c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    void *buf = nullptr;
    ASSERT_EQ(posix_memalign(&buf, 4096, 65536), 0);
    memset(buf, 0x5a, 65536);
    EXPECT_EQ(pwrite(fd, buf, 65536, 0), 65536);
    memset(buf, 0, 65536);
    EXPECT_EQ(pread(fd, buf, 65536, 0), 65536);
    EXPECT_EQ(((unsigned char *)buf)[65535], 0x5a);
    free(buf);
    close(fd);
}

TEST_F(MountTest, MkdirRmdirReaddir)
{
    ASSERT_EQ(mkdir(P("d").c_str(), 0750), 0);   // mkdir
    EXPECT_EQ(mkdir(P("d").c_str(), 0750), -1);
    EXPECT_EQ(errno, EEXIST);
    struct stat st;
    ASSERT_EQ(stat(P("d").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0750u);
    std::set<std::string> want;
    for (int i = 0; i < 1000; i++) {   // several readdir(plus) batches
        std::string n = "entry-with-a-longish-name-" + std::to_string(i);
        ASSERT_TRUE(e2e::WriteFile(P("d/" + n), ""));
        want.insert(n);
    }
    DIR *d = opendir(P("d").c_str());   // opendir
    ASSERT_NE(d, nullptr);
    std::set<std::string> got;
    struct dirent *de;
    while ((de = readdir(d)))   // readdir / readdirplus
        got.insert(de->d_name);
    EXPECT_EQ(closedir(d), 0);   // releasedir
    EXPECT_TRUE(got.count(".") && got.count(".."));
    got.erase(".");
    got.erase("..");
    EXPECT_EQ(got, want);
    EXPECT_EQ(rmdir(P("d").c_str()), -1);   // rmdir
    EXPECT_EQ(errno, ENOTEMPTY);
    EXPECT_EQ(rmdir(P("d/entry-with-a-longish-name-1").c_str()), -1);
    EXPECT_EQ(errno, ENOTDIR);
    for (auto &n : want)
        ASSERT_EQ(unlink(P("d/" + n).c_str()), 0);
    int dfd = open(P("d").c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dfd, 0);
    EXPECT_EQ(fsync(dfd), 0);   // fsyncdir
    close(dfd);
    EXPECT_EQ(rmdir(P("d").c_str()), 0);
    EXPECT_EQ(stat(P("d").c_str(), &st), -1);
}

TEST_F(MountTest, UnlinkAndOpenUnlinkedFile)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "still here"));
    int fd = open(P("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(unlink(P("f").c_str()), 0);   // unlink
    EXPECT_EQ(unlink(P("f").c_str()), -1);
    EXPECT_EQ(errno, ENOENT);
    ASSERT_EQ(mkdir(P("dir").c_str(), 0755), 0);
    EXPECT_EQ(unlink(P("dir").c_str()), -1);
    EXPECT_EQ(errno, EISDIR);
    // the inode lives on while open (forget/iput)
    EXPECT_EQ(Slurp(fd, 0, 100), "still here");
    EXPECT_EQ(pwrite(fd, "!", 1, 10), 1);
    EXPECT_EQ(Slurp(fd, 0, 100), "still here!");
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_nlink, 0u);
    close(fd);
}

TEST_F(MountTest, RenameFlags)
{
    ASSERT_TRUE(e2e::WriteFile(P("a"), "A"));
    ASSERT_TRUE(e2e::WriteFile(P("b"), "B"));
    EXPECT_EQ(Renameat2(P("a"), P("b"), RENAME_NOREPLACE), -1);
    EXPECT_EQ(errno, EEXIST);
    EXPECT_EQ(Renameat2(P("a"), P("b"), RENAME_EXCHANGE), 0);
    EXPECT_EQ(e2e::ReadFile(P("a")), "B");
    EXPECT_EQ(e2e::ReadFile(P("b")), "A");
    EXPECT_EQ(Renameat2(P("a"), P("c"), RENAME_EXCHANGE), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(rename(P("a").c_str(), P("b").c_str()), 0);   // replace
    EXPECT_EQ(e2e::ReadFile(P("b")), "B");
    EXPECT_EQ(access(P("a").c_str(), F_OK), -1);
    ASSERT_EQ(mkdir(P("d1").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("d1/sub").c_str(), 0755), 0);
    EXPECT_EQ(rename(P("d1").c_str(), P("d1/sub/x").c_str()), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(rename(P("b").c_str(), P("d1/sub").c_str()), -1);
    EXPECT_EQ(errno, EISDIR);
    ASSERT_EQ(mkdir(P("d2").c_str(), 0755), 0);
    ASSERT_TRUE(e2e::WriteFile(P("d2/x"), ""));
    EXPECT_EQ(rename(P("d1").c_str(), P("d2").c_str()), -1);
    EXPECT_EQ(errno, ENOTEMPTY);
    EXPECT_EQ(rename(P("b").c_str(), P("d1/sub/moved").c_str()), 0);
    EXPECT_EQ(e2e::ReadFile(P("d1/sub/moved")), "B");
}

TEST_F(MountTest, LinksAndSymlinks)
{
    ASSERT_TRUE(e2e::WriteFile(P("t"), "target"));
    ASSERT_EQ(link(P("t").c_str(), P("h").c_str()), 0);   // link
    struct stat st;
    ASSERT_EQ(stat(P("t").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 2u);
    EXPECT_EQ(e2e::ReadFile(P("h")), "target");
    EXPECT_EQ(link(P("t").c_str(), P("h").c_str()), -1);
    EXPECT_EQ(errno, EEXIST);
    ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
    EXPECT_EQ(link(P("d").c_str(), P("dl").c_str()), -1);
    EXPECT_EQ(errno, EPERM);
    ASSERT_EQ(symlink("t", P("s").c_str()), 0);   // symlink
    char buf[64] = { 0 };
    EXPECT_EQ(readlink(P("s").c_str(), buf, sizeof(buf)), 1);   // readlink
    EXPECT_STREQ(buf, "t");
    EXPECT_EQ(e2e::ReadFile(P("s")), "target");
    ASSERT_EQ(lstat(P("s").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    std::string longt(4000, 'z');
    ASSERT_EQ(symlink(longt.c_str(), P("long").c_str()), 0);
    char lb[4096];
    EXPECT_EQ(readlink(P("long").c_str(), lb, sizeof(lb)), 4000);
    EXPECT_EQ(readlink(P("t").c_str(), buf, sizeof(buf)), -1);
    EXPECT_EQ(errno, EINVAL);
}

TEST_F(MountTest, MknodFifo)
{
    ASSERT_EQ(mkfifo(P("fifo").c_str(), 0600), 0);   // mknod S_IFIFO
    struct stat st;
    ASSERT_EQ(stat(P("fifo").c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    ASSERT_EQ(mknod(P("reg").c_str(), S_IFREG | 0644, 0), 0);   // mknod S_IFREG
    ASSERT_EQ(stat(P("reg").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    // a FIFO on the mount carries data between processes
    pid_t pid = fork();
    if (pid == 0) {
        int w = open(P("fifo").c_str(), O_WRONLY);
        _exit(w >= 0 && write(w, "ping", 4) == 4 ? 0 : 1);
    }
    int r = open(P("fifo").c_str(), O_RDONLY);
    ASSERT_GE(r, 0);
    char buf[8] = { 0 };
    EXPECT_EQ(read(r, buf, sizeof(buf)), 4);
    EXPECT_STREQ(buf, "ping");
    close(r);
    int status;
    waitpid(pid, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(MountTest, SetattrModeOwnerTimes)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    struct stat a, b;
    ASSERT_EQ(stat(P("f").c_str(), &a), 0);
    usleep(20000);
    ASSERT_EQ(chmod(P("f").c_str(), 04755), 0);
    ASSERT_EQ(stat(P("f").c_str(), &b), 0);
    EXPECT_EQ(b.st_mode & 07777, 04755u);
    EXPECT_TRUE(b.st_ctim.tv_sec > a.st_ctim.tv_sec ||
                (b.st_ctim.tv_sec == a.st_ctim.tv_sec && b.st_ctim.tv_nsec > a.st_ctim.tv_nsec))
        << "ctime must move on chmod";
    ASSERT_EQ(chown(P("f").c_str(), 1000, 2000), 0);
    ASSERT_EQ(stat(P("f").c_str(), &b), 0);
    EXPECT_EQ(b.st_uid, 1000u);
    EXPECT_EQ(b.st_gid, 2000u);
    EXPECT_EQ(b.st_mode & S_ISUID, 0u) << "chown clears set-user-id";

    struct timespec ts[2] = { { 1000000000, 123 }, { 1200000000, 456 } };
    ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), ts, 0), 0);
    ASSERT_EQ(stat(P("f").c_str(), &b), 0);
    EXPECT_EQ(b.st_atim.tv_sec, 1000000000);
    EXPECT_EQ(b.st_atim.tv_nsec, 123);
    EXPECT_EQ(b.st_mtim.tv_sec, 1200000000);
    EXPECT_EQ(b.st_mtim.tv_nsec, 456);
    struct timespec omit_now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
    ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), omit_now, 0), 0);
    ASSERT_EQ(stat(P("f").c_str(), &b), 0);
    EXPECT_EQ(b.st_atim.tv_sec, 1000000000) << "UTIME_OMIT keeps atime";
    EXPECT_GT(b.st_mtim.tv_sec, 1600000000) << "UTIME_NOW sets mtime to now";
    struct timespec now_omit[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
    time_t mt = b.st_mtim.tv_sec;
    ASSERT_EQ(utimensat(AT_FDCWD, P("f").c_str(), now_omit, 0), 0);
    ASSERT_EQ(stat(P("f").c_str(), &b), 0);
    EXPECT_GT(b.st_atim.tv_sec, 1600000000);
    EXPECT_EQ(b.st_mtim.tv_sec, mt);
}

TEST_F(MountTest, Xattrs)
{
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    std::string f = P("f");
    EXPECT_EQ(setxattr(f.c_str(), "user.color", "blue", 4, 0), 0);   // setxattr
    char buf[64] = { 0 };
    EXPECT_EQ(getxattr(f.c_str(), "user.color", nullptr, 0), 4);      // size probe
    EXPECT_EQ(getxattr(f.c_str(), "user.color", buf, sizeof(buf)), 4);   // getxattr
    EXPECT_EQ(std::string(buf, 4), "blue");
    EXPECT_EQ(getxattr(f.c_str(), "user.color", buf, 2), -1);
    EXPECT_EQ(errno, ERANGE);
    EXPECT_EQ(setxattr(f.c_str(), "user.color", "red", 3, XATTR_CREATE), -1);
    EXPECT_EQ(errno, EEXIST);
    EXPECT_EQ(setxattr(f.c_str(), "user.size", "1", 1, XATTR_REPLACE), -1);
    EXPECT_EQ(errno, ENODATA);
    EXPECT_EQ(setxattr(f.c_str(), "user.size", "1", 1, XATTR_CREATE), 0);
    ssize_t n = listxattr(f.c_str(), buf, sizeof(buf));   // listxattr
    ASSERT_GT(n, 0);
    std::set<std::string> names;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        names.insert(buf + i);
    EXPECT_EQ(names, (std::set<std::string>{ "user.color", "user.size" }));
    EXPECT_EQ(removexattr(f.c_str(), "user.color"), 0);   // removexattr
    EXPECT_EQ(getxattr(f.c_str(), "user.color", buf, sizeof(buf)), -1);
    EXPECT_EQ(errno, ENODATA);
    EXPECT_EQ(removexattr(f.c_str(), "user.color"), -1);
    EXPECT_EQ(errno, ENODATA);
    EXPECT_EQ(setxattr(f.c_str(), "trusted.t", "v", 1, 0), 0);   // root may
    EXPECT_EQ(e2e::Sh("getfattr --absolute-names -n user.size --only-values " + f).out, "1");
}

TEST_F(MountTest, StatfsAccess)
{
    struct statvfs sv;
    ASSERT_EQ(statvfs(mnt.c_str(), &sv), 0);   // statfs
    EXPECT_GT(sv.f_blocks, 0u);
    EXPECT_GT(sv.f_files, 0u);
    EXPECT_EQ(sv.f_namemax, 255u);
    ASSERT_TRUE(e2e::WriteFile(P("f"), "x"));
    ASSERT_EQ(chmod(P("f").c_str(), 0644), 0);
    EXPECT_EQ(access(P("f").c_str(), R_OK | W_OK), 0);   // access
    EXPECT_EQ(access(P("f").c_str(), X_OK), -1);         // root needs an x bit
    EXPECT_EQ(errno, EACCES);
    EXPECT_EQ(access(P("nope").c_str(), F_OK), -1);
    EXPECT_EQ(errno, ENOENT);
}

TEST_F(MountTest, FallocateAndSeek)
{
    int fd = open(P("f").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fallocate(fd, 0, 0, 1 << 20), 0);   // fallocate
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    ASSERT_EQ(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 2 << 20), 0);
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    std::string ones(1 << 20, '1');
    ASSERT_EQ(pwrite(fd, ones.data(), ones.size(), 0), (ssize_t)ones.size());
    ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192), 0);
    EXPECT_EQ(Slurp(fd, 4096, 8192), std::string(8192, '\0'));
    EXPECT_EQ(Slurp(fd, 0, 4096), std::string(4096, '1'));
    EXPECT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), -1);   // needs KEEP_SIZE
    EXPECT_EQ(errno, EOPNOTSUPP);
    close(fd);

    fd = open(P("sparse").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, "data", 4, 1 << 20), 4);   // hole, then data
    off_t data = lseek(fd, 0, SEEK_DATA);   // lseek
    EXPECT_GE(data, 0);
    EXPECT_LE(data, (off_t)(1 << 20));
    off_t hole = lseek(fd, 0, SEEK_HOLE);
    EXPECT_GE(hole, 0);
    EXPECT_LE(hole, (off_t)(1 << 20) + 4);
    EXPECT_EQ(lseek(fd, (1 << 20) + 10, SEEK_DATA), -1);
    EXPECT_EQ(errno, ENXIO);
    close(fd);
}

TEST_F(MountTest, CopyFileRange)
{
    std::string data(3 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 7);
    ASSERT_TRUE(e2e::WriteFile(P("src"), data));
    int in = open(P("src").c_str(), O_RDONLY);
    int out = open(P("dst").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(in, 0);
    ASSERT_GE(out, 0);
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = copy_file_range(in, nullptr, out, nullptr, data.size() - done, 0);
        ASSERT_GT(n, 0) << strerror(errno);
        done += (size_t)n;
    }
    close(in);
    close(out);
    EXPECT_TRUE(e2e::ReadFile(P("dst")) == data);
    EXPECT_EQ(e2e::Sh("cp --reflink=never " + P("src") + " " + P("cp")).status, 0);
    EXPECT_TRUE(e2e::ReadFile(P("cp")) == data);
}

TEST_F(MountTest, LocksAcrossProcesses)
{
    ASSERT_TRUE(e2e::WriteFile(P("lk"), "0123456789"));
    int fd = open(P("lk").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    struct flock fl = { F_WRLCK, SEEK_SET, 0, 5, 0 };
    ASSERT_EQ(fcntl(fd, F_SETLK, &fl), 0);   // setlk
    ASSERT_EQ(flock(fd, LOCK_EX), 0);         // flock
    pid_t me = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        int f2 = open(P("lk").c_str(), O_RDWR);
        struct flock want = { F_WRLCK, SEEK_SET, 0, 10, 0 };
        if (fcntl(f2, F_GETLK, &want) || want.l_type != F_WRLCK || want.l_pid != me)
            _exit(1);   // getlk sees the parent's lock
        struct flock other = { F_WRLCK, SEEK_SET, 5, 5, 0 };
        if (fcntl(f2, F_SETLK, &other))
            _exit(2);   // a disjoint range is free
        struct flock clash = { F_RDLCK, SEEK_SET, 2, 1, 0 };
        if (fcntl(f2, F_SETLK, &clash) == 0 || (errno != EAGAIN && errno != EACCES))
            _exit(3);
        if (flock(f2, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
            _exit(4);
        _exit(0);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_EQ(WEXITSTATUS(st), 0);
    close(fd);
}

TEST_F(MountTest, ConcurrentWritersOnDifferentFiles)
{
    const int kProcs = 4, kBlocks = 64;
    std::vector<pid_t> kids;
    for (int p = 0; p < kProcs; p++) {
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(P("w" + std::to_string(p)).c_str(), O_CREAT | O_WRONLY, 0644);
            std::string blk(65536, (char)('A' + p));
            for (int i = 0; i < kBlocks; i++)
                if (pwrite(fd, blk.data(), blk.size(), (off_t)i * 65536) != 65536)
                    _exit(1);
            _exit(close(fd) ? 1 : 0);
        }
        kids.push_back(pid);
    }
    for (pid_t k : kids) {
        int st;
        ASSERT_EQ(waitpid(k, &st, 0), k);
        EXPECT_EQ(WEXITSTATUS(st), 0);
    }
    for (int p = 0; p < kProcs; p++)
        EXPECT_TRUE(e2e::ReadFile(P("w" + std::to_string(p))) ==
                    std::string((size_t)kBlocks * 65536, (char)('A' + p)));
}

TEST_F(MountTest, KernelForgetsGiveReferencesBack)
{
    for (int i = 0; i < 200; i++)
        ASSERT_TRUE(e2e::WriteFile(P("f" + std::to_string(i)), "x"));
    int fd = open(P("f0").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(unlink(P("f0").c_str()), 0);
    sync();
    // evicting the kernel's dentries and inodes sends FORGET / BATCH_FORGET
    ASSERT_TRUE(e2e::WriteFile("/proc/sys/vm/drop_caches", "2"));
    EXPECT_EQ(Slurp(fd, 0, 10), "x") << "an open unlinked file survives forgets";
    close(fd);
    e2e::RunResult r = e2e::Sh(cisc + " status --raw " + mnt);
    EXPECT_NE(r.out.find("op forget count"), std::string::npos) << r.out;
    for (int i = 1; i < 200; i++)   // the names still resolve after the forgets
        ASSERT_EQ(e2e::ReadFile(P("f" + std::to_string(i))), "x");
}

TEST_F(MountTest, SymlinkOwnerAndTimes)
{
    ASSERT_EQ(symlink("target", P("l").c_str()), 0);
    ASSERT_EQ(lchown(P("l").c_str(), 5, 6), 0);
    struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };
    ASSERT_EQ(utimensat(AT_FDCWD, P("l").c_str(), ts, AT_SYMLINK_NOFOLLOW), 0);
    struct stat st;
    ASSERT_EQ(lstat(P("l").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 5u);
    EXPECT_EQ(st.st_gid, 6u);
    EXPECT_EQ(st.st_mtim.tv_sec, 2000);
}
