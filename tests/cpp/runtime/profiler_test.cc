#include "ember/runtime/profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <variant>

#include "ember/api/profiler.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember::profiler {
namespace {

// ---- A minimal JSON parser: enough to prove the trace is valid JSON and to read it back. ----------------

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>,
               std::shared_ptr<JsonObject>>
      value;
  const JsonObject& object() const { return *std::get<std::shared_ptr<JsonObject>>(value); }
  const JsonArray& array() const { return *std::get<std::shared_ptr<JsonArray>>(value); }
  const std::string& str() const { return std::get<std::string>(value); }
  double number() const { return std::get<double>(value); }
  const Json& operator[](const std::string& key) const { return object().at(key); }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  // Parses the whole text; fails (with the offset) on anything RFC 8259 rejects.
  Json parse_document() {
    Json v = parse_value();
    skip_space();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool consume_literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  Json parse_value() {
    char c = peek();
    if (c == '{') return parse_object();
    if (c == '[') return parse_array();
    if (c == '"') return Json{parse_string()};
    if (consume_literal("true")) return Json{true};
    if (consume_literal("false")) return Json{false};
    if (consume_literal("null")) return Json{nullptr};
    return parse_number();
  }
  Json parse_object() {
    expect('{');
    auto obj = std::make_shared<JsonObject>();
    if (peek() == '}') {
      ++pos_;
      return Json{obj};
    }
    while (true) {
      if (peek() != '"') fail("expected a key");
      std::string key = parse_string();
      expect(':');
      (*obj)[key] = parse_value();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return Json{obj};
    }
  }
  Json parse_array() {
    expect('[');
    auto arr = std::make_shared<JsonArray>();
    if (peek() == ']') {
      ++pos_;
      return Json{arr};
    }
    while (true) {
      arr->push_back(parse_value());
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return Json{arr};
    }
  }
  Json parse_number() {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == d) fail("expected a digit");
    };
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;
    else
      digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    return Json{std::stod(std::string(s_.substr(start, pos_ - start)))};
  }
  void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      unsigned char c = s_[pos_++];
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          append_utf8(out, static_cast<uint32_t>(std::stoul(std::string(s_.substr(pos_, 4)), nullptr, 16)));
          pos_ += 4;
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

Json parse_json(const std::string& text) { return JsonParser(text).parse_document(); }

// ---- Helpers ----------------------------------------------------------------------------------------------

Node make_node(const char* op, std::string name, std::string file = "", int line = 0) {
  Node n;
  n.op = &op_def(op);
  n.name = std::move(name);
  n.location.file = std::move(file);
  n.location.line = line;
  return n;
}

// Records `node` as having taken `duration_ns`, starting now.
void record_for(const Node& node, int64_t duration_ns, int64_t bytes = 0, std::string_view function = "f") {
  int64_t start = now_ns();
  record({function, &node, start, start + duration_ns, bytes});
}

std::vector<const Json*> complete_events(const Json& trace) {
  std::vector<const Json*> out;
  for (const Json& e : trace["traceEvents"].array())
    if (e["ph"].str() == "X") out.push_back(&e);
  return out;
}

// ---- Tests --------------------------------------------------------------------------------------------

TEST(Profiler, InactiveUntilACollectorStarts) {
  EXPECT_FALSE(active());
  Node n = make_node("MatMul", "MatMul");
  record_for(n, 10);  // ignored: nobody records
  Collector c;
  EXPECT_TRUE(active());
  auto p = c.stop();
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(active());
  EXPECT_TRUE(p->events.empty());
}

TEST(Profiler, RecordsEveryNodeOfAStagedFunctionCall) {
  auto f =
      ember::function([](const Tensor& x) { return ember::tanh(ember::matmul(x, x)) + 1.0f; }, "profiled");
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  f(x);  // traces
  Collector c;
  f(x);
  f(x);
  auto p = c.stop();
  ASSERT_TRUE(p.ok());
  for (const Event& e : p->events) {
    EXPECT_EQ(e.function, "profiled");
    EXPECT_GE(e.duration_ns(), 0);
    EXPECT_GE(e.start_ns, p->start_ns);
    EXPECT_LE(e.end_ns, p->end_ns);
  }
  // The executor may run an optimized graph (fused element-wise nodes), so compare the two calls with each
  // other rather than with the traced graph: the same nodes, in the same order, once per call.
  ASSERT_FALSE(p->events.empty());
  ASSERT_EQ(p->events.size() % 2, 0u);
  const size_t per_call = p->events.size() / 2;
  for (size_t i = 0; i < per_call; ++i) EXPECT_EQ(p->events[i].node, p->events[i + per_call].node);
  int matmuls = 0;
  for (const Event& e : p->events)
    if (e.op == "MatMul") {
      ++matmuls;
      EXPECT_EQ(e.output_bytes, 4 * 4);  // a 2x2 float32
    }
  EXPECT_EQ(matmuls, 2);
}

