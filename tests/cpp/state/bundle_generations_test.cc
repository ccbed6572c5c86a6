// Overwriting a checkpoint at its own prefix (Note [Overwriting a checkpoint in place]) and settling what a
// failed or killed save left (Note [Who may settle a save]), with hard links and without them.
#include "ember/state/bundle_generations.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ember/state/tensor_bundle.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

// The steps of BundleWriter::finish that the test hook sees, in order; the index lands at step 3.
const std::vector<std::string> kOverwriteSteps = {"temporary files written", "previous generation kept",
                                                  "data 0 in place", "index in place",
                                                  "previous generation removed"};
constexpr size_t kIndexLanded = 3;

// Each test runs with hard links (GetParam() false) and as on a file system that refuses them.
class BundleGenerationsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name());
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("ember_generations_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    set_bundle_hard_links_refused_for_testing(GetParam());
  }
  void TearDown() override {
    set_bundle_finish_hook_for_testing(nullptr);
    set_bundle_hard_links_refused_for_testing(false);
    fs::remove_all(dir_);
  }
  std::string prefix() const { return (dir_ / "ckpt").string(); }
  // The files in the directory, sorted; without the temporary files a killed save leaves unless `all`.
  std::vector<std::string> names(bool all = true) const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (all || name.find(".tempstate") == std::string::npos) out.push_back(std::move(name));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::vector<std::string> kBundle = {"ckpt.data-00000-of-00001", "ckpt.index"};

  fs::path dir_;
};

Status write_generation(const std::string& prefix, float value) {
  TensorRef v = TensorImpl::allocate(DType::kFloat32, Shape{2}).value();
  std::fill_n(static_cast<float*>(v->mutable_raw_data()), 2, value);
  BundleWriter w(prefix);
  EMBER_RETURN_IF_ERROR(w.add("v", v));
  EMBER_RETURN_IF_ERROR(w.add_string("generation", std::to_string(static_cast<int>(value))));
  return w.finish();
}

// The generation the bundle at `prefix` holds: every tensor must agree.
int generation_at(const std::string& prefix) {
  auto r = BundleReader::open(prefix);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return -1;
  auto v = r->read("v");
  auto g = r->read_string("generation");
  EXPECT_TRUE(v.ok() && g.ok()) << (v.ok() ? g.status() : v.status()).to_string();
  if (!v.ok() || !g.ok()) return -1;
  const float* x = static_cast<const float*>((*v)->raw_data());
  EXPECT_EQ(x[0], std::stof(*g));
  return std::stoi(*g);
}

TEST_P(BundleGenerationsTest, OverwriteFailingAtEveryStepLeavesOneWholeGeneration) {
  for (size_t step = 0; step < kOverwriteSteps.size(); ++step) {
    SCOPED_TRACE(kOverwriteSteps[step]);
    fs::remove_all(dir_);
    ASSERT_TRUE(write_generation(prefix(), 1).ok());
    set_bundle_finish_hook_for_testing([&](const std::string& at) {
      return at == kOverwriteSteps[step] ? make_error(Code::kUnavailable, "injected at ", at) : Status();
    });
    EXPECT_EQ(write_generation(prefix(), 2).code(), Code::kUnavailable);
    set_bundle_finish_hook_for_testing(nullptr);
    EXPECT_EQ(generation_at(prefix()), step >= kIndexLanded ? 2 : 1);
    // The failed save settled itself: only the bundle's own files are left.
    EXPECT_EQ(names(), kBundle);
    ASSERT_TRUE(write_generation(prefix(), 3).ok());
    EXPECT_EQ(generation_at(prefix()), 3);
  }
}

// A child process saves generation 2 over generation 1 and stops at `step`: killed there at once, or
// paused there, reporting on `paused_fd`, until the parent kills it.
pid_t save_in_child(const std::string& prefix, const std::string& step, int paused_fd) {
  const pid_t child = ::fork();
  if (child != 0) return child;
  set_bundle_finish_hook_for_testing([&](const std::string& at) {
    if (at != step) return Status();
    if (paused_fd < 0) ::kill(::getpid(), SIGKILL);
    (void)!::write(paused_fd, "p", 1);
    for (;;) ::pause();
  });
  (void)write_generation(prefix, 2);
  ::_exit(0);
}

void expect_killed(pid_t child) {
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
}

