// tests/e2e/libcisc/setid_test.cc - a change to a file's data by a caller
// without CAP_FSETID (not root) clears its set-id bits, as Linux does,
// whichever door it came through: libcisc RISC ops, fused ops and the
// mount. Set-user-id always goes; set-group-id only with group execute
// (without it, it marks mandatory locking). Root's changes keep both.
// File capabilities go with the set-id bits.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <sys/xattr.h>

#include <cisc/fused.h>

#include <functional>

namespace e2e {
namespace {

constexpr uid_t kOwner = 23456;   // owns the files
constexpr uid_t kWriter = 12345;  // writes them, through its group
constexpr gid_t kGroup = 12345;

// One way to change a file's data; runs as whoever calls it, with a
// session of that caller. Returns 0 or a nonzero code naming the failure.
struct Door {
    const char *name;
    std::function<int(const std::string &mnt, struct cisc_queue *q, const char *path)> change;
};

void PrintTo(const Door &d, std::ostream *os)
{
    *os << d.name;
}

int RiscWrite(const std::string &, struct cisc_queue *q, const char *path)
{
    uint64_t fh;
    if (cisc_open(q, path, O_WRONLY, 0, &fh))
        return 10;
    int r = cisc_pwrite(q, fh, "new", 3, 1) == 3 ? 0 : 11;
    return cisc_close(q, fh) ? 12 : r;
}

int RiscAppend(const std::string &, struct cisc_queue *q, const char *path)
{
    uint64_t fh;
    if (cisc_open(q, path, O_WRONLY, 0, &fh))
        return 20;
    int r = cisc_append(q, fh, "tail", 4, nullptr) == 4 ? 0 : 21;
    return cisc_close(q, fh) ? 22 : r;
}

int RiscTruncate(const std::string &, struct cisc_queue *q, const char *path)
{
    uint64_t fh;
    if (cisc_open(q, path, O_WRONLY, 0, &fh))
        return 30;
    int r = cisc_truncate(q, fh, 2) == 0 ? 0 : 31;
    return cisc_close(q, fh) ? 32 : r;
}

int RiscOpenTrunc(const std::string &, struct cisc_queue *q, const char *path)
{
    uint64_t fh;
    if (cisc_open(q, path, O_WRONLY | O_TRUNC, 0, &fh))
        return 40;
    return cisc_close(q, fh) ? 41 : 0;
}

// One fused op: open, then `step` on the opened file.
int Fused(struct cisc_queue *q, const char *path,
          const std::function<int(struct cisc_vec *, int)> &step)
{
    struct cisc_vec v;
    if (cisc_vec_init(&v, q))
        return 50;
    int f = cisc_vec_open(&v, path, O_WRONLY, 0);
    int s = step(&v, f);
    cisc_vec_close(&v, f);
    int64_t r = s >= 0 ? cisc_vec_submit(&v) : -1;
    int64_t sr = s >= 0 ? cisc_vec_ret(&v, s) : -1;
    cisc_vec_free(&v);
    return r == 0 && sr >= 0 ? 0 : 51;
}

int FusedAppend(const std::string &, struct cisc_queue *q, const char *path)
{
    return Fused(q, path, [](struct cisc_vec *v, int f) {
        return cisc_vec_append(v, f, CISC_IN_BUF("fused", 5));
    });
}

// One overwrite inside one block: the fused path's in-place case.
int FusedWrite(const std::string &, struct cisc_queue *q, const char *path)
{
    return Fused(q, path, [](struct cisc_vec *v, int f) {
        return cisc_vec_write(v, f, 1, CISC_IN_BUF("xy", 2));
    });
}

int FusedTruncate(const std::string &, struct cisc_queue *q, const char *path)
{
    return Fused(q, path, [](struct cisc_vec *v, int f) { return cisc_vec_truncate(v, f, 1); });
}

int MountWrite(const std::string &mnt, struct cisc_queue *, const char *path)
{
    int fd = open((mnt + "/" + path).c_str(), O_WRONLY);
    if (fd < 0)
        return 60;
    int r = pwrite(fd, "mnt", 3, 0) == 3 ? 0 : 61;
    return close(fd) ? 62 : r;
}

int MountTruncate(const std::string &mnt, struct cisc_queue *, const char *path)
{
    return truncate((mnt + "/" + path).c_str(), 1) ? 70 : 0;
}

int MountPunchHole(const std::string &mnt, struct cisc_queue *, const char *path)
{
    int fd = open((mnt + "/" + path).c_str(), O_WRONLY);
    if (fd < 0)
        return 80;
    int r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 2) ? 81 : 0;
    return close(fd) ? 82 : r;
}

const Door kDoors[] = {
    { "RiscWrite", RiscWrite },         { "RiscAppend", RiscAppend },
    { "RiscTruncate", RiscTruncate },   { "RiscOpenTrunc", RiscOpenTrunc },
    { "FusedAppend", FusedAppend },     { "FusedWrite", FusedWrite },
    { "FusedTruncate", FusedTruncate }, { "MountWrite", MountWrite },
    { "MountTruncate", MountTruncate }, { "MountPunchHole", MountPunchHole },
};

class Setid : public CiscTest, public ::testing::WithParamInterface<Door> {
protected:
    // A file of kOwner:kGroup with the given mode, made by root.
    void Make(const std::string &name, mode_t mode)
    {
        Put(name, "0123456789");
        ASSERT_EQ(chown(P(name).c_str(), kOwner, kGroup), 0);
        ASSERT_EQ(chmod(P(name).c_str(), mode), 0);
        ASSERT_EQ(ModeOf(name), mode);
    }

