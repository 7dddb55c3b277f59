// tests/e2e/libcisc/perm_test.cc - libcisc sessions act with the
// credentials the kernel gave for their connection (SO_PEERCRED and
// SO_PEERGROUPS): POSIX permissions, search permission on every directory
// of a path, and a process that changes uid keeps the old identity on the
// old session and gets the new one on a new session.
#include "tests/e2e/libcisc/cisc_fixture.h"

#include <linux/fs.h>

namespace e2e {
namespace {

class CiscPerm : public CiscTest {
protected:
    void SetUp() override
    {
        CiscTest::SetUp();
        if (HasFatalFailure())
            return;
        Put("secret", "root only");
        ASSERT_EQ(chmod(P("secret").c_str(), 0600), 0);
        ASSERT_EQ(cisc_mkdir(q, "priv", 0700), 0);
        Put("priv/f", "open to all, behind a closed door");
        ASSERT_EQ(chmod(P("priv/f").c_str(), 0666), 0);
        ASSERT_EQ(cisc_mkdir(q, "pub", 0755), 0);
        Put("pub/ok", "readable");
        ASSERT_EQ(cisc_mkdir(q, "tmp", 01777), 0);
        ASSERT_EQ(chmod(P("tmp").c_str(), 01777), 0);
        Put("tmp/roots", "x");
        Put("grp", "group data");
        ASSERT_EQ(chown(P("grp").c_str(), 0, 4242), 0);
        ASSERT_EQ(chmod(P("grp").c_str(), 0640), 0);
    }
};

// In a child process: a new session, then fn(q); returns fn's exit code.
template <typename Fn>
int InSession(const std::string &mnt, Fn fn)
{
    struct cisc_session *s;
    struct cisc_queue *q;
    if (cisc_session_open(mnt.c_str(), &s) || cisc_queue_create(s, &q))
        return 98;
    int r = fn(s, q);
    cisc_session_close(s);
    return r;
}

TEST_F(CiscPerm, OtherUserIsDenied)
{
    std::string m = mnt;
    int r = AsUser([m] {
        return InSession(m, [](struct cisc_session *s, struct cisc_queue *q) {
            uint64_t fh;
            struct stat st;
            uint32_t uid = 0;
            int bad = 0;
            auto want = [&bad](int got, int exp, int bit) {
                if (got != exp)
                    bad |= bit;
            };
            cisc_session_creds(s, &uid, nullptr, nullptr);
            want((int)uid, 12345, 1 << 0);
            want(cisc_open(q, "secret", O_RDONLY, 0, &fh), -EACCES, 1 << 1);
            want(cisc_open(q, "priv/f", O_RDONLY, 0, &fh), -EACCES, 1 << 2);   // search
            want(cisc_stat(q, "priv/f", &st), -EACCES, 1 << 3);
            want(cisc_open(q, "pub/new", O_CREAT | O_WRONLY, 0644, &fh), -EACCES, 1 << 4);
            want(cisc_mkdir(q, "pub/d", 0755), -EACCES, 1 << 5);
            want(cisc_unlink(q, "pub/ok"), -EACCES, 1 << 6);
            want(cisc_rename(q, "pub/ok", "tmp/ok", 0), -EACCES, 1 << 7);
            want(cisc_readdir(q, "priv", [](void *, const struct cisc_dirent *) { return 0; },
                              nullptr),
                 -EACCES, 1 << 8);
            want(cisc_open(q, "pub/ok", O_WRONLY, 0, &fh), -EACCES, 1 << 9);
            if (cisc_open(q, "pub/ok", O_RDONLY, 0, &fh) == 0)
                cisc_close(q, fh);
            else
                bad |= 1 << 10;
            want(cisc_unlink(q, "tmp/roots"), -EPERM, 1 << 11);   // sticky
            if (cisc_open(q, "tmp/mine", O_CREAT | O_WRONLY, 0600, &fh) == 0)
                cisc_close(q, fh);
            else
                bad |= 1 << 12;
            want(cisc_rmdir(q, "priv"), -EACCES, 1 << 13);
            return bad;
        });
    });
    EXPECT_EQ(r, 0) << "bitmask of failed checks";
    struct stat st;
    ASSERT_EQ(stat(P("tmp/mine").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 12345u);
    EXPECT_EQ(st.st_gid, 12345u);
    EXPECT_EQ(ReadFile(P("secret")), "root only");
}

TEST_F(CiscPerm, SupplementaryGroupsFromTheKernel)
{
    std::string m = mnt;
    auto reader = [m] {
        return InSession(m, [](struct cisc_session *, struct cisc_queue *q) {
            uint64_t fh;
            int r = cisc_open(q, "grp", O_RDONLY, 0, &fh);
            if (r == 0)
                cisc_close(q, fh);
            return r == 0 ? 0 : r == -EACCES ? 1 : 2;
        });
    };
    EXPECT_EQ(AsUser(reader, 12345, 12345, { 4242 }), 0);
    EXPECT_EQ(AsUser(reader, 12345, 12345, {}), 1);
}

// A session keeps the credentials of the process when it connected; a new
// session after setresuid gets the new ones.
TEST_F(CiscPerm, CredentialsAreTheConnectingProcesses)
{
    std::string m = mnt;
    pid_t pid = fork();
    if (pid == 0) {
        struct cisc_session *sa, *sb;
        struct cisc_queue *qa, *qb;
        if (cisc_session_open(m.c_str(), &sa) || cisc_queue_create(sa, &qa))
            _exit(90);
        if (setgroups(0, nullptr) || setresgid(12345, 12345, 12345) ||
            setresuid(12345, 12345, 12345))
            _exit(91);
        if (cisc_session_open(m.c_str(), &sb) || cisc_queue_create(sb, &qb))
            _exit(92);
        uint32_t ua = 1, ub = 1;
        cisc_session_creds(sa, &ua, nullptr, nullptr);
        cisc_session_creds(sb, &ub, nullptr, nullptr);
        uint64_t fh;
        int ra = cisc_open(qa, "secret", O_RDONLY, 0, &fh);   // still root
        int rb = cisc_open(qb, "secret", O_RDONLY, 0, &fh);   // the new uid
        int bad = (ua != 0) | (ub != 12345) << 1 | (ra != 0) << 2 | (rb != -EACCES) << 3;
        cisc_session_close(sb);
        cisc_session_close(sa);
        _exit(bad);
    }
    int st;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "bitmask of failed checks";
}

}  // namespace
}  // namespace e2e
