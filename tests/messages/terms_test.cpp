// Schema v2 term names: vocabulary terms (group + known) and named terms read back under one
// name, in code (term_name, term_named) and in the JSON view.
#include <gtest/gtest.h>

#include "messages/codec.hpp"
#include "messages/terms.hpp"

namespace colony::testing {
namespace {

namespace fb = flatbuffers;

// One NodeBatchResourceUpdated with the given terms: (group, name, value) for vocabulary terms
// written by number, or a full name written as a string when group is empty.
messages::byte_buffer record_with(
    const std::vector<std::tuple<std::string, std::string, std::int64_t>>& ts) {
  messages::event_builder b;
  auto& f = b.fbb();
  std::vector<fb::Offset<wire::Term>> terms;
  for (const auto& [group, name, value] : ts) {
    if (group.empty()) {
      const auto n = f.CreateString(name);
      const auto u = f.CreateString("bytes");
      terms.push_back(wire::CreateTerm(f, n, value, u));
      continue;
    }
    const auto key = messages::term_key_of(group, name);
    EXPECT_TRUE(key.by_vocabulary()) << group << "." << name;
    const auto u = f.CreateString("bytes");
    wire::TermBuilder tb(f);
    tb.add_value(value);
    tb.add_unit(u);
    tb.add_known(key.known);
    tb.add_group(key.group);
    terms.push_back(tb.Finish());
  }
  const auto vec = f.CreateVector(terms);
  const auto node = f.CreateString("node-a");
  wire::NodeBatchResourceUpdatedBuilder nb(f);
  nb.add_node(node);
  nb.add_terms(vec);
  const auto payload = nb.Finish();
  auto rec =
      b.finish({event_time{1000}, wire::EntityKind::Node, "node-a", 0, "slo-controller"}, payload);
  EXPECT_TRUE(messages::patch_offset(rec, 7));
  return rec;
}

TEST(TermNames, VocabularyAndNamedTermsReadTheSame) {
  const auto rec = record_with({{"batch-cpu", "nodeCapacity", 32000},
                                {"mid", "resetReason", 0},
                                {"", "batch-cpu.nodeCapacity", 32000},
                                {"", "kubernetes.io/batch-cpu", 5}});
  auto d = messages::decode(rec, "test");
  ASSERT_TRUE(d) << d.error().describe();
  const auto* ts = d->envelope->payload_as_NodeBatchResourceUpdated()->terms();
  ASSERT_EQ(ts->size(), 4u);
  EXPECT_EQ(messages::term_name(*ts->Get(0)), "batch-cpu.nodeCapacity");
  EXPECT_EQ(messages::term_name(*ts->Get(1)), "mid.resetReason");
  EXPECT_EQ(messages::term_name(*ts->Get(2)), "batch-cpu.nodeCapacity");
  EXPECT_EQ(messages::term_name(*ts->Get(3)), "kubernetes.io/batch-cpu");
  EXPECT_TRUE(messages::term_named(*ts->Get(0), "batch-cpu.nodeCapacity"));
  EXPECT_FALSE(messages::term_named(*ts->Get(0), "batch-memory.nodeCapacity"));
  EXPECT_FALSE(messages::term_named(*ts->Get(0), "batch-cpu.nodeCapacit"));
  EXPECT_TRUE(messages::term_named(*ts->Get(1), "mid.resetReason"));
  EXPECT_FALSE(messages::term_named(*ts->Get(1), "batch.resetReason"));
  EXPECT_TRUE(messages::term_named(*ts->Get(2), "batch-cpu.nodeCapacity"));
  // The vocabulary term is smaller on the wire than the same term by name.
  EXPECT_EQ(ts->Get(0)->name(), nullptr);
  // JSON shows both forms with the composed name first, as v1 printed terms.
  const auto j = messages::to_json(rec);
  ASSERT_TRUE(j);
  EXPECT_NE(j->find(R"({"name":"batch-cpu.nodeCapacity","value":32000,"unit":"bytes"},)"
                    R"({"name":"mid.resetReason","unit":"bytes"},)"
                    R"({"name":"batch-cpu.nodeCapacity","value":32000,"unit":"bytes"})"),
            std::string::npos)
      << *j;
  EXPECT_EQ(j->find("known"), std::string::npos) << *j;
}

TEST(TermNames, NamesOutsideTheVocabularyStayStrings) {
  EXPECT_FALSE(messages::term_key_of("batch-cpu", "noSuchTerm").by_vocabulary());
  EXPECT_FALSE(messages::term_key_of("no-such-group", "nodeCapacity").by_vocabulary());
  EXPECT_EQ(messages::term_group("mid-memory"), wire::TermGroup::mid_memory);
  EXPECT_EQ(messages::known_term("unnamed"), wire::TermName::unnamed);
  // Every vocabulary value has a name that maps back to it (the table is one-to-one).
  std::size_t n = 0;
  for (const auto v : wire::EnumValuesTermName()) {
    if (v == wire::TermName::unnamed) continue;
    EXPECT_EQ(messages::known_term(wire::EnumNameTermName(v)), v);
    ++n;
  }
  EXPECT_GT(n, 80u);
}

TEST(TermNames, ARecordFromANewerVocabularyStillGetsAName) {
  auto rec = record_with({{"sync", "reason", 0}});
  auto d = messages::decode(rec, "test");
  ASSERT_TRUE(d);
  auto* env = wire::GetMutableEnvelope(rec.data());
  auto* p = const_cast<wire::NodeBatchResourceUpdated*>(env->payload_as_NodeBatchResourceUpdated());
  auto* t = const_cast<wire::Term*>(p->terms()->Get(0));
  ASSERT_TRUE(t->mutate_known(static_cast<wire::TermName>(60000)));
  EXPECT_EQ(messages::term_name(*t), "sync.#60000");
}

}  // namespace
}  // namespace colony::testing
