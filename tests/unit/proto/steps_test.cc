// tests/unit/proto/steps_test.cc - the table of step kinds (proto/steps.h):
// one row for every kind that proto/wire.h declares (read from the header
// itself, so a kind added there without a row fails here), lookups by kind
// and by name, and the invariants between a row's properties.
#include <gtest/gtest.h>

#include "proto/steps.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

// The enumerators of enum wire_step_kind as (name, value), in order.
std::vector<std::pair<std::string, unsigned>> wire_kinds()
{
    std::ifstream f(std::string(CISC_SOURCE_DIR) + "/proto/wire.h");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    size_t a = text.find("enum wire_step_kind {");
    size_t b = text.find("};", a);
    if (a == std::string::npos || b == std::string::npos)
        return {};
    std::string body = text.substr(a, b - a);
    body = std::regex_replace(body, std::regex(R"(/\*[\s\S]*?\*/)"), " ");
    std::regex item(R"((WIRE_STEP_[A-Z0-9_]+)\s*(=\s*(\d+))?\s*,?)");
    std::vector<std::pair<std::string, unsigned>> out;
    unsigned next = 0;
    for (std::sregex_iterator it(body.begin(), body.end(), item), end; it != end; ++it) {
        unsigned v = next;
        if ((*it)[3].matched)
            v = (unsigned)strtoul((*it)[3].str().c_str(), nullptr, 10);
        out.emplace_back((*it)[1].str(), v);
        next = v + 1;
    }
    return out;
}

std::string lower_suffix(const std::string &enumerator)
{
    std::string s = enumerator.substr(sizeof("WIRE_STEP_") - 1);
    for (char &c : s)
        c = (char)tolower((unsigned char)c);
    return s;
}

bool has(const struct step_kind *k, unsigned p)
{
    return (k->props & p) == p;
}
} // namespace

TEST(StepKinds, EveryKindOfWireHHasItsRow)
{
    auto kinds = wire_kinds();
    ASSERT_GE(kinds.size(), 18u) << "could not read enum wire_step_kind from wire.h";
    for (const auto &[enumerator, value] : kinds) {
        const struct step_kind *k = step_kind(value);
        ASSERT_NE(k, nullptr) << enumerator << " has no row";
        EXPECT_EQ(k->kind, value) << enumerator;
        EXPECT_EQ(std::string(k->name), lower_suffix(enumerator));
        EXPECT_EQ(step_kind_named(k->name), k) << k->name;
    }
    unsigned rows = 0;
    for (unsigned v = 0; v < 256; v++)
        rows += step_kind(v) != nullptr;
    EXPECT_EQ(rows, kinds.size()) << "a row for a value wire.h does not declare";
    EXPECT_EQ(step_kind(WIRE_STEP_BPF)->kind, WIRE_STEP_BPF);
}

TEST(StepKinds, LookupsRefuseWhatIsNoKind)
{
    for (unsigned v : { 0u, 19u, 64u, 255u, 256u, UINT_MAX })
        EXPECT_EQ(step_kind(v), nullptr) << v;
    EXPECT_FALSE(step_has(0, 0));
    EXPECT_FALSE(step_has(UINT_MAX, STEP_COMPUTE));
    EXPECT_TRUE(step_has(WIRE_STEP_OPEN, 0));   // a kind, whatever it has
    EXPECT_EQ(step_kind_named(nullptr), nullptr);
    EXPECT_EQ(step_kind_named(""), nullptr);
    EXPECT_EQ(step_kind_named("OPEN"), nullptr);   // names are lower case
    EXPECT_EQ(step_kind_named("crc"), nullptr);    // and whole
    EXPECT_EQ(step_kind_named("crc32c")->kind, WIRE_STEP_CRC32C);
    EXPECT_EQ(step_kind_named("zstd_decompress")->kind, WIRE_STEP_ZSTD_DECOMPRESS);
}

TEST(StepKinds, PropertiesAreConsistent)
{
    for (unsigned v = 0; v < 256; v++) {
        const struct step_kind *k = step_kind(v);
        if (!k)
            continue;
        SCOPED_TRACE(k->name);
        EXPECT_TRUE(!has(k, STEP_INPUT2) || has(k, STEP_INPUT));
        EXPECT_TRUE(!has(k, STEP_COMPUTE) || has(k, STEP_INPUT));
        EXPECT_TRUE(!has(k, STEP_PARSER) || has(k, STEP_COMPUTE));
        EXPECT_TRUE(!k->out_size || has(k, STEP_OUTPUT));
        EXPECT_FALSE(has(k, STEP_FILE | STEP_PATH));
        EXPECT_FALSE(has(k, STEP_FILE | STEP_COMPUTE));
        EXPECT_FALSE(has(k, STEP_PATH | STEP_COMPUTE));
        EXPECT_EQ(step_has(v, k->props), true);
        EXPECT_EQ(step_has(v, STEP_INPUT), has(k, STEP_INPUT));
    }
}

// The operand rules as wire.h's prose states them ("Step operands").
TEST(StepKinds, RowsSayWhatWireHSays)
{
    for (unsigned v = 0; v < 256; v++) {
        const struct step_kind *k = step_kind(v);
        if (!k)
            continue;
        SCOPED_TRACE(k->name);
        bool compute = has(k, STEP_COMPUTE);
        EXPECT_EQ(has(k, STEP_INPUT),
                  v == WIRE_STEP_WRITE || v == WIRE_STEP_APPEND || compute);
        EXPECT_EQ(has(k, STEP_OUTPUT),
                  v == WIRE_STEP_READ || (compute && v != WIRE_STEP_VERIFY));
        EXPECT_EQ(has(k, STEP_INPUT2),
                  v == WIRE_STEP_VERIFY || v == WIRE_STEP_PATCH || v == WIRE_STEP_CONCAT);
        EXPECT_EQ(has(k, STEP_FILE), v == WIRE_STEP_CLOSE || v == WIRE_STEP_READ ||
                                         v == WIRE_STEP_WRITE || v == WIRE_STEP_APPEND ||
                                         v == WIRE_STEP_TRUNCATE || v == WIRE_STEP_FSYNC);
        EXPECT_EQ(has(k, STEP_PATH), v == WIRE_STEP_OPEN || v == WIRE_STEP_UNLINK);
        EXPECT_EQ(compute, v >= WIRE_STEP_CRC32C);
    }
    EXPECT_EQ(step_kind(WIRE_STEP_CRC32C)->out_size, 4);
    EXPECT_EQ(step_kind(WIRE_STEP_XXH3)->out_size, 8);
}
