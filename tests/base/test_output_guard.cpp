// The output guard's parts (base/output.h) on a scratch folder: where an
// output path lands, which names may become a folder, and that ordo's
// bookkeeping (locks, staging and worker folders) never touches a file it
// cannot prove it made. Expected paths are worked out by hand from the
// folders each case makes.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/file_io.h"
#include "base/output.h"
#include "tests/helpers.h"

using ordo::test::TempDir;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::string canonical_path(const std::string& path) { return fs::canonical(path).string(); }

}  // namespace

TEST_CASE("resolve_output_path lands where the kernel would, and refuses '..' after a missing folder",
          "[output][paths]") {
  TempDir dir("resolve");
  const std::string root = canonical_path(dir.path);
  fs::create_directories(root + "/a/b");
  fs::create_directories(root + "/d1/d2");
  fs::create_directory_symlink(root + "/d1/d2", root + "/link");
  std::ofstream(root + "/file") << "x";
  CHECK(ordo::resolve_output_path(root + "/a/../out") == root + "/out");
  CHECK(ordo::resolve_output_path(root + "/a/b/../../out") == root + "/out");
  CHECK(ordo::resolve_output_path(root + "/./a//b/") == root + "/a/b");
  CHECK(ordo::resolve_output_path(root + "/a/b/..") == root + "/a");
  // '..' after a link climbs from its target, as the kernel does.
  CHECK(ordo::resolve_output_path(root + "/link/../out") == root + "/d1/out");
  // The last part is the output itself: a link there is not followed.
  CHECK(ordo::resolve_output_path(root + "/link") == root + "/link");
  CHECK(ordo::resolve_output_path(root + "/new/deeper/out") == root + "/new/deeper/out");
  CHECK_THROWS_WITH(ordo::resolve_output_path(root + "/nope/../a", "--out"),
                    Contains("--out '" + root + "/nope/../a': '..' follows '" + root + "/nope', which does not exist"));
  CHECK_THROWS_WITH(ordo::resolve_output_path(root + "/a/nope/x/../../b"), Contains("'..' follows '" + root + "/a/nope/x'"));
  CHECK_THROWS_WITH(ordo::resolve_output_path(root + "/file/x"), Contains("'" + root + "/file' is a file, not a folder"));
  CHECK_THROWS_WITH(ordo::resolve_output_path(root + "/file/../a"), Contains("is a file, not a folder"));
}

TEST_CASE("check_path_name takes plain names and refuses paths, dots and odd bytes", "[output][paths]") {
  for (const std::string good : {"rte", "02_ape_learned", "sweep_w0p011_s1", "x.lock", "a-b+c=d", "mr_random"})
    CHECK_NOTHROW(ordo::check_path_name(good, "here"));
  const std::pair<std::string, std::string> bad[] = {
      {"", "here: the name is empty"},
      {".", "here: '.' begins with '.'"},
      {"..", "here: '..' begins with '.'"},
      {"...", "here: '...' begins with '.'"},
      {".hidden", "here: '.hidden' begins with '.'"},
      {"a/b", "here: 'a/b' holds the character '/'"},
      {"../../victim", "holds the character '/'"},
      {"a\\b", "holds the character '\\'"},
      {"a b", "holds the character ' '"},
      {std::string("a\nb"), "(byte 10)"},
      {std::string(201, 'a'), "is 201 bytes long"},
  };
  for (const auto& [name, message] : bad) CHECK_THROWS_WITH(ordo::check_path_name(name, "here"), Contains(message));
}

