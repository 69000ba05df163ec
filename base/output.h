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

#include <string>
#include <utility>
#include <vector>

namespace ordo {

enum class OutputKind { file, folder };

// Refuses `path` as an output, naming it and `flag` (the command-line flag
// that gave it), when it exists and `overwrite` is false, when it exists as
// the other kind (a file where a folder is asked for, or the reverse: never
// replaced, even with --overwrite), when a folder above it is a file, or when
// it holds the current folder.
void check_output(const std::string& path, OutputKind kind, bool overwrite, const std::string& flag = "--out");

// Refuses an output that is, or holds, `input` — something the command
// reads, given by `input_flag` — since replacing the output would delete it.
void check_output_spares(const std::string& out, const std::string& input, const std::string& input_flag,
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
  void commit();

 private:
  std::string out_;      // as given, trailing slashes dropped (messages, renames)
  std::string staging_;  // OUT.new-XXXXXX
  std::string created_;  // the outermost folder made above the staging folder ("" if none)
  bool committed_ = false;
};

// The common case: files (names relative to the folder, sub-folders allowed)
// rendered in memory, written into a staged folder and swapped in for `out`.
void write_folder(const std::string& out, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace ordo
