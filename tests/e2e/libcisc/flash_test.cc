// `cisc up --media flash`: the device over the NAND model. Data is the
// image's as with the file media; `cisc status` reports the model (WAF,
// GC, wear, utilisation); freed blocks reach it as TRIM; a geometry that
// does not fit the image is refused with a reason, the image untouched;
// foreground GC reaches the client as WIRE_CQE_GC; an idle device
// collects in the background; the FTL time per page reaches the replies.
// CISC_E2E_FLASH_ARGS adds options to every flash device these tests start
// (CMakeLists.txt runs them all again with "--flash-ftl cores"); the
// FlashCores tests start the cores form themselves.
#include "cisc_fixture.h"

#include <algorithm>
#include <fstream>
#include <sys/statvfs.h>
#include <vector>

extern "C" {
#include "device/media/media.h"
#include "device/storagefs/format.h"
#include "device/storagefs/storagefs.h"
}

namespace e2e {

// "--media flash" and what CISC_E2E_FLASH_ARGS adds.
std::string FlashArgs()
{
    const char *more = getenv("CISC_E2E_FLASH_ARGS");
    return std::string("--media flash ") + (more ? more : "") + " ";
}

class Flash : public CiscTest {
protected:
    // Closes this test's session, then stops the device.
    void CloseAndDown()
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
        Down();
    }

    void UpFlash(const std::string &extra) { Restart(FlashArgs() + extra); }

    // Starts the device on the two-member array arr (made by the caller)
    // with the flash model, 2 x 2 dies a member, and extra options; s and
    // q on it.
    void UpArray(const std::string &arr, const std::string &extra)
    {
        const std::string up_cmd = cisc + " up --cores 2 --log " + log + " " + FlashArgs() + extra +
                                   "--flash-channels 2 --flash-dies 2 --members 2 " + arr + " " + mnt;
        RunResult u = Sh(up_cmd);
        ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
        up = true;
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }
};

