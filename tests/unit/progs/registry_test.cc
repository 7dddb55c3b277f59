// The program registry: load (verify, store), list, show, unload,
// ownership, limits, persistence across remounts, damaged and no longer
// verifying records, and the hidden system directory.
#include "tests/unit/progs/progs_fixture.h"

extern "C" {
#include "bpf/jit_x86_64.h"
}

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

using Registry = ProgsFixture;

TEST_F(Registry, LoadListShowUnload)
{
    struct progs_info a, b;
    ASSERT_EQ(Load(CorpusObj("count"), nullptr, 1000, false, nullptr, &a), 0);
    EXPECT_STREQ(a.name, "count");   // default name: the function's
    EXPECT_STREQ(a.func, "count");
    EXPECT_EQ(a.owner, 1000u);
    EXPECT_GT(a.insns, 10u);
    EXPECT_EQ(a.flags, 0u);
    std::string obj = CorpusObj("wc");
    ASSERT_EQ(Load(obj, "words", 1001, true, nullptr, &b), 0);
    EXPECT_EQ(b.id, a.id + 1);
    EXPECT_EQ(b.flags, (uint32_t)PROGS_F_SHARED);
    uint8_t sha[32];
    progs_sha256(obj.data(), obj.size(), sha);
    EXPECT_EQ(memcmp(sha, b.sha256, 32), 0);
    EXPECT_EQ(b.obj_size, obj.size());

    auto l = List();
    ASSERT_EQ(l.size(), 2u);
    EXPECT_STREQ(l[0].name, "count");
    EXPECT_STREQ(l[1].name, "words");

    struct progs_info s;
    ASSERT_TRUE(Show("words", &s));
    EXPECT_EQ(s.id, b.id);
    char text[256];
    ASSERT_EQ(progs_show(reg, 0, a.id, nullptr, &s, text, sizeof(text)), 0);   // by id
    EXPECT_STREQ(s.name, "count");
    // verified, never traced: only how it runs (JIT by default where there is one)
    if (vm_jit_available()) {
        EXPECT_EQ(std::string(text).rfind("runs as: JIT-compiled x86-64 code, ", 0), 0u) << text;
    } else {
        EXPECT_STREQ(text, "runs as: interpreter\n");
    }
    EXPECT_EQ(progs_show(reg, 0, 0, "nope", &s, nullptr, 0), -ENOENT);

    EXPECT_EQ(progs_unload(reg, 1000, 0, "words"), -EPERM);   // not the owner
    EXPECT_EQ(progs_unload(reg, 1001, 0, "words"), 0);
    EXPECT_EQ(progs_unload(reg, 1001, 0, "words"), -ENOENT);
    EXPECT_EQ(progs_unload(reg, 0, a.id, nullptr), 0);          // root unloads anything
    EXPECT_TRUE(List().empty());
}

TEST_F(Registry, RejectedProgramSaysWhereAndWhy)
{
    std::string msg;
    EXPECT_EQ(Load(CorpusObj("oob_by_one"), nullptr, 0, false, nullptr, nullptr, &msg), -EACCES);
    EXPECT_NE(msg.find("rejected"), std::string::npos) << msg;
    EXPECT_NE(msg.find("oob_by_one.c:10"), std::string::npos) << msg;   // source line
    EXPECT_NE(msg.find("at pc"), std::string::npos) << msg;             // instruction
    EXPECT_NE(msg.find("return data[4]"), std::string::npos) << msg;    // source text
    EXPECT_TRUE(List().empty());   // nothing stored
    EXPECT_EQ(Load("not an object", "x", 0, false, nullptr, nullptr, &msg), -ENOEXEC);
    EXPECT_FALSE(msg.empty());
}

TEST_F(Registry, NamesAndFunctions)
{
    std::string two = DevObj("two"), msg;
    EXPECT_EQ(Load(two, nullptr, 0, false, nullptr, nullptr, &msg), -EINVAL);
    EXPECT_NE(msg.find("first, second"), std::string::npos) << msg;
    EXPECT_EQ(Load(two, nullptr, 0, false, "third", nullptr, &msg), -ENOENT);
    struct progs_info i;
    ASSERT_EQ(Load(two, nullptr, 0, false, "second", &i), 0);
    EXPECT_STREQ(i.name, "second");
    EXPECT_EQ(Load(two, "second", 0, false, "first", nullptr, &msg), -EEXIST);
    EXPECT_NE(msg.find("exists"), std::string::npos);
    for (const char *bad : { "12", "a b", "x/y", "", "0123456789012345678901234567890123456789"
                                                      "012345678901234567890123" })
        if (*bad) {
            EXPECT_EQ(Load(two, bad, 0, false, "first"), -EINVAL) << bad;
        }
    EXPECT_EQ(Load(two, "ok-name_1.x", 0, false, "first"), 0);
}

