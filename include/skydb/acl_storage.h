// Where the session store's ACL users live beyond one server: rows that every daemon on the
// same database reads (schema/acl_rows.h keeps them in PostgreSQL). A row is a user's name and
// its rules as ACL LIST writes them after "user NAME " ("on #<sha256> ~app1:* ... +@all").
//
// Thread-safety: one caller at a time (the server's ACL thread). Calls block.
// Failure: every call returns the database's error; nothing is changed by a failed Update.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "skydb/result.h"

namespace skydb {

class AclStorage {
 public:
  struct Row {
    std::string name;
    std::string rules;
  };
  // Given a row's rules (nullopt: no such row), its new rules (nullopt: delete it), or an error
  // that cancels the change.
  using Edit =
      std::function<Result<std::optional<std::string>>(const std::optional<std::string>& rules)>;

  virtual ~AclStorage() = default;
  // Runs `edit` on row `name` while holding it (no other daemon changes it meanwhile) and
  // stores what it returns.
  virtual Status Update(const std::string& name, const Edit& edit) = 0;
  // Every row becomes `rows`, in one transaction.
  virtual Status ReplaceAll(const std::vector<Row>& rows) = 0;
  virtual Result<std::vector<Row>> Load() = 0;
  // A number that changes with every change of the rows (cheap: polled several times a second).
  virtual Result<int64_t> Generation() = 0;
};

}  // namespace skydb