TEST_F(Flash, DataStatusAndTrimThroughTheModel)
{
    UpFlash("--flash-channels 2 --flash-dies 2 --flash-op 200 --flash-members 2");
    std::string data(1 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 7 + 3);
    Put("big", data);
    EXPECT_EQ(Get("big"), data);
    EXPECT_EQ(Status("flash", "channels"), 2);
    EXPECT_EQ(Status("flash", "dies"), 2);
    EXPECT_EQ(Status("flash", "op_permille"), 200);
    RunResult sync = Sh(cisc + " status --raw " + mnt);
    ASSERT_EQ(sync.status, 0);
    EXPECT_NE(sync.out.find("flash_ftl member 0 waf "), std::string::npos) << sync.out;
    EXPECT_NE(sync.out.find("flash member 1 channels 2 "), std::string::npos) << sync.out;
    EXPECT_NE(sync.out.find("flash_chan member 0 channel 1 util "), std::string::npos) << sync.out;
    // The file's blocks were written through the model (at the latest by
    // the commit that the unlink below waits for).
    ASSERT_EQ(cisc_unlink(q, "big"), 0);
    long long writes = Status("flash_ftl", "host_writes");
    EXPECT_GE(writes, 96);   // member 0's share of 16 64 KiB stripes
    bool trimmed = false;
    for (int i = 0; i < 200 && !trimmed; i++) {   // the next commit frees them
        trimmed = Status("flash_ftl", "trims") >= 96;
        if (!trimmed)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(trimmed);
}

// One die of 16-page blocks with almost no spare: rewriting a file in
// place soon empties the die's free pool, so writes wait for foreground
// GC. The completions of those writes carry WIRE_CQE_GC to the client
// (cisc_queue_gc_completions) and `cisc status` counts the runs.
void RewriteUntilGc(struct cisc_queue *q, uint64_t *gc_seen)
{
    uint64_t fh;
    ASSERT_EQ(cisc_open(q, "hot", O_CREAT | O_WRONLY, 0644, &fh), 0);
    std::string chunk(1 << 20, 'g');
    uint64_t before = cisc_queue_gc_completions(q);
    // 32 MiB rewritten 12 times: more pages than the die holds (256 MiB
    // of image plus 0.1% spare), so its pool runs dry.
    for (int pass = 0; pass < 12 && cisc_queue_gc_completions(q) == before; pass++)
        for (uint64_t off = 0; off < (32u << 20); off += chunk.size()) {
            chunk[0] = (char)pass;
            ASSERT_EQ(cisc_pwrite(q, fh, chunk.data(), chunk.size(), off),
                      (ssize_t)chunk.size());
        }
    ASSERT_EQ(cisc_close(q, fh), 0);
    *gc_seen = cisc_queue_gc_completions(q) - before;
}

TEST_F(Flash, ForegroundGcIsFlaggedOnTheClientsCompletions)
{
    UpFlash("--flash-channels 1 --flash-dies 1 --flash-pages 16 --flash-op 1");
    EXPECT_EQ(cisc_queue_gc_completions(q), 0u);   // a fresh device: no GC yet
    uint64_t seen = 0;
    RewriteUntilGc(q, &seen);
    EXPECT_GT(seen, 0u);
    EXPECT_GT(Status("flash_ftl", "gc_fg"), 0);
    std::string back = Get("hot");
    ASSERT_EQ(back.size(), 32u << 20);
    for (size_t off = 0; off < back.size(); off += 1 << 20) {   // data intact: one pass
        EXPECT_EQ(back[off], back[0]);
    }
    EXPECT_EQ(std::count(back.begin(), back.end(), 'g'), (long)back.size() - 32);
}

// After foreground GC a die's pool holds at most gc_free_blocks (2):
// foreground GC stops there. With no I/O the device collects in the
// background up to twice that, so free blocks rise with no write.
TEST_F(Flash, IdleDeviceCollectsInTheBackground)
{
    UpFlash("--flash-channels 1 --flash-dies 1 --flash-pages 16 --flash-op 1");
    uint64_t seen = 0;
    RewriteUntilGc(q, &seen);
    ASSERT_GT(seen, 0u);
    bool rose = false;
    for (int i = 0; i < 200 && !rose; i++) {   // idle: no client I/O from here on
        rose = Status("flash_ftl", "free_blocks") >= 4 && Status("flash_ftl", "gc_bg") > 0;
        if (!rose)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(rose) << Sh(cisc + " status --raw " + mnt).out;
    EXPECT_GT(Status("flash_ftl", "gc_fg"), 0);
}

// The FTL state outlives the device: `cisc down` saves it beside the
// image (IMAGE.ftl) and the next `cisc up` restores it (wear and mapping
// as they were); after a crash there is no state and the map is rebuilt
// from the image (the file's blocks mapped, wear unknown: 0).
TEST_F(Flash, FtlStateSurvivesDownAndIsRebuiltAfterACrash)
{
    const std::string geom = "--flash-channels 1 --flash-dies 1 --flash-pages 16 --flash-op 1";
    UpFlash(geom);
    uint64_t seen = 0;
    RewriteUntilGc(q, &seen);   // erases, so wear is worth keeping
    ASSERT_GT(seen, 0u);
    long long erases = Status("flash_ftl", "erase_max");
    ASSERT_GT(erases, 0);
    UpFlash(geom);   // cisc down, then up
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find(" state restored\n"), std::string::npos);
    EXPECT_GE(Status("flash_ftl", "erase_max"), erases);   // wear kept (plus any since)
    EXPECT_GE(Status("flash_ftl", "mapped"), 32 << 8);     // the 32 MiB file's pages
    EXPECT_NE(access((img + ".ftl").c_str(), F_OK), 0);    // consumed while running

    pid_t pid = DaemonPid();
    ASSERT_GT(pid, 0);
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    kill(pid, SIGKILL);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Sh("umount -l " + mnt);
    up = false;
    Up(FlashArgs() + geom);
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find(" state rebuilt\n"), std::string::npos);
    EXPECT_EQ(Status("flash_ftl", "erase_max"), 0);         // wear unknown after a crash
    EXPECT_GE(Status("flash_ftl", "mapped"), 32 << 8);     // rebuilt from the image
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    EXPECT_EQ(Get("hot").size(), 32u << 20);
}

