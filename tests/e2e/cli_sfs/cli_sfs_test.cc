// End to end: the real `cisc` binary's mkfs, fsck and info on image
// files, including bad input (missing, empty, zeroed, random, truncated,
// corrupted, in use) and the promise that fsck and info never write.
#include <gtest/gtest.h>

#include <algorithm>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
#include "device/media/media.h"
#include "device/media/media_fault.h"
#include "device/storagefs/format.h"
#include "device/storagefs/storagefs.h"
}

namespace {

struct Outcome {
    int status;
    std::string out, err;
};

std::string Slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

class Cli : public ::testing::Test {
  protected:
    std::string dir, cisc;

    void SetUp() override
    {
        char tmpl[] = "/tmp/cisc-cli-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        const char *bin = getenv("CISC_BINARY_DIR");
        cisc = std::string(bin ? bin : CISC_BINARY_DIR) + "/cmd/cisc";
    }
    void TearDown() override { system(("rm -rf " + dir).c_str()); }

    std::string P(const std::string &name) { return dir + "/" + name; }

    Outcome Cisc(const std::string &args)
    {
        std::string o = P("stdout"), e = P("stderr");
        int st = system((cisc + " " + args + " >" + o + " 2>" + e).c_str());
        return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, Slurp(o), Slurp(e)};
    }

    // Fatal on failure: every caller's test is about the file it writes.
    void WriteFile(const std::string &path, const std::string &data)
    {
        std::ofstream f(path, std::ios::binary);
        f << data;
        f.close();
        ASSERT_FALSE(f.fail()) << "cannot write " << path;
    }

    // One line on stderr starting "cisc CMD: ".
    void ExpectOneLineError(const Outcome &r, const std::string &cmd, const std::string &what)
    {
        EXPECT_EQ(r.err.find("cisc " + cmd + ": "), 0u) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    }

    // An image that needs journal replay: made on a RAM disk with the
    // library, "crashed", and copied to a file.
    void MakeUnreplayedImage(const std::string &path)
    {
        struct media *disk, *h, *snap;
        ASSERT_EQ(media_fault_create(4096, &disk), 0);
        ASSERT_EQ(sfs_mkfs(disk, nullptr), 0);
        ASSERT_EQ(media_fault_open_again(disk, &h), 0);
        struct sfs *fs;
        struct sfs_mount_opts mo = {};
        mo.commit_interval_ms = 3600 * 1000;
        ASSERT_EQ(sfs_mount(h, &mo, &fs), 0);
        struct sfs_attr a;
        ASSERT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "journaled", S_IFREG | 0644, 0, 0, 0, &a),
                  0);
        ASSERT_EQ(sfs_sync(fs), 0);
        ASSERT_EQ(media_fault_snapshot(disk, MEDIA_FAULT_KEEP_NONE, 0, &snap), 0);
        media_fault_cut_after(disk, media_fault_writes(disk), UINT64_MAX);
        sfs_unmount(fs);
        media_close(disk);
        std::string img(4096ull * 4096, '\0');
        ASSERT_EQ(media_read(snap, 0, 4096, &img[0]), 0);
        media_close(snap);
        ASSERT_NO_FATAL_FAILURE(WriteFile(path, img));
    }
};

TEST_F(Cli, HelpIsAccurate)
{
    Outcome r = Cisc("--help");
    EXPECT_EQ(r.status, 0);
    for (const char *c : {"mkfs", "fsck", "info"})
        EXPECT_NE(r.out.find(c), std::string::npos) << c;
    for (const char *c : {"mkfs", "fsck", "info"}) {
        Outcome h = Cisc(std::string(c) + " --help");
        EXPECT_EQ(h.status, 0);
        EXPECT_EQ(h.out.find(std::string("usage: cisc ") + c), 0u) << h.out;
        EXPECT_EQ(Cisc(std::string("help ") + c).out, h.out);
    }
    EXPECT_NE(Cisc("mkfs --help").out.find("--force"), std::string::npos);
}

