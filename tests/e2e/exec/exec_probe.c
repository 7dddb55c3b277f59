/*
 * tests/e2e/exec/exec_probe.c - a program that exercises the POSIX file
 * calls `cisc exec` serves, and prints what it observed (results, errnos,
 * contents; never inode numbers or paths). The test runs it twice on the
 * same device, once directly on the mount (the kernel answers) and once
 * under `cisc exec` (libcisc answers), and compares the outputs.
 *
 *   exec_probe DIR SCENARIO      SCENARIO: basic append dup errors fork exec
 *                                mmap threads stdio dir stat signals
 *   exec_probe --child-read FD   (used by the exec scenario)
 *   exec_probe DIR spin          writes until killed (the kill test)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static void *volatile bad = (void *)16;   /* an address no program may touch */
static char self[4096];

static const char *P(const char *name)
{
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
    return buf[k];
}

/* Prints a call's result: the value, or -1 and the errno's name. */
static void show(const char *what, long r)
{
    if (r < 0)
        printf("%s: -1 %s\n", what, strerrorname_np(errno));
    else
        printf("%s: %ld\n", what, r);
}

static void show_file(const char *name)
{
    char buf[8192];
    int fd = open(P(name), O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (n < 0) {
        printf("%s: unreadable %s\n", name, strerrorname_np(errno));
    } else {
        buf[n] = 0;
        printf("%s: %zd [%s]\n", name, n, buf);
    }
    if (fd >= 0)
        close(fd);
}

static void basic(void)
{
    int fd = open(P("b"), O_CREAT | O_RDWR | O_TRUNC, 0640);
    show("open", fd >= 0);
    show("write", write(fd, "hello world\n", 12));
    show("lseek cur", lseek(fd, 0, SEEK_CUR));
    show("lseek set", lseek(fd, 6, SEEK_SET));
    char b[64] = { 0 };
    show("read", read(fd, b, 5));
    printf("data [%s]\n", b);
    show("pwrite", pwrite(fd, "WORLD", 5, 6));
    show("pread", pread(fd, b, 12, 0));
    printf("data [%.12s]\n", b);
    struct iovec v[3] = { { "ab", 2 }, { "", 0 }, { "cdef", 4 } };
    show("lseek end", lseek(fd, 0, SEEK_END));
    show("writev", writev(fd, v, 3));
    char x[3], y[20];
    struct iovec r[2] = { { x, 3 }, { y, 20 } };
    show("preadv", preadv(fd, r, 2, 10));
    printf("data [%.3s|%.5s]\n", x, y);
    struct stat st;
    show("fstat", fstat(fd, &st));
    printf("size %lld mode %o nlink %lu blksize %ld\n", (long long)st.st_size,
           st.st_mode & 07777, (unsigned long)st.st_nlink, (long)st.st_blksize);
    show("ftruncate", ftruncate(fd, 4));
    show("fsync", fsync(fd));
    show("fdatasync", fdatasync(fd));
    show("lseek end2", lseek(fd, 0, SEEK_END));
    show("lseek 100", lseek(fd, 100, SEEK_SET));
    show("write hole", write(fd, "z", 1));
    show("fstat2", fstat(fd, &st));
    printf("size %lld\n", (long long)st.st_size);
    show("close", close(fd));
    show("creat", (fd = creat(P("c"), 0600)) >= 0);
    show("read wronly", read(fd, b, 1));
    show("close", close(fd));
}

static void append(void)
{
    int fd = open(P("a"), O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0644);
    show("write", write(fd, "one\n", 4));
    show("pwrite appends", pwrite(fd, "two\n", 4, 0));
    show("pos", lseek(fd, 0, SEEK_CUR));
    int fd2 = open(P("a"), O_WRONLY);
    show("other write", write(fd2, "ONE", 3));
    show("write3", write(fd, "three\n", 6));
    show("pos", lseek(fd, 0, SEEK_CUR));
    show("getfl", fcntl(fd, F_GETFL));
    show("getfl other", fcntl(fd2, F_GETFL));
    show("setfl", fcntl(fd, F_SETFL, 0));
    show("getfl append", (fcntl(fd, F_GETFL) & O_APPEND) != 0);
    /* (No write after clearing O_APPEND: the FUSE mount keeps appending,
     * its device handle was opened O_APPEND; Linux would write at the
     * position, as cisc exec does.) */
    close(fd);
    close(fd2);
    show_file("a");
}

static void dups(void)
{
    int fd = open(P("d"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    int d1 = dup(fd);
    show("dup ok", d1 > fd);
    show("write fd", write(fd, "abc", 3));
    show("write dup", write(d1, "def", 3));
    show("pos shared", lseek(fd, 0, SEEK_CUR));
    int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 50);
    show("dupfd >= 50", d2 >= 50);
    show("cloexec", fcntl(d2, F_GETFD) & FD_CLOEXEC);
    show("cloexec orig", fcntl(fd, F_GETFD) & FD_CLOEXEC);
    int other = open(P("d2"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    show("dup2 over served", dup2(fd, other) == other);
    show("write via dup2", write(other, "ghi", 3));
    show("dup3 cloexec", dup3(fd, 60, O_CLOEXEC));
    show("getfd 60", fcntl(60, F_GETFD) & FD_CLOEXEC);
    show("dup2 same", dup2(fd, fd) == fd);
    show("close fd", close(fd));
    show("write d1 after close", write(d1, "jkl", 3));
    show("close d1", close(d1));
    show("close d2", close(d2));
    show("close other", close(other));
    show("close 60", close(60));
    show("write closed", write(60, "x", 1));
    char rb[4];
    int hi = open(P("d"), O_RDONLY);
    show("dup2 high", dup2(hi, 90));
    closefrom(80);
    show("read after closefrom", read(90, rb, 1));
    show("read below", read(hi, rb, 1));
    int again = open(P("d3"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    show("dup2 again", dup2(again, 90));
    show("write new 90", write(90, "new", 3));
    close(90);
    close(again);
    close(hi);
    show_file("d3");
    int p[2];
    show("pipe", pipe(p));
    int f = open(P("d"), O_RDONLY);
    show("dup2 pipe over served", dup2(p[1], f) == f);
    show("write pipe via f", write(f, "pq", 2));
    char b[4] = { 0 };
    show("read pipe", read(p[0], b, 2));
    printf("pipe [%s]\n", b);
    close(f);
    close(p[0]);
    close(p[1]);
    show_file("d");
    show_file("d2");
}

static void errors(void)
{
    int fd = open(P("e"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    show("close", close(fd));
    show("close again", close(fd));
    show("missing", open(P("nope/x"), O_RDONLY));
    show("missing2", open(P("nope"), O_RDONLY));
    show("excl", open(P("e"), O_CREAT | O_EXCL | O_WRONLY, 0644));
    fd = open(P("e"), O_RDONLY);
    show("write rdonly", write(fd, "x", 1));
    show("ftruncate rdonly", ftruncate(fd, 0));
    show("lseek neg", lseek(fd, -5, SEEK_SET));
    show("lseek whence", lseek(fd, 0, 77));
    show("pread neg", pread(fd, (char[4]){ 0 }, 4, -1));
    show("read bad ptr", read(fd, bad, 1));
    close(fd);
    fd = open(P("e"), O_RDWR);
    show("write bad ptr", write(fd, bad, 10));
    show("pwrite bad ptr", pwrite(fd, bad, 10, 0));
    show("fstat bad ptr", fstat(fd, bad));
    show("size after", lseek(fd, 0, SEEK_END));
    close(fd);
    show("open bad path", open((const char *)bad, O_RDONLY));
    show("stat bad path", stat((const char *)bad, (struct stat *)bad));
    show("mkdir", mkdir(P("ed"), 0755));
    show("mkdir again", mkdir(P("ed"), 0755));
    show("open dir wronly", open(P("ed"), O_WRONLY));
    close(open(P("ed/f"), O_CREAT | O_WRONLY, 0644));
    show("rmdir nonempty", rmdir(P("ed")));
    show("unlink dir", unlink(P("ed")));
    show("unlink missing", unlink(P("ed/zz")));
    show("rename missing", rename(P("zz"), P("yy")));
    show("notdir", open(P("e/x"), O_RDONLY));
    show("fsync closed", fsync(987));
    show("fstat closed", fstat(987, &(struct stat){ 0 }));
}

static void forks(void)
{
    int fd = open(P("f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    show("write parent", write(fd, "P1", 2));
    pid_t pid = fork();
    if (pid == 0) {
        int ok = write(fd, "C1", 2) == 2;   /* shared offset: after P1 */
        int fd2 = open(P("fc"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        ok &= fd2 >= 0 && write(fd2, "child", 5) == 5 && close(fd2) == 0;
        _exit(ok ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    show("child", WIFEXITED(st) ? WEXITSTATUS(st) : 99);
    show("pos after child", lseek(fd, 0, SEEK_CUR));
    show("write parent2", write(fd, "P2", 2));
    close(fd);
    show_file("f");
    show_file("fc");
}

static void execs(void)
{
    int keep = open(P("x"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    int gone = open(P("x"), O_RDONLY | O_CLOEXEC);
    show("write", write(keep, "inherited data", 14));
    lseek(keep, 3, SEEK_SET);
    char a[16], b[16];
    snprintf(a, sizeof(a), "%d", keep);
    snprintf(b, sizeof(b), "%d", gone);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--child-read", a, b, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    show("exec child", WIFEXITED(st) ? WEXITSTATUS(st) : 99);
    show("pos after exec child", lseek(keep, 0, SEEK_CUR));
    close(keep);
    close(gone);
}

static int child_read(int keep, int gone)
{
    char buf[64] = { 0 };
    show("child read", read(keep, buf, 5));
    printf("child data [%s]\n", buf);
    show("child write", write(keep, "!", 1));
    show("child cloexec read", read(gone, buf, 1));
    return 0;
}

static void mmaps(void)
{
    int fd = open(P("m"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    show("write", write(fd, "mapped bytes", 12));
    char *m = mmap(NULL, 12, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    show("mmap", m != MAP_FAILED);
    if (m != MAP_FAILED) {
        printf("map [%.12s]\n", m);
        memcpy(m, "MAPPED", 6);
        show("msync", msync(m, 12, MS_SYNC));
        munmap(m, 12);
    }
    show("write after", write(fd, "+", 1));
    show("lock", lockf(fd, F_TLOCK, 0));
    close(fd);
    show_file("m");
}

#define NT 4
#define NREC 200
static int tfd;

/* One record: "T<t> R<k> <padding>\n", 32 bytes. */
static void *writer(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int k = 0; k < NREC; k++) {
        char rec[33];
        snprintf(rec, sizeof(rec), "T%d R%04d %-22s\n", t, k, "payload");
        if (write(tfd, rec, 32) != 32)
            return (void *)1;
        if (k % 50 == 49 && fsync(tfd))
            return (void *)1;
    }
    return NULL;
}

static void threads(void)
{
    tfd = open(P("t"), O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0644);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t);
    int bad = 0;
    for (int t = 0; t < NT; t++) {
        void *r;
        pthread_join(th[t], &r);
        bad += r != NULL;
    }
    show("writer failures", bad);
    close(tfd);
    /* Every record whole, each thread's in its order. */
    int fd = open(P("t"), O_RDONLY);
    static char buf[NT * NREC * 32 + 1];
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    show("size", n);
    int next[NT] = { 0 }, torn = 0;
    for (ssize_t off = 0; off + 32 <= n; off += 32) {
        int t, k;
        if (sscanf(buf + off, "T%d R%d", &t, &k) != 2 || t < 0 || t >= NT || k != next[t] ||
            buf[off + 31] != '\n')
            torn++;
        else
            next[t]++;
    }
    show("torn or out of order", torn);
}

/* More threads than a session may have queues (64): the rest share one. */
#define NMANY 80
static pthread_barrier_t many_bar;
static void *many_one(void *arg)
{
    char name[32], back[32] = { 0 }, path[4096];   /* P() is not thread-safe */
    snprintf(name, sizeof(name), "many%02d", (int)(intptr_t)arg);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    pthread_barrier_wait(&many_bar);   /* all alive at once, each with a queue */
    intptr_t ok = fd >= 0 && write(fd, name, strlen(name)) == (ssize_t)strlen(name) &&
                  pread(fd, back, sizeof(back) - 1, 0) == (ssize_t)strlen(name) &&
                  !strcmp(back, name) && close(fd) == 0;
    return (void *)ok;
}

static void many(void)
{
    pthread_t th[NMANY];
    int good = 0;
    pthread_barrier_init(&many_bar, NULL, NMANY);
    for (int t = 0; t < NMANY; t++)
        pthread_create(&th[t], NULL, many_one, (void *)(intptr_t)t);
    for (int t = 0; t < NMANY; t++) {
        void *r;
        pthread_join(th[t], &r);
        good += r != NULL;
    }
    show("threads that wrote and read back", good);
}

static void stdio(void)
{
    FILE *f = fopen(P("s"), "w");
    show("fopen", f != NULL);
    fprintf(f, "line %d\n", 1);
    fputs("line 2\n", f);
    show("fflush", fflush(f));
    show("fileno served", fileno(f) >= 0);
    show("fsync fileno", fsync(fileno(f)));
    show("fclose", fclose(f));
    f = fopen(P("s"), "a+");
    fputs("line 3\n", f);
    show("fseek", fseek(f, 0, SEEK_SET));
    char line[64];
    while (fgets(line, sizeof(line), f))
        printf("got %s", line);
    show("ftell", ftell(f));
    fclose(f);
    show("fopen missing", fopen(P("nope"), "r") != NULL);
    int fd = open(P("s"), O_RDONLY);
    f = fdopen(fd, "r");
    show("fdopen", f != NULL);
    show("fgetc", fgetc(f));
    fclose(f);
    show("fd closed by fclose", fcntl(fd, F_GETFD));
    f = fopen(P("s"), "wx");
    show("fopen wx exists", f != NULL);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dirs(void)
{
    show("mkdir", mkdir(P("dd"), 0750));
    for (int i = 0; i < 5; i++) {
        char n[32];
        snprintf(n, sizeof(n), "dd/file%d", i);
        close(open(P(n), O_CREAT | O_WRONLY, 0644));
    }
    show("mkdir sub", mkdir(P("dd/sub"), 0700));
    DIR *d = opendir(P("dd"));
    show("opendir", d != NULL);
    char *names[16];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 16)
        names[n++] = strdup(e->d_name);
    show("dirfd", dirfd(d) >= 0);
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp);
    for (int i = 0; i < n; i++) {
        printf("entry %s\n", names[i]);
        free(names[i]);
    }
    show("opendir missing", opendir(P("nope")) != NULL);
    show("rename", rename(P("dd/file0"), P("dd/sub/moved")));
    show("renameat", renameat(AT_FDCWD, P("dd/file1"), AT_FDCWD, P("dd/file2")));
    show("access moved", access(P("dd/sub/moved"), F_OK));
    show("access gone", access(P("dd/file1"), F_OK));
    show("access R", access(P("dd/file2"), R_OK));
    int dfd = open(P("dd"), O_RDONLY);   /* no O_DIRECTORY: served */
    char c;
    show("fsync dir", fsync(dfd));
    show("read dir", read(dfd, &c, 1));
    show("fstat dir", fstat(dfd, &(struct stat){ 0 }));
    show("fchdir", fchdir(dfd));
    show("rel after fchdir", close(open("file3", O_RDONLY)));
    show("chdir /", chdir("/"));
    close(dfd);
    dfd = open(P("dd"), O_RDONLY | O_DIRECTORY);
    show("openat rel", close(openat(dfd, "sub/moved", O_RDONLY)));
    show("unlinkat", unlinkat(dfd, "file2", 0));
    show("unlinkat dir", unlinkat(dfd, "sub", AT_REMOVEDIR));
    close(dfd);
    show("chdir", chdir(P("dd")));
    show("rel open", close(open("file3", O_RDONLY)));
    show("rel missing", open("file1", O_RDONLY));
    show("chdir back", chdir("/"));
}

static void stats(void)
{
    int fd = open(P("st"), O_CREAT | O_WRONLY | O_TRUNC, 0604);
    write(fd, "12345", 5);
    struct stat a, b, c;
    show("stat", stat(P("st"), &a));
    show("fstat", fstat(fd, &b));
    show("fstatat", fstatat(AT_FDCWD, P("st"), &c, 0));
    printf("same ino %d %d dev %d %d\n", a.st_ino == b.st_ino, a.st_ino == c.st_ino,
           a.st_dev == b.st_dev, a.st_dev == c.st_dev);
    printf("size %lld mode %o uid %u\n", (long long)a.st_size, a.st_mode, a.st_uid);
    struct statx x;
    show("statx", statx(AT_FDCWD, P("st"), 0, STATX_BASIC_STATS, &x));
    printf("statx size %llu mode %o\n", (unsigned long long)x.stx_size, x.stx_mode);
    show("statx empty", statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &x));
    printf("statx size %llu\n", (unsigned long long)x.stx_size);
    show("symlink", symlink("st", P("ln")));
    show("lstat link", lstat(P("ln"), &c) == 0 && S_ISLNK(c.st_mode));
    show("stat link", stat(P("ln"), &c) == 0 && S_ISREG(c.st_mode));
    show("stat missing", stat(P("zz"), &c));
    close(fd);
    umask(077);
    fd = open(P("um"), O_CREAT | O_WRONLY, 0666);
    fstat(fd, &a);
    printf("umask mode %o\n", a.st_mode & 0777);
    close(fd);
}

static volatile int ticks;
static void tick(int s)
{
    ticks++;
}

static void signals(void)
{
    struct sigaction sa = { .sa_handler = tick };   /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &it, NULL);
    int fd = open(P("sig"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    int bad = 0;
    char buf[4096];
    memset(buf, 'q', sizeof(buf));
    for (int i = 0; i < 2000; i++)
        bad += pwrite(fd, buf, sizeof(buf), (off_t)(i % 64) * 4096) != sizeof(buf);
    for (int i = 0; i < 2000; i++)
        bad += pread(fd, buf, sizeof(buf), (off_t)(i % 64) * 4096) != sizeof(buf);
    struct itimerval off = { 0 };
    setitimer(ITIMER_REAL, &off, NULL);
    show("failed calls", bad);
    close(fd);
}

/* Writes each followed by fsync (which cisc exec learns to send as one
 * op), broken by writes without one; and an O_DSYNC file. */
static void syncs(void)
{
    int fd = open(P("sy"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    char rec[100];
    int bad = 0;
    for (int i = 0; i < 40; i++) {
        memset(rec, 'a' + i % 26, sizeof(rec));
        bad += pwrite(fd, rec, sizeof(rec), (off_t)i * 100) != 100;
        if (i % 10 != 9)
            bad += fsync(fd) != 0;
        if (i % 7 == 6)
            bad += fdatasync(fd) != 0;
    }
    show("failures", bad);
    show("size", lseek(fd, 0, SEEK_END));
    show("read back", pread(fd, rec, 100, 3900) == 100 && rec[0] == 'a' + 39 % 26);
    show("write rdonly-like error", write(fd, bad ? "" : "x", 0));
    close(fd);
    fd = open(P("ds"), O_CREAT | O_WRONLY | O_TRUNC | O_DSYNC, 0644);
    for (int i = 0; i < 10; i++)
        bad += write(fd, "0123456789", 10) != 10;
    show("dsync failures", bad);
    show("dsync getfl", fcntl(fd, F_GETFL) & O_DSYNC);
    close(fd);
    show_file("ds");
}

static void spin(void)
{
    int fd = open(P("spin"), O_CREAT | O_WRONLY | O_APPEND, 0644);
    char buf[512];
    memset(buf, 's', sizeof(buf));
    printf("spinning\n");
    fflush(stdout);
    for (;;)
        if (write(fd, buf, sizeof(buf)) < 0 || fsync(fd) < 0)
            return;
}

int main(int argc, char **argv)
{
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "--child-read"))
        return child_read(atoi(argv[2]), atoi(argv[3]));
    if (argc != 3)
        return 2;
    dir = argv[1];
    static const struct {
        const char *name;
        void (*fn)(void);
    } sc[] = { { "basic", basic }, { "append", append }, { "dup", dups },
               { "errors", errors }, { "fork", forks }, { "exec", execs },
               { "mmap", mmaps }, { "threads", threads }, { "stdio", stdio },
               { "dir", dirs }, { "stat", stats }, { "signals", signals }, { "sync", syncs },
               { "many", many },
               { "spin", spin } };
    for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
        if (!strcmp(argv[2], sc[i].name)) {
            sc[i].fn();
            return 0;
        }
    }
    return 2;
}
