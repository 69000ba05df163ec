// One output policy for every command that writes (ordo pretrain, probe,
// analyze, report, forward, vocab train, data synth, data english):
//   - An output that already exists is refused unless the command is given
//     --overwrite; the message names the output and the flag. (An empty folder
//     counts as no output yet: there is nothing in it to lose.)
//   - The check is made with the command's other validation, before anything
//     is written, so a refused command leaves the disk as it found it.
//   - A folder output is built beside its place (.OUT.ordo-new-XXXXXX, same
//     parent) and swapped in whole at the end: an overwritten folder keeps no
//     file of the previous output, and a failure at any point before the swap
//     leaves the old one exactly as it was (and no half-built folder beside it).
//   - A file output is written atomically (base/file_io.h).
//   - An output path is taken as the kernel resolves it: ".." after a
//     symbolic link climbs from the link's target, and ".." after a folder
//     that does not exist yet is refused (creating the folder and climbing
//     out of it again would land on whatever exists there, unchecked).
//   - ordo's own files beside an output (its lock, its staging folders, a
//     fine-tuning grid's worker folders) are hidden and carry ".ordo-" in
//     their names (.OUT.ordo-lock, .OUT.ordo-new-XXXXXX,
//     .OUT.ordo-worker-RUN-XXXXXX), so no user file is taken for one; a
//     folder is removed as left over only when the marker written into it
//     at its creation says it is ordo's, made for that output, and no live
//     process holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
// reads: replacing the output would delete it), with or without --overwrite;
// and when its '..' follows a folder that does not exist (resolve_output_path).
// A file output's path may not end in '/'; a folder output's trailing slashes
// are dropped ("thesis.txt/" names the file thesis.txt, never replaced).
void check_output(const std::string& path, OutputKind kind, bool overwrite, const std::vector<InputPath>& inputs,
                  const std::string& flag = "--out");

// Where the kernel puts an output named `path`: an absolute path without "."
// or "..", every folder above the last part resolved physically (symbolic
// links followed), the last part as named (a link there is the output, not
// its target). Throws, naming `path` and `flag`, when ".." follows a folder
// that does not exist, or when a part above the last is not a folder.
std::string resolve_output_path(const std::string& path, const std::string& flag = "--out");

// Refuses an output that is, or holds, one of `inputs` (what the command
// reads), with or without --overwrite: check_output's rule, for commands
// whose output is not replaced whole (an experiment's folder).
void check_output_spares(const std::string& path, const std::vector<InputPath>& inputs, const std::string& flag = "--out");

// A name that becomes one part of a path ordo writes (an experiment's run,
// a fine-tuning task): letters, digits, '_', '-', '+', '=' and '.', not
// beginning with '.' (no ".", "..", no hidden name that could be ordo's own
// bookkeeping), at most 200 bytes. Throws "WHERE: 'NAME' ..." otherwise.
void check_path_name(const std::string& name, const std::string& where);

// ordo's bookkeeping file or folder of kind `kind` ("lock", "new", "worker-RUN")
// beside `out`: PARENT/.NAME.ordo-KIND (trailing slashes of `out` dropped).
std::string bookkeeping_path(const std::string& out, const std::string& kind);

// A bookkeeping folder made beside `out` (.NAME.ordo-KIND-XXXXXX), with a
// marker file inside that says it is ordo's and whose (its kind: the part of
// KIND before any '-', so "worker-RUN" is a "worker" folder); the marker is locked
// while this object lives, so that remove_stale_bookkeeping() by another
// process leaves it alone. Destroyed, it removes the folder (unless released).
class BookkeepingFolder {
 public:
  BookkeepingFolder(const std::string& out, const std::string& kind);
  ~BookkeepingFolder();
  BookkeepingFolder(BookkeepingFolder&& other) noexcept;
  BookkeepingFolder(const BookkeepingFolder&) = delete;
  BookkeepingFolder& operator=(const BookkeepingFolder&) = delete;
  BookkeepingFolder& operator=(BookkeepingFolder&&) = delete;

  const std::string& path() const { return path_; }
  // Removes the marker and forgets the folder, which this object then
  // neither removes nor vouches for (it is about to become an output).
  void release();

 private:
  std::string path_;
  int marker_fd_ = -1;
};

// Removes the bookkeeping folders of kind `kind` that a process which ended
// left beside `out`: only those whose marker names that kind and output and
// is held by no live process. Returns how many.
int64_t remove_stale_bookkeeping(const std::string& out, const std::string& kind);

// A folder output under construction: made beside `out` (as
// .OUT.ordo-new-XXXXXX, with any missing folders above it), written through
// path(), then swapped in by commit(). Destroyed uncommitted (an error), it
// removes what it made and `out` stays as it was; one left by a process that
// was killed (Ctrl-C before its handler, SIGKILL) is removed by the next
// StagedFolder of the same output.
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
  // Where it cannot be, it is left as .OUT.ordo-previous-XXXXXX, and said.
  void commit();
  // The same, but only into an empty place: false (and nothing moved) when
  // `out` already holds something, e.g. another process's output made meanwhile.
  bool commit_if_absent();

 private:
  std::string previous_name() const;  // .OUT.ordo-previous-XXXXXX: where the replaced output goes
  std::string out_;      // the physical place (resolve_output_path): messages, renames
  std::optional<BookkeepingFolder> folder_;
  std::string staging_;  // .OUT.ordo-new-XXXXXX
  std::string created_;  // the outermost folder made above the staging folder ("" if none)
  bool committed_ = false;
};

// A claim on an output that a command writes over time (a run, a fine-tuning
// grid, an experiment's run), so that a second ordo process given the same
// output is refused instead of writing into it too. The lock is the file
// .OUT.ordo-lock beside the output, holding a first line that says it is
// ordo's, then its owner's pid, host and command, and locked with flock()
// while the owner lives: the kernel releases it when the process ends,
// however it ends, so a lock file left by a process that died (SIGKILL, a
// crash) is stale, and is taken over and said. A lock path that is a
// symbolic link, not a regular file, or a file that is not ordo's lock is
// refused (never written through, never removed). Missing folders above OUT
// are made, and removed again at release when left empty.
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