TEST_CASE("an output lock never writes through a link, nor takes a file that is not ordo's", "[output][paths]") {
  TempDir dir("lock");
  const std::string out = dir / "run", lock = dir / ".run.ordo-lock";
  CHECK(ordo::bookkeeping_path(out, "lock") == lock);
  SECTION("a symbolic link at the lock's name") {
    dir.write("important.txt", "the only copy");
    fs::create_symlink("important.txt", lock);
    CHECK_THROWS_WITH(ordo::OutputLock(out, "test"), Contains("the lock file " + lock + " is a symbolic link"));
    CHECK(ordo::read_file(dir / "important.txt") == "the only copy");
    CHECK(fs::is_symlink(lock));
  }
  SECTION("a dangling link: nothing is created where it points") {
    fs::create_symlink(dir / "made-through-the-link", lock);
    CHECK_THROWS_WITH(ordo::OutputLock(out, "test"), Contains("is a symbolic link"));
    CHECK_FALSE(fs::exists(dir / "made-through-the-link"));
  }
  SECTION("a folder, a fifo") {
    fs::create_directory(lock);
    CHECK_THROWS_WITH(ordo::OutputLock(out, "test"), Contains("the lock file " + lock + " exists and is not a regular file"));
    fs::remove(lock);
    REQUIRE(::mkfifo(lock.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(ordo::OutputLock(out, "test"), Contains("exists and is not a regular file"));
  }
  SECTION("a user's file") {
    dir.write(".run.ordo-lock", "pid=1\nmy notes\n");
    CHECK_THROWS_WITH(ordo::OutputLock(out, "test"), Contains(lock + " exists and is not an ordo lock file"));
    CHECK(ordo::read_file(lock) == "pid=1\nmy notes\n");
  }
  SECTION("a lock left by a process that ended is taken over; OUT.lock beside it is someone else's") {
    dir.write("run.lock", "cargo's");
    dir.write(".run.ordo-lock", "ordo output lock\npid=999999999\nhost=h\ncommand=c\nsince=t\n");
    {
      ordo::OutputLock taken(out, "test");
      CHECK(taken.stale_owner() == "pid 999999999 on host h (c, since t)");
      // Held: a second claim is refused, naming the holder.
      std::string owner;
      CHECK(ordo::OutputLock::try_take(out, "second", &owner) == nullptr);
      CHECK_THAT(owner, Contains("pid " + std::to_string(::getpid())));
    }
    CHECK_FALSE(fs::exists(lock));
    CHECK(ordo::read_file(dir / "run.lock") == "cargo's");
  }
}

TEST_CASE("stale bookkeeping is removed only when its marker proves it this output's and no process holds it",
          "[output][paths]") {
  TempDir dir("bookkeeping");
  const std::string out = dir / "rte";
  auto folder_with_marker = [&](const std::string& name, const std::string& marker) {
    fs::create_directories(dir / name);
    dir.write(name + "/kept.txt", "x");
    if (!marker.empty()) dir.write(name + "/.ordo-bookkeeping", marker);
  };
  folder_with_marker(".rte.ordo-worker-lr_1_seed_1-AAAAAA", "ordo worker folder of rte\n");        // stale: removed
  folder_with_marker(".rte.ordo-worker-mine-BBBBBB", "");                                          // no marker
  folder_with_marker(".rte.ordo-worker-5.ordo-worker-r-CCCCCC", "ordo worker folder of rte.ordo-worker-5\n");
  folder_with_marker(".rte.ordo-worker-x-DDDDDD", "ordo new folder of rte\n");                     // another kind
  folder_with_marker("rte.worker-mydata", "ordo worker folder of rte\n");                          // not hidden
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / ".rte.ordo-worker-link-EEEEEE");           // a link
  dir.write("elsewhere/.ordo-bookkeeping", "ordo worker folder of rte\n");
  {
    ordo::BookkeepingFolder live(out, "worker-lr_2_seed_1");  // held by this process: left alone
    CHECK(fs::path(live.path()).filename().string().rfind(".rte.ordo-worker-lr_2_seed_1-", 0) == 0);
    CHECK(ordo::remove_stale_bookkeeping(out, "worker") == 1);
    CHECK(fs::exists(live.path()));
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".rte.ordo-worker-5.ordo-worker-r-CCCCCC", ".rte.ordo-worker-link-EEEEEE",
                                          ".rte.ordo-worker-mine-BBBBBB", ".rte.ordo-worker-x-DDDDDD", "elsewhere",
                                          "rte.worker-mydata"});
  CHECK(ordo::read_file(dir / "elsewhere/.ordo-bookkeeping") == "ordo worker folder of rte\n");
}

TEST_CASE("a staged folder leaves no marker in the output, and commit_if_absent never replaces what is there",
          "[output][paths]") {
  TempDir dir("staged");
  const std::string out = dir / "exp";
  {
    ordo::StagedFolder first(out);
    ordo::write_file_atomic(first.path() + "/a.txt", "first");
    ordo::StagedFolder second(out);  // the first is live: not taken for a stale one
    ordo::write_file_atomic(second.path() + "/a.txt", "second");
    CHECK(first.commit_if_absent());
    CHECK_FALSE(second.commit_if_absent());
  }
  CHECK(ordo::read_file(out + "/a.txt") == "first");
  CHECK_FALSE(fs::exists(out + "/.ordo-bookkeeping"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  CHECK(left == std::vector<std::string>{"exp"});
  // An empty folder holds nothing: it is taken.
  fs::create_directories(dir / "empty");
  ordo::StagedFolder third(dir / "empty");
  ordo::write_file_atomic(third.path() + "/b.txt", "third");
  CHECK(third.commit_if_absent());
  CHECK(ordo::read_file(dir / "empty/b.txt") == "third");
}

TEST_CASE("an output that replaces a link its own path went through leaves nothing beside it",
          "[output][paths]") {
  // box/in_link -> box/x/y, and the output "box/in_link/../../in_link" is the
  // link itself: swapped in, the new folder takes the link's place, after
  // which the given spelling climbs from box/in_link, a real folder now, to
  // box's parent. Names derived from the spelling (the staged folder, the
  // replaced output's) would then point elsewhere, and the replaced link was
  // left beside the output as a staging folder (found by fuzz_output_path).
  TempDir dir("relink");
  const std::string root = canonical_path(dir.path);
  fs::create_directories(root + "/box/x/y");
  std::ofstream(root + "/box/x/y/keep.txt") << "kept";
  fs::create_directory_symlink(root + "/box/x/y", root + "/box/in_link");
  ordo::write_folder(root + "/box/in_link/../../in_link", {{"out.txt", "new"}});
  CHECK(fs::is_directory(fs::symlink_status(root + "/box/in_link")));
  CHECK(ordo::read_file(root + "/box/in_link/out.txt") == "new");
  CHECK(ordo::read_file(root + "/box/x/y/keep.txt") == "kept");  // the link's target is not the output
  std::vector<std::string> beside;
  for (const auto& entry : fs::directory_iterator(root + "/box")) beside.push_back(entry.path().filename().string());
  std::sort(beside.begin(), beside.end());
  CHECK(beside == std::vector<std::string>{"in_link", "x"});
}
