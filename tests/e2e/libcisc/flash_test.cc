// `cisc up --media flash`: the device over the NAND model. Data is the
// image's as with the file media; `cisc status` reports the model (WAF,
// GC, wear, utilisation); freed blocks reach it as TRIM; a geometry that
// does not fit the image is refused with a reason, the image untouched;
// foreground GC reaches the client as WIRE_CQE_GC; an idle device
// collects in the background.
#include "cisc_fixture.h"

#include <algorithm>

namespace e2e {

class Flash : public CiscTest {
protected:
    void UpFlash(const std::string &extra)
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
        Down();
        Up("--media flash " + extra);
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
    Up("--media flash " + geom);
    EXPECT_NE(Sh(cisc + " status --raw " + mnt).out.find(" state rebuilt\n"), std::string::npos);
    EXPECT_EQ(Status("flash_ftl", "erase_max"), 0);         // wear unknown after a crash
    EXPECT_GE(Status("flash_ftl", "mapped"), 32 << 8);     // rebuilt from the image
    ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
    ASSERT_EQ(cisc_queue_create(s, &q), 0);
    EXPECT_EQ(Get("hot").size(), 32u << 20);
}

TEST_F(Flash, AGeometryThatDoesNotFitIsRefused)
{
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    Down();
    RunResult r = Sh(UpCmd("--media flash --flash-blocks 3"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE((r.out + ReadFile(log)).find("too small"), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    RunResult z = Sh(UpCmd("--media flash --flash-read-ns 0 --flash-channels 0"));
    EXPECT_EQ(z.status, 0) << z.out;   // zeros are "scale to the image"
    up = z.status == 0;
}

}  // namespace e2e
