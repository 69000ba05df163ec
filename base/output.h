// One output policy for every command that writes (ordo pretrain, probe,
// analyze, report, forward, vocab train, data synth, data english):
//   - An output that already exists is refused unless the command is given
//     --overwrite; the message names the output and the flag. (An empty folder
//     counts as no output yet: there is nothing in it to lose.)
//   - The check is made with the command's other validation, before anything
//     is written, so a refused command leaves the disk as it found it.
//   - A folder output is built beside its place (OUT.new-XXXXXX, same parent)
//     and swapped in whole at the end: an overwritten folder keeps no file of
//     the previous output, and a failure at any point before the swap leaves
//     the old one exactly as it was (and no half-built folder beside it).
//   - A file output is written atomically (base/file_io.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ordo {

enum class OutputKind { file, folder };

// Something a command reads, and where the user named it ("--config",
// "data.corpus", "the \"extends\" of configs/a.json"): the output guard
// refuses an output that would delete it.
struct InputPath {
  std::string path;
  std::string given_by;
};

// The one output guard of every command that writes. Refuses `path` as an
// output, naming it and `flag` (the command-line flag that gave it), when it
// exists and `overwrite` is false, when it exists as the other kind (a file
// where a folder is asked for, or the reverse: never replaced, even with
// --overwrite), when a folder above it is a file, when it holds the current
// folder — and when it is, or holds, any of `inputs` (what the command
// reads: replacing the output would delete it), with or without --overwrite.
void check_output(const std::string& path, OutputKind kind, bool overwrite, const std::vector<InputPath>& inputs,
                  const std::string& flag = "--out");

// A folder output under construction: made beside `out` (as OUT.new-XXXXXX,
// with any missing folders above it), written through path(), then swapped in
// by commit(). Destroyed uncommitted (an error, Ctrl-C), it removes what it
// made and `out` stays as it was.
class StagedFolder {
 public:
  explicit StagedFolder(const std::string& out);
  ~StagedFolder();
  StagedFolder(StagedFolder&& other) noexcept;
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;
  StagedFolder& operator=(StagedFolder&&) = delete;

  const std::string& path() const { return staging_; }  // where to write until commit()
  bool committed() const { return committed_; }
  // Takes the output's place: one atomic exchange where the file system
  // supports it (else the old folder is moved aside first, and moved back if
  // the new one cannot take its place); the previous output is then removed.
  // Where it cannot be, it is left as OUT.previous-XXXXXX, and said.
  void commit();

 private:
  std::string previous_name() const;  // OUT.previous-XXXXXX: where the replaced output goes
  std::string out_;      // as given, trailing slashes dropped (messages, renames)
  std::string staging_;  // OUT.new-XXXXXX
  std::string created_;  // the outermost folder made above the staging folder ("" if none)
  bool committed_ = false;
};

// A claim on an output that a command writes over time (a run, a fine-tuning
// grid, an experiment's run), so that a second ordo process given the same
// output is refused instead of writing into it too. The lock is the file
// OUT.lock beside the output, holding its owner's pid, host and command, and
// locked with flock() while the owner lives: the kernel releases it when the
// process ends, however it ends, so a lock file left by a process that died
// (SIGKILL, a crash) is stale, and is taken over and said. Missing folders
// above OUT are made, and removed again at release when left empty.
class OutputLock {
 public:
  // Takes the lock, or throws ordo::Error naming the output and the process
  // that holds it (pid, host, command, since when).
  OutputLock(const std::string& out, const std::string& command);
  // The same, but returns nothing when another process holds the lock (an
  // experiment skips the runs another process is running), and says who in `owner`.
  static std::unique_ptr<OutputLock> try_take(const std::string& out, const std::string& command,
                                              std::string* owner = nullptr);
  ~OutputLock();  // removes the lock file, then releases it
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  const std::string& path() const { return path_; }
  // Who held the lock before, when it was taken over from a process that had
  // ended ("pid 4711 on host a, ordo pretrain, since ..."): "" otherwise.
  const std::string& stale_owner() const { return stale_owner_; }

 private:
  OutputLock() = default;
  // Returns false (and fills `owner`) when another live process holds it.
  bool take(const std::string& out, const std::string& command, std::string* owner);
  void release();         // removes the lock file and the folders made for it, then unlocks
  void remove_created();  // the folders made for the lock, when left empty
  std::string path_;
  std::string created_;  // the outermost folder made for the lock ("" if none)
  std::string stale_owner_;
  int fd_ = -1;
};

// The common case: files (names relative to the folder, sub-folders allowed)
// rendered in memory, written into a staged folder and swapped in for `out`.
void write_folder(const std::string& out, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace ordo