TEST_F(Registry, LimitsOnCountAndInstructions)
{
    progs_close(reg);
    lim.max_progs = 2;
    lim.max_insns = 300;
    Open();
    std::string msg;
    struct progs_info a;
    ASSERT_EQ(Load(CorpusObj("count"), "c1", 0, false, nullptr, &a), 0);   // ~98 insns
    ASSERT_LT(a.insns * 3, 300u + a.insns);
    EXPECT_EQ(Load(CorpusObj("grep"), "g", 0, false, nullptr, nullptr, &msg), -EDQUOT);
    EXPECT_NE(msg.find("--max-prog-insns"), std::string::npos) << msg;
    ASSERT_EQ(Load(CorpusObj("count"), "c2", 0), 0);
    EXPECT_EQ(Load(CorpusObj("count"), "c3", 0, false, nullptr, nullptr, &msg), -EDQUOT);
    EXPECT_NE(msg.find("--max-progs"), std::string::npos) << msg;
    uint32_t n, broken;
    uint64_t insns;
    progs_totals(reg, &n, &broken, &insns);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(insns, 2ull * a.insns);
    EXPECT_EQ(progs_unload(reg, 0, 0, "c1"), 0);
    EXPECT_EQ(Load(CorpusObj("count"), "c3", 0), 0);   // room again
}

TEST_F(Registry, OwnershipDecidesWhoRuns)
{
    struct progs_info priv, pub;
    ASSERT_EQ(Load(CorpusObj("count"), "priv", 1000, false, nullptr, &priv), 0);
    ASSERT_EQ(Load(CorpusObj("count"), "pub", 1000, true, nullptr, &pub), 0);
    struct progs_prog *pp;
    EXPECT_EQ(progs_get(reg, 2000, priv.id, &pp), -EACCES);
    ASSERT_EQ(progs_get(reg, 1000, priv.id, &pp), 0);
    progs_put(pp);
    ASSERT_EQ(progs_get(reg, 0, priv.id, &pp), 0);   // root
    progs_put(pp);
    ASSERT_EQ(progs_get(reg, 2000, pub.id, &pp), 0);
    // unloading while a step holds it: the step's reference keeps it alive
    EXPECT_EQ(progs_unload(reg, 2000, pub.id, nullptr), -EPERM);
    EXPECT_EQ(progs_unload(reg, 1000, pub.id, nullptr), 0);
    EXPECT_EQ(progs_get(reg, 2000, pub.id, &pp) , -ENOENT);
    EXPECT_STREQ(pp->info.name, "pub");
    progs_put(pp);
    EXPECT_EQ(progs_get(reg, 0, 999, &pp), -ENOENT);
}

TEST_F(Registry, SurvivesRemountWithIdsNeverReused)
{
    struct progs_info a, b, c;
    ASSERT_EQ(Load(CorpusObj("count"), "a", 1000, true, nullptr, &a), 0);
    ASSERT_EQ(Load(CorpusObj("wc"), "b", 1001, false, nullptr, &b), 0);
    ASSERT_EQ(progs_unload(reg, 1001, b.id, nullptr), 0);
    Reopen();
    auto l = List();
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].id, a.id);
    EXPECT_STREQ(l[0].name, "a");
    EXPECT_EQ(l[0].owner, 1000u);
    EXPECT_EQ(l[0].flags, (uint32_t)PROGS_F_SHARED);
    EXPECT_EQ(l[0].insns, a.insns);
    EXPECT_EQ(l[0].load_time_ns, a.load_time_ns);
    EXPECT_EQ(memcmp(l[0].sha256, a.sha256, 32), 0);
    ASSERT_EQ(Load(CorpusObj("wc"), "b", 1001, false, nullptr, &c), 0);
    EXPECT_GT(c.id, b.id);   // b's id is not given out again
    struct progs_prog *pp;
    ASSERT_EQ(progs_get(reg, 5, a.id, &pp), 0);   // verified again, runnable
    progs_put(pp);
}

// A record whose program no longer verifies (as after a verifier upgrade)
// is listed as broken with the verifier's reason and never runs.
TEST_F(Registry, NoLongerVerifyingIsReportedNotRun)
{
    std::string bad = CorpusObj("oob_by_one");
    struct progs_rec rec = {};
    rec.id = 7;
    rec.owner = 1000;
    rec.obj_size = (uint32_t)bad.size();
    progs_sha256(bad.data(), bad.size(), rec.sha256);
    strcpy(rec.name, "old");
    strcpy(rec.func, "oob_by_one");
    ASSERT_EQ(progs_store_save(reg, &rec, bad.data()), 0);
    Reopen();
    struct progs_info i;
    std::string text;
    ASSERT_TRUE(Show("old", &i, &text));
    EXPECT_EQ(i.flags & PROGS_F_BROKEN, (uint32_t)PROGS_F_BROKEN);
    EXPECT_NE(text.find("not run"), std::string::npos) << text;
    EXPECT_NE(text.find("oob_by_one.c:10"), std::string::npos) << text;
    bool logged = false;
    for (auto &l : log)
        logged |= l.find("'old' (id 7) is not run") != std::string::npos;
    EXPECT_TRUE(logged);
    struct progs_prog *pp;
    EXPECT_EQ(progs_get(reg, 1000, 7, &pp), -ENOEXEC);
    uint32_t n, broken;
    uint64_t insns;
    progs_totals(reg, &n, &broken, &insns);
    EXPECT_EQ(broken, 1u);
    EXPECT_EQ(progs_unload(reg, 1000, 0, "old"), 0);   // its owner removes it
    Reopen();
    EXPECT_TRUE(List().empty());
}

