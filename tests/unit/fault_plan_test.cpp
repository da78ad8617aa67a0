// SPDX-License-Identifier: BSD-2-Clause
// SOFTRDMA_FAULTS parsing and the seeded decisions behind it.
#include "common/fault_plan.h"

#include <gtest/gtest.h>

using softrdma::FaultPlan;
using softrdma::parse_fault_plan;

TEST(FaultPlan, ParsesEveryKey) {
    FaultPlan p;
    const char *err = nullptr;
    ASSERT_TRUE(parse_fault_plan(
        "seed=7,rnr=0.25,reject=1,cm_drop=0,cm_delay=300,disconnect=0.01,qp_error_after=100", p,
        err));
    EXPECT_EQ(p.seed, 7u);
    EXPECT_DOUBLE_EQ(p.rnr, 0.25);
    EXPECT_DOUBLE_EQ(p.reject, 1);
    EXPECT_DOUBLE_EQ(p.cm_drop, 0);
    EXPECT_EQ(p.cm_delay_ms, 300u);
    EXPECT_DOUBLE_EQ(p.disconnect, 0.01);
    EXPECT_EQ(p.qp_error_after, 100u);
    EXPECT_TRUE(p.active);
}

TEST(FaultPlan, EmptyOrSeedOnlyInjectsNothing) {
    FaultPlan p;
    const char *err = nullptr;
    ASSERT_TRUE(parse_fault_plan("", p, err));
    EXPECT_FALSE(p.active);
    ASSERT_TRUE(parse_fault_plan("seed=9,", p, err));
    EXPECT_FALSE(p.active);
}

TEST(FaultPlan, RejectsMalformedItemsAndNamesThem) {
    const char *bad[] = {"rnr=1.5",      "rnr=-0.1",         "rnr=abc", "bogus=1",
                         "cm_delay=-5",  "cm_delay=9999999", "rnr",     "qp_error_after=0",
                         "seed=1,rnr=x", "reject=0.5junk"};
    for (const char *spec : bad) {
        FaultPlan p;
        p.rnr = 0.125;  // untouched on failure
        const char *err = nullptr;
        EXPECT_FALSE(parse_fault_plan(spec, p, err)) << spec;
        ASSERT_NE(err, nullptr) << spec;
        EXPECT_NE(std::string(spec).find(err), std::string::npos) << spec << " named " << err;
        EXPECT_DOUBLE_EQ(p.rnr, 0.125);
    }
}

// Decisions depend on the seed and the object's creation number only, so a program run twice
// with one seed meets the same faults; probabilities come out about right.
TEST(FaultDice, SameSeedSameDecisionsAndFairRates) {
    using softrdma::FaultDice;
    auto a = FaultDice::make(7, 0, 3), a2 = FaultDice::make(7, 0, 3);
    auto other_seed = FaultDice::make(8, 0, 3), other_obj = FaultDice::make(7, 0, 4);
    int hits = 0, same_seed = 0, same_other_seed = 0, same_other_obj = 0;
    for (int i = 0; i < 10000; ++i) {
        const bool x = a.roll(0.3);
        hits += x;
        same_seed += x == a2.roll(0.3);
        same_other_seed += x == other_seed.roll(0.3);
        same_other_obj += x == other_obj.roll(0.3);
    }
    EXPECT_EQ(same_seed, 10000);
    EXPECT_NEAR(hits, 3000, 300);
    EXPECT_LT(same_other_seed, 6500);  // independent: 0.3^2 + 0.7^2 = 58 % agree
    EXPECT_LT(same_other_obj, 6500);
    EXPECT_FALSE(a.roll(0));
    EXPECT_TRUE(a.roll(1));
}