TEST(Profiler, ChromeTraceIsValidJsonWithEscapedStrings) {
  const std::string nasty =
      "we\"ird\\name\n\t\x01 \xc3\xa9 \xff end";  // quote, backslash, controls, é, bad byte
  Node n = make_node("MatMul", nasty, "/src/my \"model\".py", 42);
  Node m = make_node("Tanh", "Tanh", "model.py", 7);
  Collector c;
  record_for(n, 2000, 64, "fn\"1");
  record_for(m, 1000, 16);
  const int64_t span_start = now_ns();
  record_span("step \"1\"", "train.py:3", span_start, span_start + 500);
  auto p = c.stop();
  ASSERT_TRUE(p.ok());
  std::string text = p->to_chrome_trace_json();
  Json trace;
  ASSERT_NO_THROW(trace = parse_json(text)) << text;
  EXPECT_EQ(trace["displayTimeUnit"].str(), "ns");
  auto events = complete_events(trace);
  ASSERT_EQ(events.size(), 3u);
  const Json& matmul = *events[0];
  EXPECT_EQ(matmul["name"].str(), "MatMul");
  EXPECT_EQ(matmul["cat"].str(), "node");
  EXPECT_EQ(matmul["args"]["node"].str(), "we\"ird\\name\n\t\x01 \xc3\xa9 \xef\xbf\xbd end");
  EXPECT_EQ(matmul["args"]["function"].str(), "fn\"1");
  EXPECT_EQ(matmul["args"]["location"].str(), "my \"model\".py:42");
  EXPECT_EQ(matmul["args"]["bytes"].number(), 64);
  EXPECT_NEAR(matmul["dur"].number(), 2.0, 0.0015);  // microseconds
  EXPECT_GE(matmul["ts"].number(), 0.0);
  const Json& span = *events[2];  // events are sorted by start
  EXPECT_EQ(span["cat"].str(), "user");
  EXPECT_EQ(span["name"].str(), "step \"1\"");
  EXPECT_EQ(span["args"]["location"].str(), "train.py:3");
  // Process and thread names come as metadata events.
  std::set<std::string> metadata;
  for (const Json& e : trace["traceEvents"].array())
    if (e["ph"].str() == "M") metadata.insert(e["name"].str());
  EXPECT_TRUE(metadata.count("process_name"));
  EXPECT_TRUE(metadata.count("thread_name"));
}

TEST(Profiler, JsonQuoteHandlesEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  ASSERT_NO_THROW(parse_json(json_quote(all)));
  EXPECT_EQ(json_quote("a\"b\\c\x1f"), "\"a\\\"b\\\\c\\u001f\"");
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // an encoded surrogate is not UTF-8
  EXPECT_EQ(json_quote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");   // an emoji is
}

TEST(Profiler, TableListsTheSlowestFirst) {
  Node slow = make_node("MatMul", "dense/MatMul", "model.py", 10);
  Node mid = make_node("Tanh", "Tanh", "model.py", 11);
  Node fast = make_node("Square", "Square", "model.py", 12);
  Collector c;
  record_for(fast, 1000);
  record_for(slow, 50000, 4096);
  record_for(mid, 20000);
  record_for(fast, 1000);
  auto p = c.stop();
  ASSERT_TRUE(p.ok());
  auto ops = p->by_op();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "MatMul");
  EXPECT_EQ(ops[1].name, "Tanh");
  EXPECT_EQ(ops[2].name, "Square");
  EXPECT_EQ(ops[2].count, 2);
  EXPECT_EQ(ops[2].total_ns, 2000);
  EXPECT_EQ(ops[0].bytes, 4096);
  auto nodes = p->by_node();
  EXPECT_EQ(nodes[0].name, "dense/MatMul");
  EXPECT_EQ(nodes[0].location, "model.py:10");
  std::string table = p->summary_table(2);
  auto row = [&](const std::string& s) { return table.find("  " + s + " "); };
  EXPECT_NE(row("MatMul"), std::string::npos) << table;
  EXPECT_LT(row("MatMul"), row("Tanh")) << table;
  EXPECT_NE(table.find("1 more"), std::string::npos) << table;  // Square is cut at top 2
  EXPECT_NE(table.find("69.4%"), std::string::npos) << table;   // 50 of 72 us
  EXPECT_NE(table.find("model.py:10"), std::string::npos) << table;
}