TEST_F(Registry, DamagedRecordIsReportedNotRun)
{
    struct progs_info a;
    ASSERT_EQ(Load(CorpusObj("count"), "a", 0, false, nullptr, &a), 0);
    ASSERT_EQ(Load(CorpusObj("wc"), "b", 0), 0);
    struct sfs_attr at;
    ASSERT_EQ(sfs_lookup(fs, reg->dir, std::to_string(a.id).c_str(), &at), 0);
    uint8_t junk[4] = { 1, 2, 3, 4 };
    ASSERT_EQ(sfs_write(fs, nullptr, at.ino, 300, junk, sizeof(junk)), 4);   // in the object
    Reopen();
    struct progs_info i;
    std::string text;
    ASSERT_TRUE(Show("a", &i, &text));
    EXPECT_TRUE(i.flags & PROGS_F_BROKEN);
    EXPECT_NE(text.find("object checksum mismatch"), std::string::npos) << text;
    ASSERT_TRUE(Show("b", &i));
    EXPECT_FALSE(i.flags & PROGS_F_BROKEN);
    // a damaged header: the record keeps its id under a placeholder name
    ASSERT_EQ(sfs_write(fs, nullptr, at.ino, 8, junk, sizeof(junk)), 4);
    Reopen();
    ASSERT_TRUE(Show(("damaged-" + std::to_string(a.id)).c_str(), &i, &text));
    EXPECT_NE(text.find("header checksum"), std::string::npos) << text;
}

TEST_F(Registry, RecordCodecRoundTripsAndRefusesDamage)
{
    struct progs_rec r = {}, d;
    r.id = 42;
    r.owner = 7;
    r.flags = PROGS_F_SHARED;
    r.obj_size = 1234;
    r.load_time_ns = 0x0102030405060708ull;
    memset(r.sha256, 0xab, 32);
    strcpy(r.name, "n");
    strcpy(r.func, "f");
    uint8_t b[PROGS_REC_HDR];
    progs_rec_encode(&r, b);
    ASSERT_EQ(progs_rec_decode(b, &d), 0);
    EXPECT_EQ(d.id, 42u);
    EXPECT_EQ(d.load_time_ns, r.load_time_ns);
    EXPECT_STREQ(d.func, "f");
    for (size_t i = 0; i < PROGS_REC_HDR; i += 17) {
        uint8_t c[PROGS_REC_HDR];
        memcpy(c, b, sizeof(c));
        c[i] ^= 0x40;
        EXPECT_EQ(progs_rec_decode(c, &d), -EUCLEAN) << "byte " << i;
    }
}

TEST_F(Registry, InterruptedLoadLeavesNothing)
{
    struct sfs_attr a;
    ASSERT_EQ(sfs_mknod(fs, nullptr, reg->dir, "9.tmp", S_IFREG | 0600, 0, 0, 0, &a), 0);
    Reopen();
    EXPECT_EQ(sfs_lookup(fs, reg->dir, "9.tmp", &a), -ENOENT);
    EXPECT_TRUE(List().empty());
}

TEST(Sysdir, OnlyTheRootEntryIsHidden)
{
    EXPECT_EQ(sysdir_check(SFS_ROOT_INO, SYSDIR_NAME, -ENOENT), -ENOENT);
    EXPECT_EQ(sysdir_check(SFS_ROOT_INO, SYSDIR_NAME, -EPERM), -EPERM);
    EXPECT_EQ(sysdir_check(SFS_ROOT_INO, ".cisc-systemx", -EPERM), 0);
    EXPECT_EQ(sysdir_check(SFS_ROOT_INO, ".cisc", -EPERM), 0);
    EXPECT_EQ(sysdir_check(5, SYSDIR_NAME, -EPERM), 0);
    EXPECT_TRUE(sysdir_hidden(SFS_ROOT_INO, ".cisc-system!", 12));
}

// --bpf-exec interp (progs_limits.interp): programs are not JIT-compiled, and
// show says so; they run and give the same result (run_test covers results).
TEST_F(Registry, InterpOptionKeepsProgramsInTheInterpreter)
{
    progs_close(reg);
    reg = nullptr;
    lim.interp = true;
    Open();
    ASSERT_EQ(Load(CorpusObj("count"), nullptr, 1000), 0);
    struct progs_info s;
    std::string text;
    ASSERT_TRUE(Show("count", &s, &text));
    EXPECT_EQ(text, "runs as: interpreter\n");
}
