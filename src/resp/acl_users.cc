// The server's ACL users: the map every connection reads, the changes that go through the
// storage and the ACL file, and the ACL LOG.
#include "resp/acl_users.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/strings.h"
#include "resp/command_table.h"

namespace skydb::resp {
namespace {

constexpr UnixMillis kLogMergeWindowMs = 60'000;

std::shared_ptr<const AclUser> Entry(const acl::User& user) {
  auto entry = std::make_shared<AclUser>();
  entry->user = user;
  const auto& specs = AllCommands();
  for (size_t i = 0; i < specs.size() && i < kAclCommandSlots; ++i) {
    entry->commands[i] = user.commands.count(specs[i].name) > 0;
  }
  for (const auto& k : user.keys) {
    std::string_view prefix = std::string_view(k.glob).substr(0, k.glob.size() - 1);
    bool prefix_only = !k.glob.empty() && k.glob.back() == '*' &&
                       prefix.find_first_of("*?[\\") == std::string_view::npos;
    entry->keys.push_back({k.glob, prefix_only, k.read, k.write});
  }
  static const size_t kAllCommands = acl::CommandsIn("all")->size();
  entry->all_commands = user.commands.size() == kAllCommands;
  entry->all_keys = std::any_of(user.keys.begin(), user.keys.end(), [](const acl::KeyPattern& k) {
    return k.glob == "*" && k.read && k.write;
  });
  bool all_channels =
      std::find(user.channels.begin(), user.channels.end(), "*") != user.channels.end();
  entry->full_access = entry->all_commands && entry->all_keys && all_channels;
  return entry;
}

// Splits a stored rules text (or an ACL file line) at spaces.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  for (auto& word : Split(text, ' ')) {
    if (!word.empty()) words.push_back(std::move(word));
  }
  return words;
}

}  // namespace

bool AclKeyRule::Matches(std::string_view key) const {
  if (prefix_only) return key.starts_with(std::string_view(glob).substr(0, glob.size() - 1));
  return GlobMatch(glob, key);
}

bool AclLog::Add(AclLogEntry entry, UnixMillis now) {
  MutexLock lock(mu_);
  for (auto& e : entries_) {
    if (now - e.updated_ms > kLogMergeWindowMs) break;
    if (e.reason == entry.reason && e.context == entry.context && e.object == entry.object &&
        e.username == entry.username) {
      ++e.count;
      e.updated_ms = now;
      e.client_info = std::move(entry.client_info);
      return false;
    }
  }
  entry.count = 1;
  entry.created_ms = entry.updated_ms = now;
  entry.entry_id = next_id_++;
  entries_.push_front(std::move(entry));
  if (entries_.size() > kMaxEntries) entries_.pop_back();
  return true;
}

std::vector<AclLogEntry> AclLog::Newest(size_t count) const {
  MutexLock lock(mu_);
  count = std::min(count, entries_.size());
  return {entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(count)};
}

void AclLog::Reset() {
  MutexLock lock(mu_);
  entries_.clear();
}

std::string RulesOf(const acl::User& user) {
  std::string line = acl::Describe(user);
  return line.substr(std::string_view("user ").size() + user.name.size() + 1);
}

Result<acl::User> UserFromRules(const std::string& name, const std::string& rules) {
  return acl::ApplyRules(acl::NewUser(name), Words(rules));
}

std::optional<std::string> UserNameProblem(std::string_view name) {
  if (name.empty()) return "Usernames can't be empty";
  for (char c : name) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return "Usernames can't contain spaces or null characters";
    }
  }
  return std::nullopt;
}

std::optional<std::string> RuleProblem(std::string_view rule) {
  for (char c : rule) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return "Error in ACL SETUSER modifier '" + std::string(rule.substr(0, 128)) +
             "': skydb keeps rules in a file and in the database, which cannot hold spaces or "
             "control characters in one";
    }
  }
  return std::nullopt;
}

AclService::AclService(Options options) : options_(std::move(options)) {
  MutexLock lock(mu_);
  users_.emplace("default", Entry(DefaultUser()));
}

AclService::~AclService() { Stop(); }

acl::User AclService::DefaultUser() const {
  std::vector<std::string> rules{"on", "~*", "&*", "+@all"};
  rules.push_back(options_.requirepass.empty() ? "nopass" : ">" + options_.requirepass);
  return *acl::ApplyRules(acl::NewUser("default"), rules);
}

