#include "support/fakes.h"

namespace skydb::testing {
namespace {

std::string ParentOf(const std::string& path) {
  auto pos = path.rfind('/');
  if (pos == std::string::npos || pos == 0) return "/";
  return path.substr(0, pos);
}

}  // namespace

std::string FakeFileSystem::Resolve(const std::string& path) const {
  // Resolve symlinks on every prefix, a bounded number of times.
  std::string current = path;
  for (int hops = 0; hops < 16; ++hops) {
    bool changed = false;
    for (const auto& [link, target] : symlinks_) {
      if (current == link || current.rfind(link + "/", 0) == 0) {
        current = target + current.substr(link.size());
        changed = true;
        break;
      }
    }
    if (!changed) break;
  }
  return current;
}

void FakeFileSystem::EnsureParents(const std::string& path) {
  std::string parent = ParentOf(path);
  if (parent == path) return;
  if (nodes_.count(parent) == 0) {
    EnsureParents(parent);
    Node dir;
    dir.info.type = FileType::kDirectory;
    dir.info.mode = 0755;
    nodes_[parent] = dir;
  }
}

void FakeFileSystem::AddFile(const std::string& path, const std::string& contents, uint32_t mode) {
  EnsureParents(path);
  Node node;
  node.info.type = FileType::kRegular;
  node.info.mode = mode;
  node.info.size = contents.size();
  node.contents = contents;
  nodes_[path] = node;
}

void FakeFileSystem::AddDir(const std::string& path, uint32_t mode) {
  EnsureParents(path);
  Node node;
  node.info.type = FileType::kDirectory;
  node.info.mode = mode;
  nodes_[path] = node;
}

void FakeFileSystem::SetOwner(const std::string& path, uid_t uid, gid_t gid) {
  auto it = nodes_.find(path);
  if (it != nodes_.end()) {
    it->second.info.uid = uid;
    it->second.info.gid = gid;
  }
}

void FakeFileSystem::AddSymlink(const std::string& path, const std::string& target) {
  EnsureParents(path);
  symlinks_[path] = target;
}

Result<std::string> FakeFileSystem::ReadFile(const std::string& path) const {
  auto it = nodes_.find(Resolve(path));
  if (it == nodes_.end()) return Error::NotFound("cannot open " + path + ": No such file");
  if (it->second.info.type != FileType::kRegular) {
    return Error::Io("cannot read " + path + ": Is a directory");
  }
  return it->second.contents;
}

Result<FileInfo> FakeFileSystem::Stat(const std::string& path) const {
  auto it = nodes_.find(Resolve(path));
  if (it == nodes_.end()) return Error::NotFound("cannot stat " + path + ": No such file");
  return it->second.info;
}

Result<std::vector<std::string>> FakeFileSystem::ListDir(const std::string& path) const {
  std::string dir = Resolve(path);
  auto it = nodes_.find(dir);
  if (it == nodes_.end()) return Error::NotFound("cannot list " + path + ": No such directory");
  std::vector<std::string> names;
  std::string prefix = dir == "/" ? "/" : dir + "/";
  for (const auto& [p, node] : nodes_) {
    if (p.size() > prefix.size() && p.rfind(prefix, 0) == 0 &&
        p.find('/', prefix.size()) == std::string::npos) {
      names.push_back(p.substr(prefix.size()));
    }
  }
  for (const auto& [p, target] : symlinks_) {
    if (p.size() > prefix.size() && p.rfind(prefix, 0) == 0 &&
        p.find('/', prefix.size()) == std::string::npos) {
      names.push_back(p.substr(prefix.size()));
    }
  }
  return names;
}

bool FakeFileSystem::IsExecutable(const std::string& path) const {
  auto it = nodes_.find(Resolve(path));
  return it != nodes_.end() && it->second.info.type == FileType::kRegular &&
         (it->second.info.mode & 0111) != 0;
}

Result<std::string> FakeFileSystem::RealPath(const std::string& path) const {
  std::string resolved = Resolve(path);
  if (nodes_.count(resolved) == 0) return Error::NotFound("cannot resolve " + path);
  return resolved;
}

Status FakeFileSystem::WriteFileAtomic(const std::string& path, const std::string& contents,
                                       uint32_t mode) {
  AddFile(path, contents, mode);
  return Ok();
}

Status FakeFileSystem::MakeDir(const std::string& path, uint32_t mode) {
  if (nodes_.count(path) != 0) return Error::Conflict("cannot create " + path + ": File exists");
  if (nodes_.count(ParentOf(path)) == 0) {
    return Error::NotFound("cannot create " + path + ": No such file or directory");
  }
  AddDir(path, mode);
  return Ok();
}

Status FakeFileSystem::Chmod(const std::string& path, uint32_t mode) {
  auto it = nodes_.find(Resolve(path));
  if (it == nodes_.end()) return Error::NotFound("cannot chmod " + path + ": No such file");
  it->second.info.mode = mode & 07777;
  return Ok();
}

Status FakeFileSystem::Rename(const std::string& from, const std::string& to) {
  if (nodes_.count(from) == 0) return Error::NotFound("cannot rename " + from + ": No such file");
  // The node and, for a directory, everything under it.
  std::map<std::string, Node> moved;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->first == from || it->first.rfind(from + "/", 0) == 0) {
      moved[to + it->first.substr(from.size())] = it->second;
      it = nodes_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [path, node] : moved) nodes_[path] = node;
  return Ok();
}

Result<CommandOutput> FakeProcessRunner::Run(const CommandSpec& spec) {
  std::string line;
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    if (i > 0) line += ' ';
    line += spec.argv[i];
  }
  calls_.push_back(line);
  auto it = answers_.find(line);
  if (it == answers_.end()) return Error::NotFound("cannot run " + spec.argv.at(0));
  return it->second;
}

}  // namespace skydb::testing