    // Permission bits as the device has them (libcisc: no kernel cache).
    mode_t ModeOf(const std::string &name)
    {
        struct stat st;
        return cisc_stat(q, name.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
    }

    // Runs the door's change as the writer, with a session of its own.
    int ChangeAsWriter(const std::string &name)
    {
        std::string m = mnt;
        const Door &d = GetParam();
        return AsUser(
            [&] {
                struct cisc_session *ws;
                struct cisc_queue *wq;
                if (cisc_session_open(m.c_str(), &ws) || cisc_queue_create(ws, &wq))
                    return 98;
                int rc = d.change(m, wq, name.c_str());
                cisc_session_close(ws);
                return rc;
            },
            kWriter, kGroup);
    }
};

TEST_P(Setid, NonRootChangeClearsSetidBits)
{
    Make("both", 06775);     // group may execute: both bits go
    Make("lockmark", 06765); // no group execute: set-group-id stays
    EXPECT_EQ(ChangeAsWriter("both"), 0);
    EXPECT_EQ(ChangeAsWriter("lockmark"), 0);
    EXPECT_EQ(ModeOf("both"), 0775u);
    EXPECT_EQ(ModeOf("lockmark"), 02765u);
    EXPECT_NE(Get("both"), "0123456789") << "the change itself happened";
    struct stat st;   // the mount's view (its caches were told)
    ASSERT_EQ(stat(P("both").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0775u);
}

TEST_P(Setid, RootChangeKeepsSetidBits)
{
    Make("f", 06775);
    const Door &d = GetParam();
    EXPECT_EQ(d.change(mnt, q, "f"), 0);
    EXPECT_EQ(ModeOf("f"), 06775u);
    EXPECT_NE(Get("f"), "0123456789");
}

// File capabilities (security.capability, set with setcap) go with the
// set-id bits: a writer that is not root cannot keep a capable binary's
// privileges, whichever door its change came through.
TEST_P(Setid, NonRootChangeDropsCapabilities)
{
    Make("capable", 0775);
    RunResult sc = Sh("setcap cap_net_raw+ep " + P("capable"));
    ASSERT_EQ(sc.status, 0) << sc.out;
    ASSERT_GT(getxattr(P("capable").c_str(), "security.capability", nullptr, 0), 0);
    EXPECT_EQ(ChangeAsWriter("capable"), 0);
    EXPECT_EQ(getxattr(P("capable").c_str(), "security.capability", nullptr, 0), -1);
    EXPECT_EQ(errno, ENODATA);
    EXPECT_EQ(Sh("getcap " + P("capable")).out, "");
    EXPECT_NE(Get("capable"), "0123456789") << "the change itself happened";
}

INSTANTIATE_TEST_SUITE_P(Doors, Setid, ::testing::ValuesIn(kDoors),
                         [](const ::testing::TestParamInfo<Door> &i) { return i.param.name; });

// chown clears set-id bits whoever calls it, even to the same owner
// (Linux's chown_common), and a cleared file survives a restart.
TEST_F(CiscTest, ChownClearsSetidBitsAndTheClearIsDurable)
{
    Put("f", "x");
    ASSERT_EQ(chmod(P("f").c_str(), 06775), 0);
    ASSERT_EQ(chown(P("f").c_str(), 0, -1), 0);   // root, same owner
    struct stat st;
    ASSERT_EQ(cisc_stat(q, "f", &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0775u);
    Put("g", "x");
    ASSERT_EQ(chown(P("g").c_str(), kOwner, kGroup), 0);
    ASSERT_EQ(chmod(P("g").c_str(), 04777), 0);
    int r = AsUser(
        [m = mnt] {
            struct cisc_session *ws;
            struct cisc_queue *wq;
            if (cisc_session_open(m.c_str(), &ws) || cisc_queue_create(ws, &wq))
                return 98;
            int rc = RiscWrite(m, wq, "g");
            cisc_session_close(ws);
            return rc;
        },
        kWriter, kGroup);
    ASSERT_EQ(r, 0);
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    Down();
    Up();
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    ASSERT_EQ(cisc_stat(q, "g", &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0777u);
}

}  // namespace
}  // namespace e2e