TEST_F(Cli, MkfsDefaultsToASparseGibAndChecksClean)
{
    Outcome r = Cisc("mkfs " + P("a.img"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("StorageFS version 1"), std::string::npos) << r.out;
    struct stat st;
    ASSERT_EQ(stat(P("a.img").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1ll << 30);
    EXPECT_LT(st.st_blocks * 512, 16ll << 20);     // sparse
    r = Cisc("fsck " + P("a.img"));
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(": clean, 1 files, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/262144 blocks"), std::string::npos) << r.out;
    r = Cisc("info " + P("a.img"));
    EXPECT_EQ(r.status, 0);
    for (const char *s : {"StorageFS version 1", "uuid:", " clean\n",
                          "262144 blocks", "journal:", "empty", "inodes:"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST_F(Cli, MkfsSizesAndInodes)
{
    Outcome r = Cisc("mkfs --size 64M --inodes 1000 " + P("s.img"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = Cisc("info " + P("s.img"));
    EXPECT_NE(r.out.find("16384 blocks"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("of 1007 used"), std::string::npos) << r.out;
    ExpectOneLineError(Cisc("mkfs --size 12Q " + P("x.img")), "mkfs", "invalid size");
    Outcome tiny = Cisc("mkfs --size 64K " + P("t.img"));
    EXPECT_EQ(tiny.status, 2);
    ExpectOneLineError(tiny, "mkfs", "too small");
    EXPECT_NE(access(P("t.img").c_str(), F_OK), 0) << "a failed mkfs left a file behind";
    ExpectOneLineError(Cisc("mkfs --bogus " + P("x.img")), "mkfs", "unknown option");
    ExpectOneLineError(Cisc("mkfs"), "mkfs", "no image");
}

TEST_F(Cli, MkfsRefusesToOverwrite)
{
    ASSERT_NO_FATAL_FAILURE(WriteFile(P("data"), "precious"));
    Outcome r = Cisc("mkfs --size 16M " + P("data"));
    EXPECT_EQ(r.status, 2);
    ExpectOneLineError(r, "mkfs", "not empty");
    EXPECT_EQ(Slurp(P("data")), "precious");
    ASSERT_EQ(Cisc("mkfs --size 16M " + P("img")).status, 0);
    std::string before = Slurp(P("img"));
    r = Cisc("mkfs --size 16M " + P("img"));
    EXPECT_EQ(r.status, 2);
    ExpectOneLineError(r, "mkfs", "already holds a ciscfs image");
    EXPECT_EQ(Slurp(P("img")), before);
    EXPECT_EQ(Cisc("mkfs --force --size 16M " + P("img")).status, 0);
    EXPECT_NE(Slurp(P("img")), before);              // new uuid, new journal id
    ASSERT_NO_FATAL_FAILURE(WriteFile(P("empty"), ""));
    EXPECT_EQ(Cisc("mkfs --size 16M " + P("empty")).status, 0);
    ExpectOneLineError(Cisc("mkfs " + dir), "mkfs", "not a regular file");
}

TEST_F(Cli, BadImagesGetOneLineAndAreNotWritten)
{
    ExpectOneLineError(Cisc("fsck " + P("missing.img")), "fsck", "No such file");
    ExpectOneLineError(Cisc("info " + P("missing.img")), "info", "No such file");
    ASSERT_NO_FATAL_FAILURE(WriteFile(P("zero.img"), std::string(1 << 20, '\0')));
    std::mt19937 rng(3);
    std::string rnd(1 << 20, '\0');
    for (auto &c : rnd)
        c = (char)rng();
    ASSERT_NO_FATAL_FAILURE(WriteFile(P("random.img"), rnd));
    for (const char *img : {"zero.img", "random.img"}) {
        std::string before = Slurp(P(img));
        Outcome f = Cisc(std::string("fsck ") + P(img));
        EXPECT_EQ(f.status, 1) << img;
        EXPECT_NE(f.out.find("not a ciscfs image"), std::string::npos) << f.out;
        Outcome i = Cisc(std::string("info ") + P(img));
        EXPECT_EQ(i.status, 1);
        ExpectOneLineError(i, "info", "not a ciscfs image");
        EXPECT_EQ(Slurp(P(img)), before) << img << " was modified";
    }
    ASSERT_EQ(Cisc("mkfs --size 32M " + P("trunc.img")).status, 0);
    ASSERT_EQ(truncate(P("trunc.img").c_str(), 20 << 20), 0);
    Outcome t = Cisc("info " + P("trunc.img"));
    EXPECT_EQ(t.status, 1);
    ExpectOneLineError(t, "info", "image truncated");
    Outcome tf = Cisc("fsck " + P("trunc.img"));
    EXPECT_EQ(tf.status, 1);
    EXPECT_NE(tf.out.find("truncated"), std::string::npos) << tf.out;
}

TEST_F(Cli, FsckReportsCorruptionNamingTheBlock)
{
    ASSERT_EQ(Cisc("mkfs --size 32M " + P("c.img")).status, 0);
    Outcome i = Cisc("info " + P("c.img"));
    size_t at = i.out.find("block bitmap ");
    ASSERT_NE(at, std::string::npos);
    long bb = strtol(i.out.c_str() + at + 13, nullptr, 10);
    int fd = open(P("c.img").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char byte;
    ASSERT_EQ(pread(fd, &byte, 1, bb * 4096 + 1000), 1);
    byte ^= 0x10;
    ASSERT_EQ(pwrite(fd, &byte, 1, bb * 4096 + 1000), 1);
    close(fd);
    std::string before = Slurp(P("c.img"));
    Outcome r = Cisc("fsck " + P("c.img"));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("block " + std::to_string(bb) + " (block bitmap): checksum mismatch"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("problem(s) found"), std::string::npos);
    EXPECT_EQ(Slurp(P("c.img")), before);
}

TEST_F(Cli, UnreplayedJournalIsReplayedInMemoryOnly)
{
    ASSERT_NO_FATAL_FAILURE(MakeUnreplayedImage(P("j.img")));
    std::string before = Slurp(P("j.img"));
    Outcome i = Cisc("info " + P("j.img"));
    EXPECT_EQ(i.status, 0);
    EXPECT_NE(i.out.find("awaiting replay"), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("not cleanly unmounted"), std::string::npos) << i.out;
    Outcome f = Cisc("fsck " + P("j.img"));
    EXPECT_EQ(f.status, 0) << f.out;
    EXPECT_NE(f.out.find("not yet replayed; checked as replayed"), std::string::npos) << f.out;
    EXPECT_NE(f.out.find("clean, 2 files"), std::string::npos) << f.out;
    EXPECT_EQ(Slurp(P("j.img")), before) << "fsck or info wrote to the image";
}

TEST_F(Cli, ImageInUseIsRefused)
{
    ASSERT_EQ(Cisc("mkfs --size 16M " + P("u.img")).status, 0);
    struct media *m;
    ASSERT_EQ(media_open_file(P("u.img").c_str(), 0, &m), 0);    // a "running device"
    ExpectOneLineError(Cisc("mkfs --force --size 16M " + P("u.img")), "mkfs", "in use");
    ExpectOneLineError(Cisc("fsck " + P("u.img")), "fsck", "in use");
    EXPECT_EQ(Cisc("info " + P("u.img")).status, 0);            // read-only, no lock
    media_close(m);
    EXPECT_EQ(Cisc("fsck " + P("u.img")).status, 0);
}

// The number after `label` in cisc info's output (a region's first block).
long InfoBlock(const std::string &info, const std::string &label)
{
    size_t at = info.find(label);
    return at == std::string::npos ? -1 : strtol(info.c_str() + at + label.size(), nullptr, 10);
}

// Rewrites block blk of the image file with fn applied (a test's damage).
void EditBlock(const std::string &img, long blk, const std::function<void(uint8_t *)> &fn)
{
    int fd = open(img.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t b[4096];
    ASSERT_EQ(pread(fd, b, sizeof(b), blk * 4096), (ssize_t)sizeof(b));
    fn(b);
    ASSERT_EQ(pwrite(fd, b, sizeof(b), blk * 4096), (ssize_t)sizeof(b));
    close(fd);
}

// `cisc fsck --repair` on an image damaged at the offsets cisc info gives
// (a leaked block, a wrong link count): refused while a device holds the
// image, then repaired; fsck is clean afterwards and the files are intact.
// Damage it does not fix leaves the image byte for byte as it was.
TEST_F(Cli, FsckRepairFixesDamageAndRefusesImagesInUse)
{
    std::string img = P("r.img"), content(10000, 'k');
    ASSERT_EQ(Cisc("mkfs --size 32M " + img).status, 0);
    struct media *m;
    ASSERT_EQ(media_open_file(img.c_str(), 0, &m), 0);
    struct sfs *fs;
    ASSERT_EQ(sfs_mount(m, nullptr, &fs), 0);
    struct sfs_attr a;
    ASSERT_EQ(sfs_mknod(fs, nullptr, SFS_ROOT_INO, "keep", S_IFREG | 0644, 0, 0, 0, &a), 0);
    uint64_t keep = a.ino;
    ASSERT_EQ(sfs_write(fs, nullptr, keep, 0, content.data(), content.size()),
              (ssize_t)content.size());
    ASSERT_EQ(sfs_unmount(fs), 0);

    Outcome info = Cisc("info " + img);
    long bb = InfoBlock(info.out, "block bitmap "), it = InfoBlock(info.out, "inode table ");
    ASSERT_GT(bb, 0) << info.out;
    ASSERT_GT(it, 0) << info.out;
    long spare = 32 * 256 - 10;   // near the end: never allocated on this image
    EditBlock(img, bb, [&](uint8_t *b) {
        sfs_bit_set(b, (uint32_t)spare, true);
        sfs_block_seal(b, SFS_MAGIC_BBITMAP, (uint64_t)bb);
    });
    long iblk = it + (long)(keep / 8);
    EditBlock(img, iblk, [&](uint8_t *b) {
        struct sfs_dinode d;
        ASSERT_EQ(sfs_inode_decode(b + (keep % 8) * 512, keep, (uint64_t)iblk, &d), 0);
        d.nlink = 3;
        sfs_inode_encode(&d, b + (keep % 8) * 512);
    });
    Outcome f = Cisc("fsck " + img);
    EXPECT_EQ(f.status, 1) << f.out;
    EXPECT_NE(f.out.find("link count 3, but 1 directory entries"), std::string::npos) << f.out;
    EXPECT_NE(f.out.find("are marked used but nothing references them"), std::string::npos);

    std::string damaged = Slurp(img);
    ASSERT_EQ(media_open_file(img.c_str(), 0, &m), 0);   // a "running device"
    Outcome busy = Cisc("fsck --repair " + img);
    EXPECT_EQ(busy.status, 2);
    ExpectOneLineError(busy, "fsck", "in use by a running device");
    media_close(m);
    EXPECT_EQ(Slurp(img), damaged);

    Outcome r = Cisc("fsck --repair " + img);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("repaired: inode " + std::to_string(keep) + ": link count 3 set to 1"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("repaired: blocks " + std::to_string(spare) + "-" +
                         std::to_string(spare) + " marked free"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("now clean"), std::string::npos) << r.out;
    Outcome again = Cisc("fsck " + img);
    EXPECT_EQ(again.status, 0) << again.out;
    EXPECT_NE(again.out.find("clean, 2 files"), std::string::npos) << again.out;

    ASSERT_EQ(media_open_file(img.c_str(), MEDIA_RDONLY, &m), 0);
    struct sfs_mount_opts ro = {};
    ro.read_only = true;
    ASSERT_EQ(sfs_mount(m, &ro, &fs), 0);
    std::string back(content.size() + 10, '\0');
    EXPECT_EQ(sfs_read(fs, keep, 0, &back[0], back.size()), (ssize_t)content.size());
    back.resize(content.size());
    EXPECT_EQ(back, content);
    ASSERT_EQ(sfs_getattr(fs, keep, &a), 0);
    EXPECT_EQ(a.nlink, 1u);
    ASSERT_EQ(sfs_unmount(fs), 0);

    EditBlock(img, bb, [](uint8_t *b) { b[3000] ^= 4; });   // checksum now wrong
    std::string corrupt = Slurp(img);
    Outcome no = Cisc("fsck --repair " + img);
    EXPECT_EQ(no.status, 1) << no.out;
    EXPECT_NE(no.out.find("that --repair does not fix; nothing was changed"), std::string::npos)
        << no.out;
    EXPECT_EQ(Slurp(img), corrupt);
}

// `cisc resize` grows a stopped image in place up to what its block
// bitmap covers, refuses to shrink, to pass the limit (naming it) and to
// touch an image in use; fsck is clean after, info shows the new size.
TEST_F(Cli, ResizeGrowsWithinTheBitmapsReach)
{
    std::string img = P("g.img");
    ASSERT_EQ(Cisc("mkfs --size 64M " + img).status, 0);
    Outcome shrink = Cisc("resize " + img + " 32M");
    EXPECT_EQ(shrink.status, 2);
    ExpectOneLineError(shrink, "resize", "shrinking an image is not supported");
    Outcome far = Cisc("resize " + img + " 1G");
    EXPECT_EQ(far.status, 2);
    ExpectOneLineError(far, "resize", "can grow to at most 133693440 bytes (127.5 MiB)");
    struct media *m;
    ASSERT_EQ(media_open_file(img.c_str(), 0, &m), 0);   // a "running device"
    ExpectOneLineError(Cisc("resize " + img + " 100M"), "resize", "in use by a running device");
    media_close(m);
    EXPECT_EQ(Slurp(img).size(), 64u << 20) << "a refused resize changed the file";
    Outcome g = Cisc("resize " + img + " 100M");
    EXPECT_EQ(g.status, 0) << g.err;
    EXPECT_NE(g.out.find("grown from 16384 to 25600 blocks"), std::string::npos) << g.out;
    Outcome f = Cisc("fsck " + img);
    EXPECT_EQ(f.status, 0) << f.out;
    EXPECT_NE(f.out.find("/25600 blocks used"), std::string::npos) << f.out;
    EXPECT_NE(Cisc("info " + img).out.find("25600 blocks"), std::string::npos);
    Outcome same = Cisc("resize " + img + " 100M");
    EXPECT_EQ(same.status, 0);
    EXPECT_NE(same.out.find("nothing to do"), std::string::npos) << same.out;
}

}  // namespace