TEST_P(BundleGenerationsTest, OverwriteKilledAtEveryStepLeavesOneWholeGeneration) {
  for (size_t step = 0; step < kOverwriteSteps.size(); ++step) {
    SCOPED_TRACE(kOverwriteSteps[step]);
    fs::remove_all(dir_);
    ASSERT_TRUE(write_generation(prefix(), 1).ok());
    expect_killed(save_in_child(prefix(), kOverwriteSteps[step], -1));
    // Read as the killed save left it (the reader changes nothing), then settled by the next save.
    EXPECT_EQ(generation_at(prefix()), step >= kIndexLanded ? 2 : 1);
    EXPECT_EQ(generation_at(prefix()), step >= kIndexLanded ? 2 : 1);
    ASSERT_TRUE(write_generation(prefix(), 3).ok());
    EXPECT_EQ(generation_at(prefix()), 3);
    EXPECT_EQ(names(/*all=*/false), kBundle);
  }
}

// While the save is paused at a step it holds its files: readers see one whole generation and a settle
// changes nothing. Once it is killed, a settle (no save after it) leaves the bundle's files alone, of the
// generation readers saw.
TEST_P(BundleGenerationsTest, PausedSaveIsLeftAloneAndSettledOnceKilled) {
  for (size_t step = 0; step < kOverwriteSteps.size(); ++step) {
    SCOPED_TRACE(kOverwriteSteps[step]);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(write_generation(prefix(), 1).ok());
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = save_in_child(prefix(), kOverwriteSteps[step], pipe_fds[1]);
    char byte = 0;
    ASSERT_EQ(::read(pipe_fds[0], &byte, 1), 1);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    const int expected = step >= kIndexLanded ? 2 : 1;
    EXPECT_EQ(generation_at(prefix()), expected);
    const std::vector<std::string> while_paused = names();
    // Without hard links the previous generation was moved aside, index first: no index at the prefix
    // until the new one lands.
    const bool moved_aside = GetParam() && step > 0 && step < kIndexLanded;
    EXPECT_EQ(std::count(while_paused.begin(), while_paused.end(), "ckpt.index"), moved_aside ? 0 : 1);
    EXPECT_TRUE(bundle_exists(prefix()));
    EXPECT_TRUE(settle_abandoned_save(prefix(), /*temporary_files=*/true).ok());
    EXPECT_EQ(names(), while_paused);
    EXPECT_EQ(generation_at(prefix()), expected);
    ::kill(child, SIGKILL);
    expect_killed(child);
    EXPECT_EQ(generation_at(prefix()), expected);
    EXPECT_TRUE(settle_abandoned_save(prefix(), /*temporary_files=*/true).ok());
    EXPECT_EQ(names(), kBundle);
    EXPECT_EQ(generation_at(prefix()), expected);
  }
}

// Without temporary_files, a killed save's temporary files stay (TensorFlow's writers hold no locks).
TEST_P(BundleGenerationsTest, SettleLeavesTemporaryFilesUnlessAsked) {
  ASSERT_TRUE(write_generation(prefix(), 1).ok());
  expect_killed(save_in_child(prefix(), "temporary files written", -1));
  ASSERT_TRUE(settle_abandoned_save(prefix(), /*temporary_files=*/false).ok());
  EXPECT_GT(names().size(), kBundle.size());
  ASSERT_TRUE(settle_abandoned_save(prefix(), /*temporary_files=*/true).ok());
  EXPECT_EQ(names(), kBundle);
}

// Readers that open the prefix while saves overwrite it again and again get one whole generation each
// time, never the index of one and data of another (Note [Opening beside a save] in tensor_bundle.cc).
TEST_P(BundleGenerationsTest, ReadersBesideRepeatedOverwritesSeeOneGeneration) {
  ASSERT_TRUE(write_generation(prefix(), 1).ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int g = 2; g <= 150; ++g) EXPECT_TRUE(write_generation(prefix(), static_cast<float>(g)).ok());
    done = true;
  });
  int reads = 0, last = 1;
  while (!done) {
    const int g = generation_at(prefix());
    EXPECT_GE(g, last);  // never an older one than already seen
    last = std::max(last, g);
    ++reads;
  }
  writer.join();
  EXPECT_GT(reads, 0);
  EXPECT_EQ(generation_at(prefix()), 150);
}

INSTANTIATE_TEST_SUITE_P(HardLinks, BundleGenerationsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Refused" : "Linked"; });

}  // namespace
}  // namespace ember