TEST(Profiler, ConcurrentRecordingFromManyThreads) {
  constexpr int kThreads = 8, kEvents = 20000;
  std::vector<Node> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(make_node("Add", "Add_" + std::to_string(i)));
  Collector c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEvents; ++i) record_for(nodes[i % nodes.size()], 10, 8);
    });
  for (std::thread& t : threads) t.join();  // the threads exit before stop(): their events survive
  auto p = c.stop();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->events.size(), static_cast<size_t>(kThreads * kEvents));
  std::set<int> thread_ids;
  for (const Event& e : p->events) thread_ids.insert(e.thread);
  EXPECT_EQ(thread_ids.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(p->threads.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(p->by_op()[0].count, kThreads * kEvents);
  EXPECT_NO_THROW(parse_json(p->to_chrome_trace_json()));
}

// The cost per event is printed for whoever reads the log (tens of ns; a kernel is ~µs); it is not asserted:
// timings belong to bench/, and a loaded CI machine (the ASan job) measured 2.4 µs.
TEST(Profiler, LongSessionsKeepEveryEvent) {
  std::vector<Node> nodes;
  for (int i = 0; i < 64; ++i)
    nodes.push_back(make_node("Add", "Add_" + std::to_string(i), "model.py", i + 1));
  constexpr int kEvents = 200000;
  int64_t per_event = 0;
  for (int round = 0; round < 2; ++round) {  // the second round finds the buffer grown
    Collector c;
    int64_t t0 = now_ns();
    for (int i = 0; i < kEvents; ++i) record({"function", &nodes[i % nodes.size()], t0, t0 + 1, 8});
    per_event = (now_ns() - t0) / kEvents;
    auto p = c.stop();
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->events.size(), static_cast<size_t>(kEvents));
  }
  std::printf("profiler::record: %lld ns/event\n", static_cast<long long>(per_event));
}

TEST(Profiler, SessionsNestAndOverlap) {
  Node a = make_node("Add", "A"), b = make_node("Add", "B"), cc = make_node("Add", "C");
  auto outer = std::make_unique<Collector>();
  record_for(a, 0);
  auto inner = std::make_unique<Collector>();
  record_for(b, 0);
  auto inner_profile = inner->stop();
  record_for(cc, 0);
  auto outer_profile = outer->stop();
  ASSERT_TRUE(inner_profile.ok() && outer_profile.ok());
  auto names = [](const Profile& p) {
    std::string s;
    for (const Event& e : p.events) s += e.node;
    return s;
  };
  EXPECT_EQ(names(*inner_profile), "B");
  EXPECT_EQ(names(*outer_profile), "ABC");
  // Stopping twice fails clearly.
  auto again = outer->stop();
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(active());
}

TEST(Profiler, GlobalSessionLikeTensorFlowsStartStop) {
  EXPECT_EQ(stop_global().status().code(), Code::kUnavailable);
  ASSERT_TRUE(start_global().ok());
  EXPECT_EQ(start_global().code(), Code::kAlreadyExists);
  Node n = make_node("Add", "Add");
  record_for(n, 5);
  auto p = stop_global();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->events.size(), 1u);
  EXPECT_FALSE(global_started());
}

TEST(Profiler, CppFacadeProfilesAndThrows) {
  auto f = ember::function([](const Tensor& x) { return ember::square(x); }, "sq");
  Tensor x(3.0f);
  f(x);
  Profile p = ember::profiler::profile([&] { f(x); });
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].op, "Square");
  ember::profiler::Session s;
  EXPECT_TRUE(s.recording());
  s.stop();
  EXPECT_THROW(s.stop(), StatusError);
  EXPECT_THROW(ember::profiler::stop(), StatusError);
  EXPECT_THROW(ember::profiler::save_chrome_trace(p, "/nonexistent-dir/x.json"), StatusError);
}

}  // namespace
}  // namespace ember::profiler