// FUSE replies wait for the model (docs/FLASH.md "FUSE replies"): with a
// 100 ms program latency, an fsync through the mount is answered only once
// the journal commit it waits for is programmed (a flush stamps the latest
// write's completion), and a cold read once its pages are read. The device
// counts the replies it held and the longest modelled service time; the
// bytes read back through a held (copied) reply are the ones written.
TEST_F(Flash, MountRepliesWaitForTheModelsCompletion)
{
    const long long prog = 100000000, read = 20000000;
    const std::string geom = "--flash-channels 2 --flash-dies 2 --flash-prog-ns " +
                             std::to_string(prog) + " --flash-read-ns " + std::to_string(read);
    UpFlash(geom);
    std::string data(64 << 10, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 13 + 5);
    int fd = open((mnt + "/synced").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 3; i++) {   // three synced writes: each fsync waits for a commit
        ASSERT_EQ(pwrite(fd, data.data() + i * 4096, 4096, i * 4096), 4096);
        ASSERT_EQ(fsync(fd), 0);
    }
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0), (ssize_t)data.size());
    ASSERT_EQ(fsync(fd), 0);
    ASSERT_EQ(close(fd), 0);
    EXPECT_GE(Status("flash_replies", "stamped"), 4);
    EXPECT_GE(Status("flash_replies", "held"), 1);
    EXPECT_GE(Status("flash_replies", "held_ns"), 1);
    EXPECT_GE(Status("flash_replies", "model_max_ns"), prog);   // media done - request submit

    UpFlash(geom);   // cold: no kernel page cache, no device buffer cache
    long long held = Status("flash_replies", "held");
    EXPECT_EQ(ReadFile(mnt + "/synced"), data);
    EXPECT_GT(Status("flash_replies", "held"), held);
    EXPECT_GE(Status("flash_replies", "model_max_ns"), read);
}

// `--flash-ftl-ns`: every host page operation first takes the FTL time on
// its partition's timeline, so a synced write through the mount is not
// done in the model before that time, and the status line shows it.
TEST_F(Flash, FtlTimeReachesTheMountsReplies)
{
    const long long ftl = 30000000;   // 30 ms: far above any NAND time here
    UpFlash("--flash-channels 2 --flash-dies 2 --flash-ftl-ns " + std::to_string(ftl));
    EXPECT_EQ(Status("flash", "ftl_ns"), ftl);
    int fd = open((mnt + "/f").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    std::string data(4096, 'x');
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0), 4096);
    ASSERT_EQ(fsync(fd), 0);
    ASSERT_EQ(close(fd), 0);
    EXPECT_GE(Status("flash_replies", "model_max_ns"), ftl);
    EXPECT_EQ(Get("f"), data);
}

// The key of one array member's flash line ("flash_ftl member 1 ..."), or -1.
long long MemberStatus(const std::string &raw, const std::string &line, unsigned member,
                       const std::string &key)
{
    size_t p = raw.find("\n" + line + " member " + std::to_string(member) + " ");
    if (p == std::string::npos)
        return -1;
    std::string l = raw.substr(p, raw.find('\n', p + 1) - p);
    size_t k = l.find(" " + key + " ");
    return k == std::string::npos ? -1 : atoll(l.c_str() + k + key.size() + 2);
}

