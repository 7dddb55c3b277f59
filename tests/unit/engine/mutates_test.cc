// tests/unit/engine/mutates_test.cc - the read-only rule (engine.h,
// invariant 6): every opcode is classified, fused vectors by their steps,
// and a read-only engine refuses what changes something before it runs.
#include <gtest/gtest.h>

#include "device/engine/engine.h"
#include "device/engine/fused/fused.h"
#include "proto/wire.h"
#include "tests/unit/engine/eng_image.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <set>
#include <string>

namespace {

// The opcodes that change something whatever their operands. Every other
// opcode (but OPEN, OPEN_PATH, ACCESS and CISC, decided by operands)
// changes nothing: a new opcode must be put on one side here.
const std::set<unsigned> kAlways = {
    ENG_OP_SETATTR, ENG_OP_MKNOD,       ENG_OP_MKDIR,      ENG_OP_SYMLINK,
    ENG_OP_LINK,    ENG_OP_UNLINK,      ENG_OP_RMDIR,      ENG_OP_RENAME,
    ENG_OP_CREATE,  ENG_OP_WRITE,       ENG_OP_SETXATTR,   ENG_OP_REMOVEXATTR,
    ENG_OP_FALLOCATE, ENG_OP_COPY_RANGE, ENG_OP_UNLINK_PATH, ENG_OP_MKDIR_PATH,
    ENG_OP_RMDIR_PATH, ENG_OP_RENAME_PATH, ENG_OP_APPEND,   ENG_OP_FTRUNCATE,
    ENG_OP_TMPFILE, ENG_OP_SETXATTR_PATH, ENG_OP_REMOVEXATTR_PATH,
};
const std::set<unsigned> kByOperands = { ENG_OP_OPEN, ENG_OP_OPEN_PATH, ENG_OP_ACCESS,
                                         ENG_OP_CISC };

TEST(Mutates, EveryOpcodeIsClassified)
{
    for (unsigned op = 0; op < ENG_OP_COUNT; op++) {
        if (kByOperands.count(op))
            continue;
        struct eng_cmd c;
        eng_cmd_init(&c, op, nullptr);
        EXPECT_EQ(eng_cmd_mutates(&c, nullptr), kAlways.count(op) == 1) << eng_op_name(op);
    }
}

TEST(Mutates, OpensAndAccessByTheirFlags)
{
    struct eng_cmd c;
    for (unsigned op : { ENG_OP_OPEN, ENG_OP_OPEN_PATH }) {
        eng_cmd_init(&c, op, nullptr);
        for (uint32_t fl : { O_RDONLY, O_RDONLY | O_DIRECTORY, O_RDONLY | O_NOFOLLOW }) {
            c.flags = fl;
            EXPECT_FALSE(eng_cmd_mutates(&c, nullptr)) << eng_op_name(op) << " " << fl;
        }
        for (uint32_t fl : { O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT,
                             O_WRONLY | O_APPEND }) {
            c.flags = fl;
            EXPECT_TRUE(eng_cmd_mutates(&c, nullptr)) << eng_op_name(op) << " " << fl;
        }
    }
    eng_cmd_init(&c, ENG_OP_ACCESS, nullptr);
    c.mode = R_OK | X_OK;
    EXPECT_FALSE(eng_cmd_mutates(&c, nullptr));
    c.mode = W_OK;
    EXPECT_TRUE(eng_cmd_mutates(&c, nullptr));
}

TEST(Mutates, FusedOpsByTheirFirstMutatingStep)
{
    struct eng_cisc v = {};
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_CISC, nullptr);
    c.cisc = &v;
    v.n = 4;
    v.st[0].kind = WIRE_STEP_OPEN;
    v.st[0].oflags = O_RDONLY;
    v.st[1].kind = WIRE_STEP_READ;
    v.st[2].kind = WIRE_STEP_CRC32C;
    v.st[3].kind = WIRE_STEP_FSYNC;
    unsigned step = 99;
    EXPECT_FALSE(eng_cmd_mutates(&c, &step));
    EXPECT_EQ(step, 99u);
    for (unsigned k : { WIRE_STEP_WRITE, WIRE_STEP_APPEND, WIRE_STEP_TRUNCATE,
                        WIRE_STEP_UNLINK }) {
        v.st[2].kind = (uint8_t)k;
        EXPECT_TRUE(eng_cmd_mutates(&c, &step)) << k;
        EXPECT_EQ(step, 2u);
    }
    v.st[2].kind = WIRE_STEP_CRC32C;
    v.st[0].oflags = O_WRONLY | O_CREAT;
    EXPECT_TRUE(eng_cmd_mutates(&c, &step));
    EXPECT_EQ(step, 0u);
}

class ReadOnlyEngine : public ::testing::Test {
protected:
    std::string path;
    struct sfs *fs = nullptr;
    struct engine *eng = nullptr;
    struct eng_cred root = {};

    void SetUp() override
    {
        MakeMountedImage("/tmp/ciscfs-ro-XXXXXX", &path, &fs);
        if (HasFatalFailure())
            return;
        struct eng_config cfg = { 2, "fifo" };
        cfg.read_only = true;
        cfg.tx = WIRE_TX_AUTOREC;
        ASSERT_EQ(eng_create(fs, &cfg, &eng), 0);
        root.ngroups = -1;
    }

    void TearDown() override
    {
        eng_destroy(eng);
        if (fs) {
            EXPECT_EQ(sfs_unmount(fs), 0);
        }
        unlink(path.c_str());
    }
};

TEST_F(ReadOnlyEngine, RefusesChangesBeforeTheyRunAndServesReads)
{
    EXPECT_TRUE(eng_read_only(eng));
    EXPECT_EQ(eng_tx_mode(eng), (unsigned)WIRE_TX_MICRO) << "nothing to log read-only";
    struct eng_cmd c;
    eng_cmd_init(&c, ENG_OP_MKDIR, &root);
    c.ino = SFS_ROOT_INO;
    c.name = "d";
    c.mode = 0755;
    EXPECT_EQ(eng_call(eng, &c), -EROFS);
    struct sfs_attr a;
    EXPECT_EQ(sfs_lookup(fs, SFS_ROOT_INO, "d", &a), -ENOENT) << "it never ran";
    eng_cmd_init(&c, ENG_OP_OPENDIR, &root);   // reading is served
    c.ino = SFS_ROOT_INO;
    ASSERT_EQ(eng_call(eng, &c), 0);
    uint64_t fh = c.out_fh;
    eng_cmd_init(&c, ENG_OP_RELEASEDIR, &root);
    c.fh = fh;
    EXPECT_EQ(eng_call(eng, &c), 0);
    eng_cmd_init(&c, ENG_OP_GETATTR, &root);
    c.ino = SFS_ROOT_INO;
    EXPECT_EQ(eng_call(eng, &c), 0);
    EXPECT_EQ(c.attr.ino, (uint64_t)SFS_ROOT_INO);
    eng_cmd_init(&c, ENG_OP_STATFS, &root);
    EXPECT_EQ(eng_call(eng, &c), 0);
}

}  // namespace
