// The shared behavioural suite on the memory-only store and the tiered store over a fake
// durable layer (sync and async).
#include "harnesses.h"

namespace skydb::testing {

INSTANTIATE_TEST_SUITE_P(
    Backends, StoreBehaviour,
    ::testing::Values(
        NamedFactory{"Memory", [] { return std::make_unique<MemoryHarness>(); }},
        NamedFactory{
            "TieredSync",
            [] { return std::make_unique<FakeTieredHarness>(FakeOptions(Durability::kSync)); }},
        NamedFactory{
            "TieredAsync",
            [] { return std::make_unique<FakeTieredHarness>(FakeOptions(Durability::kAsync)); }},
        NamedFactory{"SharedSync",
                     [] {
                       return std::make_unique<FakeTieredHarness>(
                           FakeOptions(Durability::kSync, /*shared=*/true));
                     }}),
    FactoryName);

}  // namespace skydb::testing