// Arrays of member images (ScalaCache 5.5): `cisc mkfs --members 2` makes
// two labelled member images, `cisc up --members 2` stripes them into one
// file system, each member with its own flash model (both serve I/O); data
// written through libcisc and the mount survives a restart with each
// member's FTL state restored. A missing, swapped or foreign member, or a
// member started as an image of its own, is refused naming it; fsck and
// resize refuse a member alone.
TEST_F(Flash, ArrayOfMemberImages)
{
    CloseAndDown();
    const std::string arr = dir + "/arr";
    RunResult mk = Sh(cisc + " mkfs --members 2 --size 128M " + arr);
    ASSERT_EQ(mk.status, 0) << mk.out;
    struct stat st;
    ASSERT_EQ(stat((arr + ".1").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, (64 << 20) + 4096);   // a label, then its half in 64 KiB stripes
    const std::string up_cmd = cisc + " up --cores 2 --log " + log + " " + FlashArgs() +
                               "--flash-channels 2 --flash-dies 2 --members 2 ";
    RunResult u = Sh(up_cmd + arr + " " + mnt);
    ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
    up = true;
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    std::string data(1 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 11 + 1);
    Put("lib", data);
    {
        std::ofstream f(mnt + "/fuse", std::ios::binary);
        f << data;
    }
    EXPECT_EQ(Get("fuse"), data);
    EXPECT_EQ(ReadFile(mnt + "/lib"), data);
    int fd = open((mnt + "/fuse").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(fsync(fd), 0);   // one journal: the commit writes both files' blocks
    close(fd);
    std::string raw = Sh(cisc + " status --raw " + mnt).out;
    EXPECT_GT(MemberStatus(raw, "flash_ftl", 0, "host_writes"), 0) << raw;
    EXPECT_GT(MemberStatus(raw, "flash_ftl", 1, "host_writes"), 0) << raw;
    EXPECT_EQ(MemberStatus(raw, "flash_ftl", 2, "host_writes"), -1);

    CloseAndDown();
    u = Sh(up_cmd + arr + " " + mnt);   // restart
    ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
    up = true;
    raw = Sh(cisc + " status --raw " + mnt).out;
    EXPECT_NE(raw.find("flash member 0 channels 2 dies 2 "), std::string::npos) << raw;
    EXPECT_NE(raw.find("flash member 1 channels 2 dies 2 "), std::string::npos) << raw;
    size_t restored = 0;
    for (size_t p = raw.find(" state restored\n"); p != std::string::npos;
         p = raw.find(" state restored\n", p + 1))
        restored++;
    EXPECT_EQ(restored, 2u) << raw;
    EXPECT_EQ(ReadFile(mnt + "/lib"), data);
    EXPECT_EQ(ReadFile(mnt + "/fuse"), data);
    Down();

    // A member missing: named.
    ASSERT_EQ(rename((arr + ".1").c_str(), (arr + ".away").c_str()), 0);
    RunResult miss = Sh(up_cmd + arr + " " + mnt);
    EXPECT_NE(miss.status, 0);
    EXPECT_NE(miss.out.find("array member 1, " + arr + ".1: No such file"), std::string::npos)
        << miss.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    // Swapped: member 1 given first.
    const std::string list_cmd = cisc + " up --cores 2 --log " + log + " --members ";
    RunResult swap = Sh(list_cmd + arr + ".away," + arr + ".0 " + mnt);
    EXPECT_NE(swap.status, 0);
    EXPECT_NE((swap.out + ReadFile(log)).find(arr + ".away is member 1 of its array, given as "
                                              "member 0"), std::string::npos) << swap.out;
    // A member of another array.
    ASSERT_EQ(Sh(cisc + " mkfs --members 2 --size 128M " + dir + "/other").status, 0);
    RunResult foreign = Sh(list_cmd + arr + ".0," + dir + "/other.1 " + mnt);
    EXPECT_NE(foreign.status, 0);
    EXPECT_NE((foreign.out + ReadFile(log)).find(dir + "/other.1 belongs to another array"),
              std::string::npos) << foreign.out;
    // Fewer members than the array has.
    RunResult one = Sh(list_cmd + arr + ".0 " + mnt);
    EXPECT_NE(one.status, 0);
    EXPECT_NE((one.out + ReadFile(log)).find("belongs to an array of 2 members, 1 given"),
              std::string::npos) << one.out;
    // A member alone, as an image; fsck and resize of a member.
    RunResult alone = Sh(cisc + " up --cores 2 --log " + log + " " + arr + ".0 " + mnt);
    EXPECT_NE(alone.status, 0);
    EXPECT_NE((alone.out + ReadFile(log)).find("is member 0 of an array of 2 member images"),
              std::string::npos) << alone.out;
    RunResult fsck = Sh(cisc + " fsck " + arr + ".0");
    EXPECT_NE(fsck.status, 0);
    EXPECT_NE(fsck.out.find("check the whole array (cisc fsck --members 2 IMAGE"),
              std::string::npos) << fsck.out;
    RunResult rs = Sh(cisc + " resize " + arr + ".0 256M");
    EXPECT_NE(rs.status, 0);
    EXPECT_NE(rs.out.find("resize the whole array (cisc resize --members 2 IMAGE SIZE"),
              std::string::npos) << rs.out;
    EXPECT_FALSE(IsCiscMount(mnt));

    // Put back, the list form starts it (file media: the same bytes).
    ASSERT_EQ(rename((arr + ".away").c_str(), (arr + ".1").c_str()), 0);
    RunResult back = Sh(list_cmd + arr + ".0," + arr + ".1 " + mnt);
    ASSERT_EQ(back.status, 0) << back.out << ReadFile(log);
    up = true;
    EXPECT_EQ(ReadFile(mnt + "/lib"), data);
}

// Opens the array of the member images paths (locked), as fsck does.
struct media *OpenArray(const std::vector<std::string> &paths)
{
    std::vector<const char *> p;
    for (auto &x : paths)
        p.push_back(x.c_str());
    struct media *m = nullptr;
    char err[512] = "";
    EXPECT_EQ(media_array_open_files(p.data(), (unsigned)p.size(), 0, err, sizeof err, &m), 0)
        << err;
    return m;
}

// Clears the block bitmap bit of the first data block in use (a block of
// some file or directory) on the array. Returns that block, or 0.
uint64_t ClearFirstUsedDataBit(struct media *m)
{
    struct sfs_info in;
    if (sfs_info(m, &in) != 0)
        return 0;
    std::vector<uint8_t> b(MEDIA_BLOCK_SIZE);
    for (uint64_t blk = in.data_start; blk < in.blocks; blk++) {
        uint64_t bb = in.bbitmap_start + blk / SFS_BITMAP_BITS;
        if (media_read(m, bb, 1, b.data()) != 0)
            return 0;
        if (!sfs_bit_get(b.data(), (uint32_t)(blk % SFS_BITMAP_BITS)))
            continue;
        sfs_bit_set(b.data(), (uint32_t)(blk % SFS_BITMAP_BITS), false);
        sfs_block_seal(b.data(), SFS_MAGIC_BBITMAP, bb);
        return media_write(m, bb, 1, b.data()) == 0 && media_flush(m) == 0 ? blk : 0;
    }
    return 0;
}

// fsck and resize of an array of member images: the members are opened as
// the device opens them (a swapped member named, a member in use refused);
// a clean array checks clean in both forms of --members; a bitmap bit
// cleared under a used block is found and --repair fixes it. The array
// grows (every member by the same whole stripes; a grow cut short between
// the members' labels leaves it at its old size, and resize again finishes
// it), starts with its old files intact and its new space usable, and
// checks clean.
TEST_F(Flash, ArrayFsckRepairAndResize)
{
    CloseAndDown();
    const std::string arr = dir + "/ga";
    const std::vector<std::string> members = { arr + ".0", arr + ".1" };
    RunResult mk = Sh(cisc + " mkfs --members 2 --size 32M " + arr);
    ASSERT_EQ(mk.status, 0) << mk.out;
    const std::string up_cmd = cisc + " up --cores 2 --log " + log + " " + FlashArgs() +
                               "--flash-channels 2 --flash-dies 2 --members 2 ";
    RunResult u = Sh(up_cmd + arr + " " + mnt);
    ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
    up = true;
    std::string data(3 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 13 + 5);
    {
        std::ofstream f(mnt + "/old", std::ios::binary);
        f << data;
    }
    Down();

    const std::string fsck = cisc + " fsck --members 2 " + arr;
    RunResult c = Sh(fsck);
    EXPECT_EQ(c.status, 0) << c.out;
    EXPECT_NE(c.out.find(arr + ": clean, "), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("/8192 blocks used"), std::string::npos) << c.out;   // 2 x 16 MiB
    RunResult l = Sh(cisc + " fsck --members " + members[0] + "," + members[1]);
    EXPECT_EQ(l.status, 0) << l.out;
    RunResult sw = Sh(cisc + " fsck --members " + members[1] + "," + members[0]);
    EXPECT_EQ(sw.status, 2) << sw.out;
    EXPECT_NE(sw.out.find(members[1] + " is member 1 of its array, given as member 0"),
              std::string::npos) << sw.out;
    struct media *held = nullptr;   // a "running device" holds member 1
    ASSERT_EQ(media_open_file(members[1].c_str(), 0, &held), 0);
    RunResult busy = Sh(cisc + " fsck --repair --members 2 " + arr);
    EXPECT_EQ(busy.status, 2) << busy.out;
    EXPECT_NE(busy.out.find(members[1] + " is in use by a running device"), std::string::npos)
        << busy.out;
    media_close(held);

    struct media *m = OpenArray(members);
    ASSERT_NE(m, nullptr);
    uint64_t victim = ClearFirstUsedDataBit(m);
    media_close(m);
    ASSERT_GT(victim, 0u);
    RunResult bad = Sh(fsck);
    EXPECT_EQ(bad.status, 1) << bad.out;
    EXPECT_NE(bad.out.find("block " + std::to_string(victim) + " ("), std::string::npos)
        << bad.out;
    EXPECT_NE(bad.out.find("is in use but marked free"), std::string::npos) << bad.out;
    RunResult fix = Sh(cisc + " fsck --repair --members 2 " + arr);
    EXPECT_EQ(fix.status, 0) << fix.out;
    EXPECT_NE(fix.out.find("now clean"), std::string::npos) << fix.out;
    EXPECT_EQ(Sh(fsck).status, 0);

    // A grow cut short: member 0 extended and relabelled, member 1 not.
    ASSERT_EQ(truncate(members[0].c_str(), (48 << 20) + 4096), 0);
    struct media *m0 = nullptr;
    ASSERT_EQ(media_open_file(members[0].c_str(), 0, &m0), 0);
    ASSERT_EQ(media_array_relabel(&m0, 1, (48u << 20) / MEDIA_BLOCK_SIZE), 0);
    media_close(m0);
    RunResult cut = Sh(fsck);
    EXPECT_EQ(cut.status, 0) << cut.out;   // the old size, consistent
    EXPECT_NE(cut.out.find("/8192 blocks used"), std::string::npos) << cut.out;
    EXPECT_NE(cut.out.find("labels disagree on their size (a cisc resize cut short)"),
              std::string::npos) << cut.out;

    RunResult rs = Sh(cisc + " resize --members 2 " + arr + " 64M");
    ASSERT_EQ(rs.status, 0) << rs.out;
    EXPECT_NE(rs.out.find("grown from 8192 to 16384 blocks"), std::string::npos) << rs.out;
    for (auto &p : members) {   // each member by the same amount (member 0 kept its extra)
        struct stat st;
        ASSERT_EQ(stat(p.c_str(), &st), 0);
        EXPECT_EQ(st.st_size, p == members[0] ? (48 << 20) + 4096 : (32 << 20) + 4096) << p;
        struct media *x = nullptr;
        struct media_array_label lab;
        ASSERT_EQ(media_open_file(p.c_str(), MEDIA_RDONLY, &x), 0);
        ASSERT_EQ(media_array_label_read(x, &lab), 0);
        EXPECT_EQ(lab.member_blocks, (32u << 20) / MEDIA_BLOCK_SIZE) << p;
        media_close(x);
    }
    RunResult after = Sh(fsck);
    EXPECT_EQ(after.status, 0) << after.out;
    EXPECT_EQ(after.out.find("labels disagree"), std::string::npos) << after.out;
    EXPECT_NE(after.out.find("/16384 blocks used"), std::string::npos) << after.out;

    u = Sh(up_cmd + arr + " " + mnt);
    ASSERT_EQ(u.status, 0) << u.out << ReadFile(log);
    up = true;
    EXPECT_EQ(ReadFile(mnt + "/old"), data);
    struct statvfs vs;
    ASSERT_EQ(statvfs(mnt.c_str(), &vs), 0);
    EXPECT_GT((uint64_t)vs.f_blocks * vs.f_frsize, 60ull << 20);
    std::string more(40 << 20, 'n');   // more than the old array had free
    {
        std::ofstream f(mnt + "/new", std::ios::binary);
        f << more;
        f.flush();
        EXPECT_TRUE(f.good());
    }
    EXPECT_EQ(ReadFile(mnt + "/new").size(), more.size());
    Down();
    RunResult last = Sh(fsck);
    EXPECT_EQ(last.status, 0) << last.out;
    EXPECT_NE(last.out.find("clean, "), std::string::npos) << last.out;
}

TEST_F(Flash, AGeometryThatDoesNotFitIsRefused)
{
    CloseAndDown();
    RunResult r = Sh(UpCmd(FlashArgs() + "--flash-blocks 3"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE((r.out + ReadFile(log)).find("too small"), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    RunResult z = Sh(UpCmd(FlashArgs() + "--flash-read-ns 0 --flash-channels 0"));
    EXPECT_EQ(z.status, 0) << z.out;   // zeros are "scale to the image"
    up = z.status == 0;
}

// ---- the cores form (`--flash-ftl cores`, docs/FLASH.md "FTL cores") ----

// The device with FTL cores: each partition owned by its core, every page
// of every media call handed to the owner through the per-core rings.
class FlashCores : public Flash {
protected:
    const std::string cores = "--flash-ftl cores --flash-partitions 2 ";

    // The number after key on line (first match), as text ("1.000").
    std::string StatusWord(const std::string &line, const std::string &key)
    {
        std::string raw = Sh(cisc + " status --raw " + mnt).out;
        size_t p = raw.find("\n" + line + " ");
        if (p == std::string::npos)
            return "";
        std::string l = raw.substr(p + 1, raw.find('\n', p + 1) - p - 1);
        size_t k = l.find(" " + key + " ");
        if (k == std::string::npos)
            return "";
        std::string v = l.substr(k + key.size() + 2);
        return v.substr(0, v.find(' '));
    }
};

// Data through both doors, sequential writes of a fresh device at WAF
// exactly 1.000, TRIM after an unlink, every FTL operation by its owner
// (no lock, none foreign), and an image that checks clean afterwards.
TEST_F(FlashCores, DataWafTrimAndACleanImage)
{
    UpFlash(cores + "--flash-channels 2 --flash-dies 2 --flash-op 200");
    RunResult st = Sh(cisc + " status --raw " + mnt);
    EXPECT_NE(st.out.find(" partitions 2 ftl cores "), std::string::npos) << st.out;
    std::string data(4 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 31 + 7);
    Put("lib", data);
    ASSERT_TRUE(WriteFile(mnt + "/fuse", data.substr(0, 1 << 20)));
    int fd = open((mnt + "/fuse").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(fsync(fd), 0);   // the journal commits both files' blocks
    close(fd);
    EXPECT_EQ(Get("lib"), data);
    EXPECT_EQ(ReadFile(mnt + "/fuse"), data.substr(0, 1 << 20));
    EXPECT_GE(Status("flash_ftl", "host_writes"), 5 << 8);   // 5 MiB of pages
    EXPECT_EQ(StatusWord("flash_ftl", "waf"), "1.000");
    EXPECT_EQ(Status("flash_ftl", "gc_runs"), 0);
    ASSERT_EQ(cisc_unlink(q, "lib"), 0);
    bool trimmed = false;
    for (int i = 0; i < 200 && !trimmed; i++) {   // the next commit frees its blocks
        trimmed = Status("flash_ftl", "trims") >= 1024;
        if (!trimmed)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(trimmed);
    EXPECT_GT(Status("flash_ftl", "ops_owned"), 5 << 8);
    EXPECT_EQ(Status("flash_ftl", "ops_locked"), 0);
    EXPECT_EQ(Status("flash_ftl", "ops_foreign"), 0);
    CloseAndDown();
    RunResult fsck = Sh(cisc + " fsck " + img);
    EXPECT_EQ(fsck.status, 0) << fsck.out;
    EXPECT_NE(fsck.out.find("clean"), std::string::npos) << fsck.out;
    Up(FlashArgs() + cores + "--flash-channels 2 --flash-dies 2 --flash-op 200");
    EXPECT_EQ(ReadFile(mnt + "/fuse"), data.substr(0, 1 << 20));
}

// Foreground GC flagged to the client, background GC by the owners once
// idle, the state saved at `cisc down` and restored, rebuilt after a
// SIGKILL, the data intact, and still no lock on the FTL path.
TEST_F(FlashCores, GcIdleGcStateAndACrash)
{
    const std::string geom = cores + "--flash-channels 2 --flash-dies 1 --flash-pages 16 "
                                     "--flash-op 1";
    UpFlash(geom);
    uint64_t seen = 0;
    RewriteUntilGc(q, &seen);
    EXPECT_GT(seen, 0u);
    EXPECT_GT(Status("flash_ftl", "gc_fg"), 0);
    // Foreground GC leaves at most gc_free_blocks (2) in each of the two
    // dies' pools; more than 4 free blocks is background GC's work, which
    // may have started before the first look (a slow sanitizer build goes
    // idle between the last write and that look).
    bool rose = false;
    for (int i = 0; i < 200 && !rose; i++) {   // idle from here on
        rose = Status("flash_ftl", "gc_bg") > 0 && Status("flash_ftl", "free_blocks") > 4;
        if (!rose)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(rose) << Sh(cisc + " status --raw " + mnt).out;
    EXPECT_EQ(Status("flash_ftl", "ops_locked"), 0);
    long long erases = Status("flash_ftl", "erase_max");
    ASSERT_GT(erases, 0);

    UpFlash(geom);   // cisc down, then up
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find(" state restored\n"), std::string::npos);
    EXPECT_GE(Status("flash_ftl", "erase_max"), erases);
    EXPECT_GE(Status("flash_ftl", "mapped"), 32 << 8);

    pid_t pid = DaemonPid();
    ASSERT_GT(pid, 0);
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    kill(pid, SIGKILL);
    for (int i = 0; i < 200 && !ProcessEnded(pid); i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Sh("umount -l " + mnt);
    up = false;
    Up(FlashArgs() + geom);
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find(" state rebuilt\n"), std::string::npos);
    EXPECT_EQ(Status("flash_ftl", "erase_max"), 0);
    EXPECT_GE(Status("flash_ftl", "mapped"), 32 << 8);
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    std::string back = Get("hot");
    ASSERT_EQ(back.size(), 32u << 20);
    EXPECT_EQ(std::count(back.begin(), back.end(), 'g'), (long)back.size() - 32);
    EXPECT_EQ(Status("flash_ftl", "ops_locked"), 0);
    EXPECT_GT(Status("flash_ftl", "ops_owned"), 0);
}

// An array of member images, each member with its own model and its own
// FTL cores: data through both doors on both members, restored at the
// next start, and a clean array check.
TEST_F(FlashCores, ArrayMembersEachWithTheirOwnCores)
{
    CloseAndDown();
    const std::string arr = dir + "/arr";
    ASSERT_EQ(Sh(cisc + " mkfs --members 2 --size 128M " + arr).status, 0);
    UpArray(arr, cores);
    std::string data(2 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 5 + 3);
    Put("lib", data);
    ASSERT_TRUE(WriteFile(mnt + "/fuse", data));
    EXPECT_EQ(Get("fuse"), data);
    EXPECT_EQ(ReadFile(mnt + "/lib"), data);
    std::string raw = Sh(cisc + " status --raw " + mnt).out;
    for (unsigned m = 0; m < 2; m++) {
        EXPECT_GT(MemberStatus(raw, "flash_ftl", m, "host_writes"), 0) << raw;
        EXPECT_GT(MemberStatus(raw, "flash_ftl", m, "ops_owned"), 0) << raw;
        EXPECT_EQ(MemberStatus(raw, "flash_ftl", m, "ops_locked"), 0) << raw;
    }
    CloseAndDown();
    UpArray(arr, cores);
    raw = Sh(cisc + " status --raw " + mnt).out;
    size_t restored = 0, cored = 0;
    for (size_t p = raw.find(" state restored\n"); p != std::string::npos;
         p = raw.find(" state restored\n", p + 1))
        restored++;
    for (size_t p = raw.find(" partitions 2 ftl cores "); p != std::string::npos;
         p = raw.find(" partitions 2 ftl cores ", p + 1))
        cored++;
    EXPECT_EQ(restored, 2u) << raw;
    EXPECT_EQ(cored, 2u) << raw;
    EXPECT_EQ(ReadFile(mnt + "/lib"), data);
    CloseAndDown();
    RunResult c = Sh(cisc + " fsck --members 2 " + arr);
    EXPECT_EQ(c.status, 0) << c.out;
}

// Bad input: FTL cores without the flash media, an unknown form, more
// cores than a model may have, cores that do not divide the channels:
// each refused at `cisc up` with its reason, nothing mounted and the image
// byte for byte as it was (no FTL state beside it either).
TEST_F(FlashCores, BadInputIsRefusedAndWritesNothing)
{
    CloseAndDown();
    const std::string sum = "cksum < " + img;
    const std::string before = Sh(sum).out;
    ASSERT_FALSE(before.empty());
    struct Case {
        std::string opts, says;
    } cases[] = {
        {"--flash-ftl cores", "--flash-ftl cores (-o flash_ftl=cores) needs --media flash"},
        {"-o flash_ftl=cores", "--flash-ftl cores (-o flash_ftl=cores) needs --media flash"},
        {"--media flash --flash-ftl threads", "--flash-ftl wants locks or cores, not 'threads'"},
        {"--media flash --flash-ftl cores --flash-channels 128 --flash-dies 1 "
         "--flash-partitions 128", "FTL cores: 1 to 64"},
        {"--media flash --flash-ftl cores --flash-channels 3 --flash-partitions 2",
         "partitions must divide the channels"},
    };
    for (const auto &c : cases) {
        RunResult r = Sh(UpCmd(c.opts));
        EXPECT_NE(r.status, 0) << c.opts;
        EXPECT_NE((r.out + ReadFile(log)).find(c.says), std::string::npos)
            << c.opts << ": " << r.out;
        EXPECT_FALSE(IsCiscMount(mnt)) << c.opts;
        EXPECT_NE(access((img + ".ftl").c_str(), F_OK), 0) << c.opts;
    }
    EXPECT_EQ(Sh(sum).out, before) << "the image changed";
}

}  // namespace e2e