Status AclService::Start() {
  if (options_.storage != nullptr) {
    // A database that cannot answer yet does not stop the start: the default user serves, and
    // the thread reads the others as soon as it can.
    Poll();
  }
  if (has_file()) {
    SKYDB_ASSIGN_OR_RETURN(auto users, ReadFile());
    for (const auto& user : users) {
      if (user.name != "default" && options_.storage != nullptr) {
        std::vector<std::string> rules = Words(RulesOf(user));
        rules.insert(rules.begin(), "reset");
        Status stored = StoreUser(user.name, rules);
        if (!stored.ok()) {
          return std::move(stored).error().Within("cannot store the ACL file's user '" + user.name +
                                                  "'");
        }
      } else {
        Put(user);
      }
    }
    if (!users.empty()) spdlog::info("acl: {} user(s) from {}", users.size(), options_.file);
  }
  if (options_.storage != nullptr) thread_ = std::thread([this] { Run(); });
  return Ok();
}

void AclService::Stop() {
  {
    MutexLock lock(jobs_mu_);
    stopping_ = true;
  }
  jobs_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const AclUser> AclService::Find(std::string_view name) const {
  MutexLock lock(mu_);
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const AclUser>> AclService::All() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<const AclUser>> all;
  for (const auto& [name, user] : users_) all.push_back(user);
  return all;
}

void AclService::Put(const acl::User& user) {
  MutexLock lock(mu_);
  users_[user.name] = Entry(user);
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

void AclService::ReplaceStored(const std::vector<acl::User>& users) {
  MutexLock lock(mu_);
  UserMap next;
  next.emplace("default", users_.at("default"));
  for (const auto& user : users) {
    if (user.name != "default") next[user.name] = Entry(user);
  }
  bool same =
      next.size() == users_.size() &&
      std::equal(next.begin(), next.end(), users_.begin(), [](auto& a, auto& b) {
        return a.first == b.first && acl::Describe(a.second->user) == acl::Describe(b.second->user);
      });
  if (same) return;
  users_ = std::move(next);
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

Status AclService::StoreUser(const std::string& name, const std::vector<std::string>& rules) {
  acl::User updated;
  SKYDB_RETURN_IF_ERROR(options_.storage->Update(
      name, [&](const std::optional<std::string>& stored) -> Result<std::optional<std::string>> {
        acl::User base = acl::NewUser(name);
        if (stored) {
          SKYDB_ASSIGN_OR_RETURN(base, UserFromRules(name, *stored));
        }
        SKYDB_ASSIGN_OR_RETURN(updated, acl::ApplyRules(std::move(base), rules));
        return std::optional<std::string>(RulesOf(updated));
      }));
  Put(updated);
  return Ok();
}

void AclService::SetUser(std::string name, std::vector<std::string> rules, Done done) {
  if (name == "default" || options_.storage == nullptr) {
    auto current = Find(name);
    auto updated = acl::ApplyRules(current ? current->user : acl::NewUser(name), rules);
    if (!updated.ok()) return done(std::move(updated).error());
    Put(*updated);
    return done(Ok());
  }
  Submit([this, name = std::move(name), rules = std::move(rules), done = std::move(done)] {
    Status stored = StoreUser(name, rules);
    done(stored.ok() ? stored
                     : Error::Unavailable("the change was not stored: " + stored.error().message));
  });
}

void AclService::DelUsers(std::vector<std::string> names,
                          std::function<void(Result<int64_t>)> done) {
  auto job = [this, names = std::move(names), done = std::move(done)] {
    int64_t deleted = 0;
    for (const auto& name : names) {
      if (options_.storage != nullptr) {
        bool existed = false;
        Status s = options_.storage->Update(
            name,
            [&](const std::optional<std::string>& rules) -> Result<std::optional<std::string>> {
              existed = rules.has_value();
              return std::optional<std::string>();
            });
        if (!s.ok()) {
          return done(Error::Unavailable("the change was not stored: " + s.error().message));
        }
      }
      MutexLock lock(mu_);
      if (users_.erase(name) > 0) {
        ++deleted;
        generation_.fetch_add(1, std::memory_order_acq_rel);
      }
    }
    done(deleted);
  };
  if (options_.storage == nullptr) return job();
  Submit(std::move(job));
}

Result<std::vector<acl::User>> AclService::ReadFile() const {
  auto text = options_.files->ReadFile(options_.file);
  if (!text.ok()) {
    if (text.error().code == ErrorCode::kNotFound) return std::vector<acl::User>{};
    return Error::Unavailable("cannot read the ACL file " + options_.file + ": " +
                              text.error().message);
  }
  std::vector<acl::User> users;
  auto lines = Split(*text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    auto words = Words(Trim(lines[i]));
    if (words.empty()) continue;
    auto at = [&](const std::string& why) {
      return Error::InvalidArgument(options_.file + ":" + std::to_string(i + 1) + ": " + why +
                                    "; fix the line, or ACL SAVE to write the file again");
    };
    if (words[0] != "user" || words.size() < 2) {
      return at("a line must read 'user NAME rules...'");
    }
    if (auto problem = UserNameProblem(words[1])) return at(*problem);
    auto found = std::find_if(users.begin(), users.end(),
                              [&](const acl::User& u) { return u.name == words[1]; });
    if (found != users.end()) return at("user '" + words[1] + "' is named twice");
    auto user = acl::ApplyRules(acl::NewUser(words[1]),
                                std::vector<std::string>(words.begin() + 2, words.end()));
    if (!user.ok()) return at(user.error().message);
    users.push_back(std::move(user).value());
  }
  return users;
}

void AclService::LoadFile(Done done) {
  auto job = [this, done = std::move(done)] {
    auto users = ReadFile();
    if (!users.ok()) return done(std::move(users).error());
    if (options_.storage != nullptr) {
      std::vector<AclStorage::Row> rows;
      for (const auto& user : *users) {
        if (user.name != "default") rows.push_back({user.name, RulesOf(user)});
      }
      Status s = options_.storage->ReplaceAll(rows);
      if (!s.ok())
        return done(Error::Unavailable("the users were not stored: " + s.error().message));
    }
    ReplaceStored(*users);
    auto from_file = std::find_if(users->begin(), users->end(),
                                  [](const acl::User& u) { return u.name == "default"; });
    Put(from_file != users->end() ? *from_file : DefaultUser());
    done(Ok());
  };
  if (options_.storage == nullptr) return job();
  Submit(std::move(job));
}

void AclService::SaveFile(Done done) {
  std::string text;
  for (const auto& user : All()) text += acl::Describe(user->user) + "\n";
  Status written = options_.files->WriteFileAtomic(options_.file, text, 0600);
  done(written.ok() ? written
                    : Error::Unavailable("cannot write the ACL file " + options_.file + ": " +
                                         written.error().message));
}

void AclService::Submit(std::function<void()> job) {
  {
    MutexLock lock(jobs_mu_);
    if (!stopping_) {
      jobs_.push_back(std::move(job));
      lock.Unlock();
      jobs_cv_.NotifyOne();
      return;
    }
  }
  job();  // the service's thread has stopped: the caller's thread answers
}

void AclService::Run() {
  MutexLock lock(jobs_mu_);
  while (!stopping_) {
    // A quiet `poll` with no change to make: read the other daemons' changes.
    bool quiet = jobs_.empty() && !jobs_cv_.WaitFor(jobs_mu_, options_.poll) && jobs_.empty();
    if (stopping_) break;
    if (!jobs_.empty()) {
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.Unlock();
      job();
      lock.Lock();
      continue;
    }
    if (!quiet) continue;
    lock.Unlock();
    Poll();
    lock.Lock();
  }
}

void AclService::Poll() {
  auto generation = options_.storage->Generation();
  if (generation.ok() && seen_generation_ == *generation) {
    poll_failing_ = false;
    return;
  }
  Result<std::vector<AclStorage::Row>> rows =
      generation.ok() ? options_.storage->Load()
                      : Result<std::vector<AclStorage::Row>>(std::move(generation).error());
  if (!rows.ok()) {
    if (!poll_failing_) {
      spdlog::warn(
          "acl: cannot read the users from the database ({}); keeping those known, "
          "retrying every {} ms",
          rows.error().message, options_.poll.count());
    }
    poll_failing_ = true;
    return;
  }
  if (poll_failing_) spdlog::info("acl: the users are read from the database again");
  poll_failing_ = false;
  std::vector<acl::User> users;
  for (const auto& row : *rows) {
    auto user = UserFromRules(row.name, row.rules);
    if (user.ok()) {
      users.push_back(std::move(user).value());
    } else if (!seen_generation_) {  // once per start, not at every reload
      spdlog::warn("acl: stored user '{}' is skipped: {}", row.name, user.error().message);
    }
  }
  ReplaceStored(users);
  seen_generation_ = *generation;
}

}  // namespace skydb::resp
